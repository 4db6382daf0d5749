// Package guarantee holds what Kafka 4.3 documents for a configuration: the subset of a run's
// resolved scenario that decides which anomalies a history may show (Config), and one table from
// that configuration to the anomalies it permits or forbids (Rules), each with the reason that
// results.json quotes. It imports nothing of Verity's, so the scenario package, the report and
// the CLI can all read the same table.
package guarantee

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Config is the part of a run's resolved scenario (the history header's "config") that the
// checker needs. Every field is optional: a missing one takes Kafka 4.3's documented default
// (see Producer and Topic), and results.json lists each default it assumed. Unknown fields are
// ignored, so the scenario package may emit the whole scenario.
//
// JSON field names — the scenario package emits these:
//
//	"scenario"   string               the scenario's name, copied to results.json
//	"producer"   Producer             settings of every producer process
//	"processes"  {"<p>": Producer}    per-process overrides, keyed by the history's process number
//	                                  ("3"); a field set here replaces the one in "producer", so a
//	                                  run with an acks=all and an acks=1 producer judges each
//	                                  process's writes by its own settings
//	"topic"      Topic                settings of every topic
//	"topics"     {"<name>": Topic}    per-topic overrides (a run may mix min ISR or RF)
//	"isolation"  string               isolation.level of reads whose payload names none
//	                                  (read-process-write inputs): "read_committed" (default)
//	                                  or "read_uncommitted"
//	"faults"     [string]             fault kinds the run's schedule contained, e.g. "kill",
//	                                  "disk-loss", "unclean-election"; the checker adds those it
//	                                  sees as nemesis events in the history
//	"deviations" [string]             broker settings the harness changed from Kafka's defaults
//	                                  (e.g. "replica.lag.time.max.ms=10000"), copied to results.json
type Config struct {
	Scenario   string              `json:"scenario,omitempty"`
	Producer   Producer            `json:"producer,omitzero"`
	Processes  map[string]Producer `json:"processes,omitempty"`
	Topic      Topic               `json:"topic,omitzero"`
	Topics     map[string]Topic    `json:"topics,omitempty"`
	Isolation  string              `json:"isolation,omitempty"`
	Faults     []string            `json:"faults,omitempty"`
	Deviations []string            `json:"deviations,omitempty"`
}

// Producer is a producer's delivery settings. A nil field is unset.
//
//	"acks"          "0" | "1" | "all" (also 0, 1, -1 as numbers; "-1" = all). Default all.
//	"idempotence"   enable.idempotence. Default true unless a conflicting setting is given
//	                (acks other than all, retries=0, max_in_flight>5), as Kafka does.
//	"max_in_flight" max.in.flight.requests.per.connection. Default 5.
//	"retries"       retries. Default 2147483647.
//	"app_resend"    the application sends the same payload again as a new record after a failed
//	                or unknown send. Default false.
//	"transactional" the producer has a transactional.id (idempotence and acks=all follow).
//	                Default false; a process that writes "txn" or "rpw" ops is transactional.
type Producer struct {
	Acks          *Acks `json:"acks,omitempty"`
	Idempotence   *bool `json:"idempotence,omitempty"`
	MaxInFlight   *int  `json:"max_in_flight,omitempty"`
	Retries       *int  `json:"retries,omitempty"`
	AppResend     *bool `json:"app_resend,omitempty"`
	Transactional *bool `json:"transactional,omitempty"`
}

// Topic is a topic's durability settings. A nil field is unset.
//
//	"replication_factor"      default 1 (Kafka's default.replication.factor)
//	"min_insync_replicas"     default 1
//	"unclean_leader_election" unclean.leader.election.enable, default false
type Topic struct {
	ReplicationFactor     *int  `json:"replication_factor,omitempty"`
	MinInsyncReplicas     *int  `json:"min_insync_replicas,omitempty"`
	UncleanLeaderElection *bool `json:"unclean_leader_election,omitempty"`
}

// Acks is a producer's acks setting: 0, 1 or AcksAll (-1).
type Acks int

// AcksAll is acks=all (also written -1).
const AcksAll Acks = -1

func (a Acks) String() string {
	if a == AcksAll {
		return "all"
	}
	return strconv.Itoa(int(a))
}

// ParseAcks reads "0", "1", "all" or "-1".
func ParseAcks(s string) (Acks, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "0":
		return 0, nil
	case "1":
		return 1, nil
	case "all", "-1":
		return AcksAll, nil
	}
	return 0, fmt.Errorf("acks %q: want 0, 1 or all", s)
}

