package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/sink"
)

// Config is the header's "config": the settings a run's clients and topics ran with, which
// the checker judges the history by (docs/history.md). Verity states every setting of every
// process and topic; a setting a hand-made header leaves out takes Kafka's default, and the
// results name it as assumed.
//
// Reading is strict (UnmarshalJSON): a key this type does not have, at any level, is an error
// naming it, since a misspelled setting would otherwise be judged silently at Kafka's default.
type Config struct {
	// Scenario is the scenario's name, copied to the results.
	Scenario string `json:"scenario,omitempty"`
	// Client is the Kafka client every client process of the run used.
	Client *ClientInfo `json:"client,omitempty"`
	// Kafka is the release the cluster ran and the feature levels it had finalized when the
	// workloads began.
	Kafka *KafkaInfo `json:"kafka,omitempty"`
	// Producer holds the settings of every producer process that Processes does not list.
	Producer *kafkaconf.ProducerConfig `json:"producer,omitempty"`
	// Processes holds each producer process's settings, by the history's process number; a
	// setting given here replaces Producer's.
	Processes map[int]kafkaconf.ProducerConfig `json:"processes,omitempty"`
	// Topic holds the settings of every topic that Topics does not list.
	Topic *kafkaconf.TopicConfig `json:"topic,omitempty"`
	// Topics holds each topic's settings by name; a setting given here replaces Topic's.
	Topics map[string]kafkaconf.TopicConfig `json:"topics,omitempty"`
	// Isolation is the isolation level of reads whose payload names none (read-process-write
	// inputs); default read_committed.
	Isolation kafkaconf.Isolation `json:"isolation,omitempty"`
	// Faults lists the faults the run's schedule contained. It says what was planned; the
	// checker counts only the faults the history's nemesis events show took effect.
	Faults []string `json:"faults,omitempty"`
	// Controllers are the node ids of the KRaft voters; the checker judges metadata-lost by how
	// many of them a power or disk loss hit.
	Controllers []int `json:"controllers,omitempty"`
	// Sinks are the run's sinks by name: how each applied its input outside Kafka. The
	// checker judges effect-duplicate and effect-missing by their mode.
	Sinks map[string]SinkInfo `json:"sinks,omitempty"`
	// Deviations are the broker settings that depart from Kafka 4.3's defaults
	// ("replica.lag.time.max.ms=10000"), copied to the results.
	Deviations []string `json:"deviations,omitempty"`
	// Liveness holds the bounds on progress the scenario stated (docs/liveness.md); without
	// it the run's liveness is reported, never judged against a bound.
	Liveness *LivenessBounds `json:"liveness,omitempty"`
	// Share is the share group the run's share consumers joined, with the lock duration and
	// delivery limit it ran with (docs/share-groups.md); nil when the run had none.
	Share *ShareConfig `json:"share,omitempty"`
	// Spec is the scenario as it ran and Workloads the workloads as they were resolved: for a
	// reader of the history; the checker does not judge by them.
	Spec      json.RawMessage `json:"spec,omitempty"`
	Workloads json.RawMessage `json:"workloads,omitempty"`
}

// LivenessBounds are the bounds on progress a scenario states: how soon after each heal every
// client the fault touched progresses again, and the longest any client may go without progress
// while work is available to it. Nil: not stated.
type LivenessBounds struct {
	RecoverWithinMS *int64 `json:"recover_within_ms,omitempty"`
	MaxStallMS      *int64 `json:"max_stall_ms,omitempty"`
}

// Stated reports whether b states any bound.
func (b *LivenessBounds) Stated() bool {
	return b != nil && (b.RecoverWithinMS != nil || b.MaxStallMS != nil)
}

// String names the stated bounds as the checker's findings do: "max_stall 25s, recover_within
// 10s"; empty when none is stated.
func (b *LivenessBounds) String() string {
	if b == nil {
		return ""
	}
	var parts []string
	if b.MaxStallMS != nil {
		parts = append(parts, "max_stall "+(time.Duration(*b.MaxStallMS)*time.Millisecond).String())
	}
	if b.RecoverWithinMS != nil {
		parts = append(parts, "recover_within "+(time.Duration(*b.RecoverWithinMS)*time.Millisecond).String())
	}
	return strings.Join(parts, ", ")
}

// SinkInfo is one sink: its mode, the topic it consumes, its consumer group and the history
// processes of its instances.
type SinkInfo struct {
	Mode      sink.Mode `json:"mode"`
	Topic     string    `json:"topic"`
	Group     string    `json:"group,omitempty"`
	Processes []int     `json:"processes,omitempty"`
	// Outbox is the topic the sink's relay publishes to (mode outbox), Relay the relay's
	// process.
	Outbox string `json:"outbox,omitempty"`
	Relay  *int   `json:"relay,omitempty"`
}

