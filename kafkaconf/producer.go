package kafkaconf

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Kafka 4.3's producer defaults (the Java client's ProducerConfig).
const (
	DefaultAcks            = AcksAll
	DefaultMaxInFlight     = 5 // max.in.flight.requests.per.connection
	DefaultRetries         = math.MaxInt32
	DefaultRequestTimeout  = Duration(30 * time.Second)  // request.timeout.ms
	DefaultDeliveryTimeout = Duration(120 * time.Second) // delivery.timeout.ms
	DefaultLinger          = Duration(5 * time.Millisecond)
	DefaultRetryBackoff    = Duration(100 * time.Millisecond)
	DefaultBatchBytes      = 16384 // batch.size
	DefaultCompression     = CompressionNone
	DefaultTxnTimeout      = Duration(60 * time.Second) // transaction.timeout.ms
	// MaxIdempotentInFlight is the most requests in flight Kafka's idempotent producer allows:
	// the broker keeps the sequence numbers of a producer's last five batches per partition.
	MaxIdempotentInFlight = 5
)

// DefaultConsumerIsolation is Kafka's isolation.level default.
const DefaultConsumerIsolation = ReadUncommitted

// Delivery are the producer settings that decide what a send promises. Nil fields are unset.
// Scenarios, producer groups and flags state them; Over layers them.
type Delivery struct {
	// Acks is acks: 0, 1 or all.
	Acks *Acks `json:"acks,omitempty" yaml:"acks,omitempty"`
	// Idempotence is enable.idempotence; unset, Kafka turns it on unless another setting
	// conflicts with it (acks other than all, retries 0, more than 5 requests in flight).
	Idempotence *bool `json:"idempotence,omitempty" yaml:"idempotence,omitempty"`
	// MaxInFlight is max.in.flight.requests.per.connection.
	MaxInFlight *int `json:"max_in_flight,omitempty" yaml:"max_in_flight,omitempty"`
	// Retries is retries.
	Retries *int `json:"retries,omitempty" yaml:"retries,omitempty"`
}

// Over returns d laid over base: each setting d gives replaces base's. Giving acks other than
// all without saying anything of idempotence drops base's idempotence, so that Kafka's default
// for such acks (off) applies instead of a pair Kafka refuses to start with.
func (d Delivery) Over(base Delivery) Delivery {
	out := Delivery{Acks: over(d.Acks, base.Acks), Idempotence: over(d.Idempotence, base.Idempotence),
		MaxInFlight: over(d.MaxInFlight, base.MaxInFlight), Retries: over(d.Retries, base.Retries)}
	if d.Acks != nil && *d.Acks != AcksAll && d.Idempotence == nil {
		out.Idempotence = nil
	}
	return out
}

// over is top when it is given, else base.
func over[T any](top, base *T) *T {
	if top != nil {
		return top
	}
	return base
}

// IsZero reports whether d sets nothing.
func (d Delivery) IsZero() bool { return d == Delivery{} }

// ProducerConfig is what is known of one producer: its delivery settings and what Verity's
// workloads add (an application that resends, a transactional.id). It is a history header's
// entry for a producer process. Nil fields are unset.
type ProducerConfig struct {
	Delivery
	// AppResend: the application sends a payload again, as a new record, after a failed or
	// unknown send.
	AppResend *bool `json:"app_resend,omitempty"`
	// Transactional: the producer has a transactional.id (acks=all and idempotence follow).
	Transactional *bool `json:"transactional,omitempty"`
}

// Over returns c laid over base, as Delivery.Over does for the delivery settings.
func (c ProducerConfig) Over(base ProducerConfig) ProducerConfig {
	return ProducerConfig{Delivery: c.Delivery.Over(base.Delivery), AppResend: over(c.AppResend, base.AppResend),
		Transactional: over(c.Transactional, base.Transactional)}
}

// Producer is a producer's effective settings, every one decided.
type Producer struct {
	Acks          Acks
	Idempotent    bool
	MaxInFlight   int
	Retries       int
	AppResend     bool
	Transactional bool
}

// Config states every setting of p, so that a reader of the header assumes nothing.
func (p Producer) Config() ProducerConfig {
	c := ProducerConfig{Delivery: Delivery{Acks: new(p.Acks), Idempotence: new(p.Idempotent),
		MaxInFlight: new(p.MaxInFlight), Retries: new(p.Retries)}, AppResend: new(p.AppResend)}
	if p.Transactional {
		c.Transactional = new(true)
	}
	return c
}

// Client is what a Kafka client does with a producer's settings, where that departs from the
// Java client Kafka documents: its defaults and its limits. ResolveProducer applies it after
// Kafka's rules.
type Client struct {
	// Name names the client ("sarama"); Module is its Go module's path.
	Name   ClientName
	Module string
	// Artifact, for a client that runs as a program rather than as Go code linked into Verity,
	// is the library the program runs ("org.apache.kafka:kafka-clients"), and DefaultVersion the
	// version it runs unless a run names one.
	Artifact       string
	DefaultVersion string
	// Doc says in a sentence how the client departs from Kafka's Java client.
	Doc string
	// MaxIdempotentInFlight is the most requests in flight its idempotent producer allows;
	// IdempotentInFlight, when not 0, is how many it always keeps, whatever is asked.
	MaxIdempotentInFlight int
	IdempotentInFlight    int
	// DefaultRetries is what an unset retries means for it.
	DefaultRetries int
	// RetriesNote says why DefaultRetries differs from Kafka's, for the departure note.
	RetriesNote string
	// TxnProtocols are the transaction protocols it can speak, the one it prefers first.
	TxnProtocols []TxnProtocol
	// GroupProtocols are the consumer group protocols its group members can speak, the default
	// first.
	GroupProtocols []GroupProtocol
	// Capabilities are what it can do that a scenario may require.
	Capabilities []Capability
	// RewindNote says how its read-process-write member gets back to the committed offsets
	// after an abort, which is what keeps an aborted step's inputs from being skipped; a
	// verdict's reason quotes it.
	RewindNote string
}