// MarshalJSON writes acks as the string Kafka's documentation uses ("0", "1", "all").
func (a Acks) MarshalJSON() ([]byte, error) { return json.Marshal(a.String()) }

// UnmarshalJSON accepts a number (0, 1, -1) or a string ("0", "1", "all", "-1").
func (a *Acks) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	v, err := ParseAcks(s)
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// Isolation levels, as history payloads spell them.
const (
	ReadCommitted   = "read_committed"
	ReadUncommitted = "read_uncommitted"
)

// Decode reads the subset of a resolved scenario that the checker needs. An empty or null
// config is the zero Config (every setting at Kafka's default). The header's config is the whole
// scenario, written by tools that may not know this subset, so a known field of another shape
// does not fail the check: it is left at its default and named in the returned warnings. Only
// a config that is not a JSON object is an error.
func Decode(raw json.RawMessage) (Config, []string, error) {
	var c Config
	if len(raw) == 0 || string(raw) == "null" {
		return c, nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Config{}, nil, fmt.Errorf("decoding the history header's config: %w", err)
	}
	targets := map[string]any{
		"scenario":   &c.Scenario,
		"producer":   &c.Producer,
		"processes":  &c.Processes,
		"topic":      &c.Topic,
		"topics":     &c.Topics,
		"isolation":  &c.Isolation,
		"faults":     &c.Faults,
		"deviations": &c.Deviations,
	}
	var warnings []string
	for _, name := range slices.Sorted(maps.Keys(targets)) {
		v, ok := fields[name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(v, targets[name]); err != nil {
			warnings = append(warnings, fmt.Sprintf("config field %q is not what the checker reads (%v): judged with Kafka's defaults instead", name, err))
		}
	}
	return c, warnings, nil
}

// UnmarshalJSON reads a Producer, also accepting "idempotent" for "idempotence".
func (p *Producer) UnmarshalJSON(b []byte) error {
	type plain Producer
	var aux struct {
		plain
		Idempotent *bool `json:"idempotent,omitempty"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*p = Producer(aux.plain)
	if p.Idempotence == nil {
		p.Idempotence = aux.Idempotent
	}
	return nil
}

// Overrides replace settings of a Config for every process and topic (the CLI's flags).
type Overrides struct {
	Acks        *Acks
	Idempotence *bool
	MinISR      *int
	RF          *int
	Unclean     *bool
	Isolation   *string
}

// Apply returns c with o's settings forced on the defaults and on every per-process or per-topic
// override, so that no override in the header can outvote a flag. Forcing acks to 0 or 1 without
// saying anything of idempotence drops the header's enable.idempotence (Kafka then disables it).
func (c Config) Apply(o Overrides) Config {
	c.Processes = maps.Clone(c.Processes)
	c.Topics = maps.Clone(c.Topics)
	setP := func(p *Producer) {
		if o.Acks != nil {
			p.Acks = o.Acks
			// idempotence=true cannot run with acks other than all: a user who forces acks and
			// says nothing of idempotence means Kafka's default for that acks, not a conflict.
			if *o.Acks != AcksAll && o.Idempotence == nil {
				p.Idempotence = nil
			}
		}
		if o.Idempotence != nil {
			p.Idempotence = o.Idempotence
		}
	}
	setT := func(t *Topic) {
		if o.RF != nil {
			t.ReplicationFactor = o.RF
		}
		if o.MinISR != nil {
			t.MinInsyncReplicas = o.MinISR
		}
		if o.Unclean != nil {
			t.UncleanLeaderElection = o.Unclean
		}
	}
	setP(&c.Producer)
	for k, p := range c.Processes {
		setP(&p)
		c.Processes[k] = p
	}
	setT(&c.Topic)
	for k, t := range c.Topics {
		setT(&t)
		c.Topics[k] = t
	}
	if o.Isolation != nil {
		c.Isolation = *o.Isolation
	}
	return c
}

// ProducerSettings are one producer's effective settings: Config's values with Kafka's defaults
// filled in.
type ProducerSettings struct {
	Acks          Acks
	Idempotent    bool
	MaxInFlight   int
	Retries       int
	AppResend     bool
	Transactional bool
	// Conflict is set when the settings cannot run as given (e.g. idempotence with acks=1,
	// which Kafka refuses to start): no documented guarantee covers them.
	Conflict string
	// Assumed lists the settings that took Kafka's default because the config did not say.
	Assumed []string
}

// TopicSettings are one topic's effective settings.
type TopicSettings struct {
	RF      int
	MinISR  int
	Unclean bool
	// Conflict is set when the settings are not ones the table covers (e.g. min ISR > RF).
	Conflict string
	Assumed  []string
}

// Kafka 4.3 defaults (shared/design/guarantees.md, "Defaults of Kafka 4.3 that matter here").
const (
	DefaultMaxInFlight = 5
	DefaultRetries     = 2147483647
	DefaultRF          = 1
	DefaultMinISR      = 1
)

// ProducerFor returns the effective settings of client process p. transactional says whether
// the history shows p writing transactions (which implies a transactional.id).
func (c Config) ProducerFor(p int, transactional bool) ProducerSettings {
	merged := c.Producer
	if o, ok := c.Processes[strconv.Itoa(p)]; ok {
		if o.Acks != nil {
			merged.Acks = o.Acks
			// An acks=1 process beside idempotent ones means a producer without idempotence
			// (which cannot run with acks other than all), not a conflict.
			if *o.Acks != AcksAll && o.Idempotence == nil {
				merged.Idempotence = nil
			}
		}
		if o.Idempotence != nil {
			merged.Idempotence = o.Idempotence
		}
		if o.MaxInFlight != nil {
			merged.MaxInFlight = o.MaxInFlight
		}
		if o.Retries != nil {
			merged.Retries = o.Retries
		}
		if o.AppResend != nil {
			merged.AppResend = o.AppResend
		}
		if o.Transactional != nil {
			merged.Transactional = o.Transactional
		}
	}
	return merged.resolve(transactional)
}

// DefaultProducer returns the effective settings of a producer process without overrides.
func (c Config) DefaultProducer(transactional bool) ProducerSettings {
	return c.Producer.resolve(transactional)
}

func (p Producer) resolve(transactional bool) ProducerSettings {
	s := ProducerSettings{Acks: AcksAll, MaxInFlight: DefaultMaxInFlight, Retries: DefaultRetries}
	if p.Transactional != nil {
		s.Transactional = *p.Transactional
	}
	s.Transactional = s.Transactional || transactional
	if p.Acks != nil {
		s.Acks = *p.Acks
	} else if !s.Transactional {
		s.Assumed = append(s.Assumed, "acks=all")
	}
	if p.MaxInFlight != nil {
		s.MaxInFlight = *p.MaxInFlight
	} else {
		s.Assumed = append(s.Assumed, "max.in.flight.requests.per.connection=5")
	}
	if p.Retries != nil {
		s.Retries = *p.Retries
	} else {
		s.Assumed = append(s.Assumed, "retries=2147483647")
	}
	if p.AppResend != nil {
		s.AppResend = *p.AppResend
	}
	switch {
	case s.Acks != AcksAll && s.Acks != 0 && s.Acks != 1:
		s.Conflict = fmt.Sprintf("acks=%d is not 0, 1 or all", int(s.Acks))
	case s.MaxInFlight < 1:
		s.Conflict = fmt.Sprintf("max.in.flight.requests.per.connection=%d is below 1", s.MaxInFlight)
	case s.Retries < 0:
		s.Conflict = fmt.Sprintf("retries=%d is negative", s.Retries)
	}
	// Kafka enables idempotence by default only when nothing conflicts with it; an explicit
	// enable.idempotence=true with a conflict makes the producer refuse to start.
	compatible := s.Acks == AcksAll && s.Retries > 0 && s.MaxInFlight <= 5
	switch {
	case s.Transactional:
		s.Idempotent = true
		if !compatible && s.Conflict == "" {
			s.Conflict = fmt.Sprintf("a transactional producer needs acks=all, retries>0 and max.in.flight<=5 (has acks=%s, retries=%d, max.in.flight=%d)", s.Acks, s.Retries, s.MaxInFlight)
		}
		if p.Idempotence != nil && !*p.Idempotence && s.Conflict == "" {
			s.Conflict = "a transactional producer with enable.idempotence=false"
		}
	case p.Idempotence != nil:
		s.Idempotent = *p.Idempotence
		if s.Idempotent && !compatible && s.Conflict == "" {
			s.Conflict = fmt.Sprintf("enable.idempotence=true needs acks=all, retries>0 and max.in.flight<=5 (has acks=%s, retries=%d, max.in.flight=%d)", s.Acks, s.Retries, s.MaxInFlight)
		}
	default:
		s.Idempotent = compatible
		s.Assumed = append(s.Assumed, fmt.Sprintf("enable.idempotence=%t", compatible))
	}
	return s
}

// TopicFor returns the effective settings of topic name.
func (c Config) TopicFor(name string) TopicSettings {
	merged := c.Topic
	if o, ok := c.Topics[name]; ok {
		if o.ReplicationFactor != nil {
			merged.ReplicationFactor = o.ReplicationFactor
		}
		if o.MinInsyncReplicas != nil {
			merged.MinInsyncReplicas = o.MinInsyncReplicas
		}
		if o.UncleanLeaderElection != nil {
			merged.UncleanLeaderElection = o.UncleanLeaderElection
		}
	}
	s := TopicSettings{RF: DefaultRF, MinISR: DefaultMinISR}
	if merged.ReplicationFactor != nil {
		s.RF = *merged.ReplicationFactor
	} else {
		s.Assumed = append(s.Assumed, "replication.factor=1")
	}
	if merged.MinInsyncReplicas != nil {
		s.MinISR = *merged.MinInsyncReplicas
	} else {
		s.Assumed = append(s.Assumed, "min.insync.replicas=1")
	}
	if merged.UncleanLeaderElection != nil {
		s.Unclean = *merged.UncleanLeaderElection
	} else {
		s.Assumed = append(s.Assumed, "unclean.leader.election.enable=false")
	}
	switch {
	case s.RF < 1:
		s.Conflict = fmt.Sprintf("replication factor %d is below 1", s.RF)
	case s.MinISR < 1:
		s.Conflict = fmt.Sprintf("min.insync.replicas=%d is below 1", s.MinISR)
	case s.MinISR > s.RF:
		s.Conflict = fmt.Sprintf("min.insync.replicas=%d exceeds the replication factor %d, so acks=all can never succeed", s.MinISR, s.RF)
	}
	return s
}

// ReadIsolation is the isolation of reads whose payload names none.
func (c Config) ReadIsolation() string {
	if c.Isolation == "" {
		return ReadCommitted
	}
	return c.Isolation
}

// Fault kinds that change what the table permits. Names in Config.Faults and nemesis events
// are normalised by FaultKind.
const (
	FaultDiskLoss        = "disk-loss"
	FaultUncleanElection = "unclean-election"
)

// FaultKind maps the spellings a scenario or nemesis may use onto the kinds the table knows;
// any other name is returned lower-cased as it is.
func FaultKind(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.ReplaceAll(n, "_", "-")
	switch n {
	case "disk-loss", "wipe", "wipe-disk", "wipe-data", "lose-disk", "disk-wipe", "lose-data":
		return FaultDiskLoss
	case "unclean-election", "unclean-leader-election", "unclean":
		return FaultUncleanElection
	}
	return n
}

// Faults is what the run did to the cluster, as far as the table cares.
type Faults struct {
	// Kinds are the normalised fault kinds seen (config and history), sorted.
	Kinds []string
	// DiskLossNodes counts distinct nodes whose disk was lost; -1 when a disk loss is known
	// (from the config) but not on how many nodes, which the table treats as one.
	DiskLossNodes   int
	UncleanElection bool
}

// DiskLoss reports whether any disk was lost.
func (f Faults) DiskLoss() bool { return f.DiskLossNodes != 0 }

func (f Faults) diskNodes() int {
	if f.DiskLossNodes < 0 {
		return 1
	}
	return f.DiskLossNodes
}

// FaultsOf returns the faults named in the config; the checker adds what the history shows.
func (c Config) FaultsOf() Faults {
	var f Faults
	kinds := map[string]bool{}
	for _, n := range c.Faults {
		k := FaultKind(n)
		kinds[k] = true
		switch k {
		case FaultDiskLoss:
			if f.DiskLossNodes == 0 {
				f.DiskLossNodes = -1
			}
		case FaultUncleanElection:
			f.UncleanElection = true
		}
	}
	f.Kinds = slices.Sorted(maps.Keys(kinds))
	return f
}

// Strings lists the overrides as settings, for the report.
func (o Overrides) Strings() []string {
	var out []string
	if o.Acks != nil {
		out = append(out, "acks="+o.Acks.String())
	}
	if o.Idempotence != nil {
		out = append(out, "enable.idempotence="+strconv.FormatBool(*o.Idempotence))
	}
	if o.MinISR != nil {
		out = append(out, "min.insync.replicas="+strconv.Itoa(*o.MinISR))
	}
	if o.RF != nil {
		out = append(out, "replication.factor="+strconv.Itoa(*o.RF))
	}
	if o.Unclean != nil {
		out = append(out, "unclean.leader.election.enable="+strconv.FormatBool(*o.Unclean))
	}
	if o.Isolation != nil {
		out = append(out, "isolation.level="+*o.Isolation)
	}
	return out
}