// SinkDownstream reports whether sink name consumes another sink's outbox topic.
func (c Config) SinkDownstream(name string) bool {
	t := c.Sinks[name].Topic
	for _, o := range c.Sinks {
		if o.Outbox != "" && o.Outbox == t {
			return true
		}
	}
	return false
}

// ClientInfo is the Kafka client a history's ops were made with: its name (one of
// kafkaconf.Clients for a Verity run; whatever another tool calls its client), its module and
// the version linked into the binary that ran, and the transaction protocol its transactional
// producers spoke with the cluster (absent when the run had none).
type ClientInfo struct {
	Name        kafkaconf.ClientName  `json:"name"`
	Module      string                `json:"module,omitempty"`
	Version     string                `json:"version,omitempty"`
	TxnProtocol kafkaconf.TxnProtocol `json:"txn_protocol,omitempty"`
	// GroupProtocol is the consumer group protocol the run's group members spoke; absent when
	// the run had none.
	GroupProtocol kafkaconf.GroupProtocol `json:"group_protocol,omitempty"`
}

// UnmarshalJSON reads a client entry, taking any name that is not empty. The name only says
// which client a verdict is about: the checker judges by the settings the header states, so
// a history another tool wrote may name a client Verity does not drive (kafkaconf.ClientName's
// own UnmarshalText, for scenarios, refuses those). Its other members are read strictly.
func (ci *ClientInfo) UnmarshalJSON(b []byte) error {
	type plain ClientInfo // ClientInfo's fields without this method
	var aux struct {
		plain
		Name string `json:"name"` // shadows plain's, which only takes the clients Verity drives
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&aux); err != nil {
		return err
	}
	if strings.TrimSpace(aux.Name) == "" {
		return errors.New(`no "name": name the client library the history's ops were made with`)
	}
	*ci = ClientInfo(aux.plain)
	ci.Name = kafkaconf.ClientName(aux.Name)
	return nil
}

// KafkaInfo is the Kafka release a run's cluster ran and its finalized feature levels (every
// feature the cluster finalized, by name).
type KafkaInfo struct {
	Version  kafkaconf.KafkaVersion  `json:"version"`
	Features kafkaconf.FeatureLevels `json:"features,omitempty"`
}

// ReadIsolation is the isolation of reads whose payload names none.
func (c Config) ReadIsolation() kafkaconf.Isolation {
	if c.Isolation == "" {
		return kafkaconf.ReadCommitted
	}
	return c.Isolation
}

// ProducerOf returns what the header says of process p's producer: its entry over the
// defaults in Producer.
func (c Config) ProducerOf(p int) kafkaconf.ProducerConfig {
	var base kafkaconf.ProducerConfig
	if c.Producer != nil {
		base = *c.Producer
	}
	if e, ok := c.Processes[p]; ok {
		return e.Over(base)
	}
	return base
}

// TopicOf returns what the header says of topic name: its entry over the defaults in Topic.
func (c Config) TopicOf(name string) kafkaconf.TopicConfig {
	var base kafkaconf.TopicConfig
	if c.Topic != nil {
		base = *c.Topic
	}
	if e, ok := c.Topics[name]; ok {
		return e.Over(base)
	}
	return base
}

// Clone returns a copy of c that shares no maps or slices with it.
func (c Config) Clone() Config {
	if c.Producer != nil {
		p := *c.Producer
		c.Producer = &p
	}
	if c.Topic != nil {
		t := *c.Topic
		c.Topic = &t
	}
	if c.Client != nil {
		ci := *c.Client
		c.Client = &ci
	}
	if c.Kafka != nil {
		k := *c.Kafka
		k.Features = maps.Clone(k.Features)
		c.Kafka = &k
	}
	c.Processes = maps.Clone(c.Processes)
	c.Topics = maps.Clone(c.Topics)
	if c.Sinks != nil {
		sinks := make(map[string]SinkInfo, len(c.Sinks))
		for k, v := range c.Sinks {
			v.Processes = slices.Clone(v.Processes)
			sinks[k] = v
		}
		c.Sinks = sinks
	}
	if c.Liveness != nil {
		l := *c.Liveness
		c.Liveness = &l
	}
	if c.Share != nil {
		sh := *c.Share
		sh.Topics = slices.Clone(sh.Topics)
		c.Share = &sh
	}
	c.Faults = slices.Clone(c.Faults)
	c.Deviations = slices.Clone(c.Deviations)
	c.Spec = slices.Clone(c.Spec)
	c.Workloads = slices.Clone(c.Workloads)
	return c
}