// JavaClient is Kafka's own client: the settings as Kafka documents them.
func JavaClient() Client {
	return Client{Name: "Kafka's Java client", MaxIdempotentInFlight: MaxIdempotentInFlight, DefaultRetries: DefaultRetries,
		TxnProtocols: []TxnProtocol{TxnProtocolV2, TxnProtocolV1}}
}

// Resolved is a producer's effective settings and how they were reached.
type Resolved struct {
	Producer
	// Assumed lists the settings that took a default because nothing gave them
	// ("acks=all"), Kafka's or the client's.
	Assumed []string
	// Conflict says why Kafka refuses to run the settings as given (enable.idempotence=true
	// with acks=1), or "": no documented guarantee covers them.
	Conflict string
	// Departures say where the client runs the producer otherwise than Kafka would (sarama's
	// idempotent producer keeps one request in flight, not five).
	Departures []string
}

// ResolveProducer decides a producer's effective settings: Kafka's defaults for what c leaves
// unset, enable.idempotence's default (on unless acks, retries or max.in.flight conflict with
// it), the conflicts Kafka refuses to start with, and then client's limits. Judging a history,
// where the header states what ran, uses JavaClient.
func ResolveProducer(c ProducerConfig, client Client) Resolved {
	var r Resolved
	p := &r.Producer
	assume := func(s string) { r.Assumed = append(r.Assumed, s) }
	p.Transactional = c.Transactional != nil && *c.Transactional
	if c.AppResend != nil {
		p.AppResend = *c.AppResend
	}
	p.Acks = DefaultAcks
	if c.Acks != nil {
		p.Acks = *c.Acks
	} else if !p.Transactional {
		assume("acks=" + DefaultAcks.String())
	}
	p.MaxInFlight = DefaultMaxInFlight
	if c.MaxInFlight != nil {
		p.MaxInFlight = *c.MaxInFlight
	} else {
		assume("max.in.flight.requests.per.connection=" + strconv.Itoa(DefaultMaxInFlight))
	}
	p.Retries = client.DefaultRetries
	if c.Retries != nil {
		p.Retries = *c.Retries
	} else {
		assume("retries=" + strconv.Itoa(client.DefaultRetries))
	}
	switch {
	case !p.Acks.Valid():
		r.Conflict = fmt.Sprintf("acks=%d is not 0, 1 or all", int(p.Acks))
	case p.MaxInFlight < 1:
		r.Conflict = fmt.Sprintf("max.in.flight.requests.per.connection=%d is below 1", p.MaxInFlight)
	case p.Retries < 0:
		r.Conflict = fmt.Sprintf("retries=%d is negative", p.Retries)
	}
	if why := idempotenceConflict(p.Acks, p.Retries, p.MaxInFlight); p.Transactional {
		p.Idempotent = true
		switch {
		case c.Idempotence != nil && !*c.Idempotence && r.Conflict == "":
			r.Conflict = "a transactional producer with enable.idempotence=false"
		case why != "" && r.Conflict == "":
			r.Conflict = "a transactional producer " + why
		}
	} else if c.Idempotence != nil {
		p.Idempotent = *c.Idempotence
		if p.Idempotent && why != "" && r.Conflict == "" {
			r.Conflict = "enable.idempotence=true " + why
		}
	} else {
		// Kafka turns idempotence on by default only when nothing conflicts with it.
		p.Idempotent = why == ""
		assume("enable.idempotence=" + strconv.FormatBool(p.Idempotent))
	}
	switch {
	case r.Conflict != "" || !p.Idempotent:
	case client.IdempotentInFlight > 0 && p.MaxInFlight != client.IdempotentInFlight:
		r.Departures = append(r.Departures, fmt.Sprintf("idempotent producers run with max.in.flight.requests.per.connection=%d, not %d: %s's idempotent producer always keeps %d",
			client.IdempotentInFlight, p.MaxInFlight, client.Name, client.IdempotentInFlight))
		p.MaxInFlight = client.IdempotentInFlight
	case p.MaxInFlight > client.MaxIdempotentInFlight:
		r.Departures = append(r.Departures, fmt.Sprintf("idempotent producers run with max.in.flight.requests.per.connection=%d, not %d: %s's idempotent producer allows no more",
			client.MaxIdempotentInFlight, p.MaxInFlight, client.Name))
		p.MaxInFlight = client.MaxIdempotentInFlight
	}
	if c.Retries == nil && client.DefaultRetries != DefaultRetries {
		r.Departures = append(r.Departures, fmt.Sprintf("retries unset: %s's default %d, not Kafka's %d%s",
			client.Name, client.DefaultRetries, DefaultRetries, client.RetriesNote))
	}
	return r
}

// idempotenceConflict says why enable.idempotence cannot be on with these settings, or "".
func idempotenceConflict(acks Acks, retries, inFlight int) string {
	switch {
	case acks != AcksAll:
		return fmt.Sprintf("needs acks=all (has acks=%s)", acks)
	case retries <= 0:
		return fmt.Sprintf("needs retries above 0 (has %d)", retries)
	case inFlight > MaxIdempotentInFlight:
		return fmt.Sprintf("needs max.in.flight.requests.per.connection at most %d (has %d)", MaxIdempotentInFlight, inFlight)
	}
	return ""
}