// ConfigError is a header config the checker cannot read fully: Key is the path of the
// offending key ("topics[\"orders\"].min_isr").
type ConfigError struct {
	Key string
	Err error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("header config: %s: %v", e.Key, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// ParseConfig reads a header's "config". Empty input or null is the zero Config.
func ParseConfig(raw json.RawMessage) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return c, nil
	}
	err := json.Unmarshal(raw, &c)
	return c, err
}

// UnmarshalJSON reads a config strictly: every key must be one of Config's, every producer
// and topic entry may hold only the settings of kafkaconf.ProducerConfig and TopicConfig (a
// producer's "idempotent" is read as "idempotence", as early headers spelled it), and every
// value must parse. An error names the key.
func (c *Config) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return &ConfigError{Key: "config", Err: errors.New("not a JSON object")}
	}
	known := jsonFields(reflect.TypeFor[Config]())
	var out Config
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		v := fields[k]
		var err error
		switch k {
		case "producer":
			out.Producer = new(kafkaconf.ProducerConfig)
			err = decodeProducer(k, v, out.Producer)
		case "processes":
			out.Processes, err = decodeEntries(k, v, "process numbers to producer settings", func(p string) (int, error) {
				n, err := strconv.Atoi(p)
				if err != nil || n < 0 {
					return 0, errors.New("not a process number")
				}
				return n, nil
			}, decodeProducer)
		case "topic":
			out.Topic = new(kafkaconf.TopicConfig)
			err = decodeStrict(k, v, out.Topic)
		case "client":
			out.Client = new(ClientInfo)
			err = decodeStrict(k, v, out.Client)
		case "kafka":
			out.Kafka = new(KafkaInfo)
			err = decodeStrict(k, v, out.Kafka)
		case "topics":
			out.Topics, err = decodeEntries(k, v, "topic names to topic settings",
				func(name string) (string, error) { return name, nil }, decodeStrict[kafkaconf.TopicConfig])
		default:
			f, ok := known[k]
			if !ok {
				return &ConfigError{Key: k, Err: fmt.Errorf("not a setting Verity writes (known: %s)", strings.Join(slices.Sorted(maps.Keys(known)), ", "))}
			}
			err = decodeInto(k, v, reflect.ValueOf(&out).Elem().FieldByIndex(f).Addr().Interface())
		}
		if err != nil {
			return err
		}
	}
	*c = out
	return nil
}

// decodeEntries decodes v, an object of entries (what it maps, for the error), under key: each
// name through name, each entry through entry, errors naming the entry.
func decodeEntries[K comparable, V any](key string, v json.RawMessage, what string, name func(string) (K, error),
	entry func(key string, v json.RawMessage, dst *V) error) (map[K]V, error) {
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(v, &entries); err != nil {
		return nil, &ConfigError{Key: key, Err: errors.New("want an object of " + what)}
	}
	out := make(map[K]V, len(entries))
	for _, n := range slices.Sorted(maps.Keys(entries)) {
		at := fmt.Sprintf("%s[%q]", key, n)
		k, err := name(n)
		if err != nil {
			return nil, &ConfigError{Key: at, Err: err}
		}
		var e V
		if err := entry(at, entries[n], &e); err != nil {
			return nil, err
		}
		out[k] = e
	}
	return out, nil
}

// jsonFields maps the JSON names of struct type t's fields to their index.
func jsonFields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = f.Index
		}
	}
	return out
}

// decodeStrict decodes v into dst, refusing keys dst does not have; errors name key.
func decodeStrict[T any](key string, v json.RawMessage, dst *T) error { return decodeInto(key, v, dst) }

func decodeInto(key string, v json.RawMessage, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return &ConfigError{Key: key, Err: cleanJSONError(err)}
	}
	return nil
}

// decodeProducer is decodeStrict for a producer entry, which early headers wrote with
// "idempotent" for "idempotence".
func decodeProducer(key string, v json.RawMessage, dst *kafkaconf.ProducerConfig) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(v, &fields); err != nil {
		return &ConfigError{Key: key, Err: errors.New("want an object of producer settings")}
	}
	if old, ok := fields["idempotent"]; ok {
		if _, both := fields["idempotence"]; both {
			return &ConfigError{Key: key + ".idempotent", Err: errors.New(`given beside "idempotence"`)}
		}
		fields["idempotence"] = old
		delete(fields, "idempotent")
		b, err := json.Marshal(fields)
		if err != nil {
			return &ConfigError{Key: key, Err: err}
		}
		v = b
	}
	return decodeStrict(key, v, dst)
}

// cleanJSONError turns encoding/json's unknown-field error into one that names the key alone.
func cleanJSONError(err error) error {
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown key %s: not a setting Verity writes", name)
	}
	return err
}
