package scenarios

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/verify"
)

// KnobKind is the type of a knob's value, which decides the flag's type.
type KnobKind int

const (
	KnobText KnobKind = iota
	KnobInt
	KnobBool
	KnobDuration
)

// Knob is a setting a command-line flag forces on every place it occurs: onto a scenario
// (verity run; verity matrix, as an axis when Axis) and, where the checker judges by it, onto a
// history header's config (verity check). The flags of those commands, the matrix's axes and
// the overrides all come from Knobs: a new knob is one row there.
type Knob struct {
	// Name is the flag's and the axis's name ("acks" for --acks).
	Name string
	// Usage is the flag's help; a `WORD` in backquotes names its value.
	Usage string
	Kind  KnobKind
	// Axis: a matrix may vary it (--acks 1,all).
	Axis bool
	// Scenario forces value v onto s (before defaults and validation are applied again).
	Scenario func(s *Scenario, v string) error
	// Header forces v onto a history's config; nil when the checker does not judge by it.
	Header func(c *history.Config, v string) error
}

// Knobs lists every knob, in the order flags and matrix columns show them.
func Knobs() []Knob {
	return slices.Concat([]Knob{
		producerKnob("acks", "acks `ACKS` of every producer (0, 1 or all)", KnobText, func(v string) (kafkaconf.Delivery, error) {
			a, err := kafkaconf.ParseAcks(v)
			return kafkaconf.Delivery{Acks: &a}, err
		}),
		topicKnob("min-isr", "min.insync.replicas `N` of every topic", func(n int) kafkaconf.TopicConfig {
			return kafkaconf.TopicConfig{MinInsyncReplicas: &n}
		}),
		topicKnob("rf", "replication factor `N` of every topic", func(n int) kafkaconf.TopicConfig {
			return kafkaconf.TopicConfig{ReplicationFactor: &n}
		}),
		{Name: "unclean", Usage: "unclean.leader.election.enable on every topic (--unclean=false: off)", Kind: KnobBool, Axis: true,
			Scenario: func(s *Scenario, v string) error {
				b, err := parseBool(v)
				return forceTopics(s, kafkaconf.TopicConfig{UncleanLeaderElection: &b}, err)
			},
			Header: func(c *history.Config, v string) error {
				b, err := parseBool(v)
				return forceHeaderTopics(c, kafkaconf.TopicConfig{UncleanLeaderElection: &b}, err)
			}},
		{Name: "flush", Usage: "flush.messages `N` of every topic: the log is fsynced every N appends (1: every append; default: Kafka's, never per append)",
			Kind: KnobText, Axis: true,
			Scenario: func(s *Scenario, v string) error {
				n, err := parseFlush(v)
				if err != nil {
					return err
				}
				delete(s.Broker, kafkaconf.BrokerFlushMessages)
				for i := range s.Topics {
					t := &s.Topics[i]
					if n == kafkaconf.DefaultFlushMessages {
						delete(t.Config, kafkaconf.TopicFlushMessages)
						continue
					}
					if t.Config == nil {
						t.Config = map[string]string{}
					}
					t.Config[kafkaconf.TopicFlushMessages] = strconv.FormatInt(n, 10)
				}
				return nil
			},
			Header: func(c *history.Config, v string) error {
				n, err := parseFlush(v)
				return forceHeaderTopics(c, kafkaconf.TopicConfig{FlushMessages: &n}, err)
			}},
		producerKnob("idempotence", "enable.idempotence on every producer (--idempotence=false: off)", KnobBool, func(v string) (kafkaconf.Delivery, error) {
			b, err := parseBool(v)
			return kafkaconf.Delivery{Idempotence: &b}, err
		}),
		{Name: "isolation", Usage: "isolation `LEVEL` of every consumer (read_committed or read_uncommitted)",
			Kind: KnobText, Axis: true,
			Scenario: func(s *Scenario, v string) error {
				iso, err := kafkaconf.ParseIsolation(v)
				if err != nil {
					return err
				}
				s.Client.Isolation = iso
				cs := &s.Workload.Consumers
				if iso == kafkaconf.ReadCommitted {
					cs.ReadCommitted, cs.ReadUncommitted = cs.ReadCommitted+cs.ReadUncommitted, 0
				} else {
					cs.ReadCommitted, cs.ReadUncommitted = 0, cs.ReadCommitted+cs.ReadUncommitted
				}
				return nil
			}},
		{Name: "client", Usage: "the Kafka `CLIENT` every workload drives (" + strings.Join(kafkaconf.ClientNames(), " or ") +
			"), at a module version after @ if not the linked one (sarama@v1.61.0: a driver built for it on demand)",
			Kind: KnobText, Axis: true,
			Scenario: func(s *Scenario, v string) error {
				n, version, err := kafkaconf.ParseClientRef(v)
				s.Client.Name, s.Client.Version = n, version
				return err
			}},
		{Name: "client-cmd", Usage: "run the client as the program `COMMAND` (words split at spaces) over the remote client protocol; " +
			"it names --client in its hello",
			Kind: KnobText,
			Scenario: func(s *Scenario, v string) error {
				s.Client.Command = strings.Fields(v)
				if len(s.Client.Command) == 0 {
					return errors.New("an empty command")
				}
				return nil
			}},
		{Name: "txn-protocol", Usage: "cap the transaction `PROTOCOL` of the transactional clients (v1: before KIP-890; v2)",
			Kind: KnobText, Axis: true,
			Scenario: func(s *Scenario, v string) error {
				p, err := kafkaconf.ParseTxnProtocol(v)
				s.Client.TxnProtocol = p
				return err
			}},
		{Name: "group-protocol", Usage: "the consumer group `PROTOCOL` of the group members (classic; consumer: KIP-848, Kafka 4.0+)",
			Kind: KnobText, Axis: true,
			Scenario: func(s *Scenario, v string) error {
				p, err := kafkaconf.ParseGroupProtocol(v)
				s.Client.GroupProtocol = p
				return err
			}},
		{Name: "kafka-version", Usage: "the Kafka `RELEASE` the cluster runs (" + strings.Join(kafkaconf.KafkaVersions(), ", ") + ")",
			Kind: KnobText, Axis: true,
			Scenario: func(s *Scenario, v string) error {
				r, err := kafkaconf.ParseKafkaVersion(v)
				s.Kafka.Version = r
				return err
			}},
		{Name: "broker-log", Usage: "set the broker `LOGGERS`' levels on every node (kafka.server.share=DEBUG, comma-separated), " +
			"for investigating a finding with the node logs",
			Kind: KnobText,
			Scenario: func(s *Scenario, v string) error {
				ls, err := kafkaconf.ParseLoggers(v)
				if err != nil {
					return err
				}
				s.Kafka.Loggers = maps.Clone(s.Kafka.Loggers)
				if s.Kafka.Loggers == nil {
					s.Kafka.Loggers = kafkaconf.Loggers{}
				}
				maps.Copy(s.Kafka.Loggers, ls)
				return nil
			}},
		{Name: "verification", Usage: "transaction.partition.verification.enable on every broker (KIP-890 part 1; --verification=false: off)",
			Kind: KnobBool, Axis: true,
			Scenario: func(s *Scenario, v string) error {
				b, err := parseBool(v)
				if s.Broker == nil {
					s.Broker = map[string]string{}
				}
				s.Broker[kafkaconf.BrokerTxnVerification] = strconv.FormatBool(b)
				return err
			}},
	}, featureKnobs(), []Knob{
		{Name: "sink", Usage: "the `MODE` of every sink (" + sinkModeNames() + ") but an outbox's downstream consumers; service faults follow its store",
			Kind: KnobText, Axis: true,
			Scenario: func(s *Scenario, v string) error {
				m, err := sink.Parse(v)
				if err != nil {
					return err
				}
				if len(s.Workload.Sinks) == 0 {
					return fmt.Errorf("the scenario has no sink (workload.sinks); the sink-* built-ins have one")
				}
				// A sink that consumes another's outbox topic is that pattern's downstream
				// consumer: it keeps its mode.
				in, _ := m.Info()
				var downstream []bool
				for i := range s.Workload.Sinks {
					downstream = append(downstream, s.Workload.Downstream(i))
				}
				for i := range s.Workload.Sinks {
					if downstream[i] {
						continue
					}
					s.Workload.Sinks[i].Mode = m
					if !in.Relays {
						s.Workload.Sinks[i].Outbox = ""
					}
				}
				aimServiceFaults(s, m)
				return nil
			},
			Header: func(c *history.Config, v string) error {
				m, err := sink.Parse(v)
				if err != nil {
					return err
				}
				if len(c.Sinks) == 0 {
					return fmt.Errorf("the history has no sink (its header lists none)")
				}
				in, _ := m.Info()
				for name, si := range c.Sinks {
					if c.SinkDownstream(name) {
						continue
					}
					if in.Relays && si.Outbox == "" {
						return fmt.Errorf("sink %s published to no outbox topic: its history cannot be judged as mode %s", name, m)
					}
					si.Mode = m
					c.Sinks[name] = si
				}
				return nil
			}},
		{Name: "nodes", Usage: "number of brokers `N` (a matrix starts a cluster for each)", Kind: KnobInt, Axis: true,
			Scenario: func(s *Scenario, v string) error {
				n, err := parseInt(v, 1, 50, "brokers")
				s.Topology.Nodes = n
				return err
			}},
		{Name: "seed", Usage: "seed `N` of every random choice (default: the scenario's)", Kind: KnobInt,
			Scenario: func(s *Scenario, v string) error {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return fmt.Errorf("%q: want a whole number", v)
				}
				s.Seed = n
				return nil
			}},
		{Name: "duration", Usage: "how long the workloads run, e.g. `60s` (default: the scenario's)", Kind: KnobDuration,
			Scenario: func(s *Scenario, v string) error {
				d, err := kafkaconf.ParseDuration(v)
				if err == nil && (d <= 0 || d.Std() > 24*time.Hour) {
					err = fmt.Errorf("%s: want a positive duration up to 24h, such as 60s", d)
				}
				s.Duration = d
				return err
			}},
		{Name: "fault", Usage: "fault `NAME` from 'verity list' instead of the scenario's schedule, aimed at the leader of the first " +
			"topic's partition 0, injected a third into the run and healed a third later", Kind: KnobText, Axis: true,
			Scenario: func(s *Scenario, v string) error {
				f, err := Preset(FaultName(strings.TrimSpace(v)), s.Topics[0].Name)
				if err != nil {
					return err
				}
				s.Faults = SingleFault(f, s.Duration)
				return nil
			}},
		livenessKnob("max-stall", "state the liveness bound max_stall `DUR`: the longest any client may go without progress while "+
			"work is available to it (0: none)", func(l *LivenessExpect) *Duration { return &l.MaxStall },
			func(b *history.LivenessBounds) **int64 { return &b.MaxStallMS }),
		livenessKnob("recover-within", "state the liveness bound recover_within `DUR`: how soon after each heal every client the "+
			"fault touched progresses again (0: none)", func(l *LivenessExpect) *Duration { return &l.RecoverWithin },
			func(b *history.LivenessBounds) **int64 { return &b.RecoverWithinMS }),
	})
}

// livenessKnob is a knob of a liveness bound: it states the bound in the scenario's
// expect.liveness, and in a header's config.liveness, which the checker judges. 0 removes it;
// with no bound left the expectation goes, since what breaks_without says is about a bound.
func livenessKnob(name, usage string, field func(*LivenessExpect) *Duration, header func(*history.LivenessBounds) **int64) Knob {
	return Knob{Name: name, Usage: usage, Kind: KnobDuration, Axis: true,
		Scenario: func(s *Scenario, v string) error {
			d, err := parseBound(v)
			if err != nil {
				return err
			}
			if s.Expect.Liveness == nil {
				s.Expect.Liveness = &LivenessExpect{}
			}
			*field(s.Expect.Liveness) = d
			if s.Expect.Liveness.Bounds() == nil {
				s.Expect.Liveness = nil
			}
			return nil
		},
		Header: func(c *history.Config, v string) error {
			d, err := parseBound(v)
			if err != nil {
				return err
			}
			// A fresh value: the config may share its bounds with the history it came from.
			var b history.LivenessBounds
			if c.Liveness != nil {
				b = *c.Liveness
			}
			*header(&b) = nil
			if d > 0 {
				*header(&b) = new(d.Std().Milliseconds())
			}
			c.Liveness = &b
			if !b.Stated() {
				c.Liveness = nil
			}
			return nil
		}}
}

// parseBound reads a liveness bound: 0, or more than the shortest stall the checker counts.
func parseBound(v string) (Duration, error) {
	d, err := kafkaconf.ParseDuration(v)
	switch {
	case err != nil:
		return 0, err
	case d < 0 || (d > 0 && d.Std() <= verify.MinStall):
		return 0, fmt.Errorf("%s: want more than %s, the shortest stretch without progress the checker counts as a stall (0: no bound)", d, verify.MinStall)
	}
	return d, nil
}

// featureKnobs are one knob per settable feature (kafkaconf.SettableFeatures): its level, set
// once the cluster is ready.
func featureKnobs() []Knob {
	var out []Knob
	for _, f := range kafkaconf.SettableFeatures() {
		out = append(out, Knob{Name: f.Flag, Usage: "bring the cluster to " + string(f.Name) + " `LEVEL` before the workloads start",
			Kind: KnobInt, Axis: true,
			Scenario: func(s *Scenario, v string) error {
				lvl, err := kafkaconf.ParseFeatureLevel(v)
				if s.Kafka.Features == nil {
					s.Kafka.Features = kafkaconf.FeatureLevels{}
				}
				s.Kafka.Features[f.Name] = lvl
				return err
			}})
	}
	return out
}

// LookupKnob returns the knob called name.
func LookupKnob(name string) (Knob, bool) {
	for _, k := range Knobs() {
		if k.Name == name {
			return k, true
		}
	}
	return Knob{}, false
}

// producerKnob is a knob of a producer delivery setting: it forces the setting on the client and
// every producer group, and on every non-transactional producer of a header (Kafka forces
// acks=all and idempotence on a transactional producer).
func producerKnob(name, usage string, kind KnobKind, parse func(string) (kafkaconf.Delivery, error)) Knob {
	return Knob{Name: name, Usage: usage, Kind: kind, Axis: true,
		Scenario: func(s *Scenario, v string) error {
			d, err := parse(v)
			if err != nil {
				return err
			}
			s.Client.Delivery = d.Over(s.Client.Delivery)
			for i := range s.Workload.Producers {
				g := &s.Workload.Producers[i]
				g.Delivery = d.Over(g.Delivery)
			}
			return nil
		},
		Header: func(c *history.Config, v string) error {
			d, err := parse(v)
			if err != nil {
				return err
			}
			force := func(pc kafkaconf.ProducerConfig) kafkaconf.ProducerConfig {
				if pc.Transactional != nil && *pc.Transactional {
					return pc
				}
				pc.Delivery = d.Over(pc.Delivery)
				return pc
			}
			var base kafkaconf.ProducerConfig
			if c.Producer != nil {
				base = *c.Producer
			}
			p := force(base)
			c.Producer = &p
			for n, pc := range c.Processes {
				c.Processes[n] = force(pc)
			}
			return nil
		}}
}

// topicKnob is a knob of a topic setting given as a number of replicas (1 or more): it forces
// the setting on every topic.
func topicKnob(name, usage string, set func(int) kafkaconf.TopicConfig) Knob {
	return Knob{Name: name, Usage: usage, Kind: KnobInt, Axis: true,
		Scenario: func(s *Scenario, v string) error {
			n, err := parseInt(v, 1, 0, "replica(s)")
			return forceTopics(s, set(n), err)
		},
		Header: func(c *history.Config, v string) error {
			n, err := parseInt(v, 1, 0, "replica(s)")
			return forceHeaderTopics(c, set(n), err)
		}}
}

// forceTopics lays tc over every topic of s.
func forceTopics(s *Scenario, tc kafkaconf.TopicConfig, err error) error {
	if err != nil {
		return err
	}
	for i := range s.Topics {
		t := &s.Topics[i]
		if tc.ReplicationFactor != nil {
			t.ReplicationFactor = *tc.ReplicationFactor
		}
		if tc.MinInsyncReplicas != nil {
			t.MinInsyncReplicas = *tc.MinInsyncReplicas
		}
		if tc.UncleanLeaderElection != nil {
			t.UncleanLeaderElection = *tc.UncleanLeaderElection
		}
	}
	return nil
}

// forceHeaderTopics lays tc over the topic defaults and every topic entry of c.
func forceHeaderTopics(c *history.Config, tc kafkaconf.TopicConfig, err error) error {
	if err != nil {
		return err
	}
	var base kafkaconf.TopicConfig
	if c.Topic != nil {
		base = *c.Topic
	}
	t := tc.Over(base)
	c.Topic = &t
	for name, e := range c.Topics {
		c.Topics[name] = tc.Over(e)
	}
	return nil
}

// parseFlush reads the flush knob: "default" (Kafka's) or a count of appends.
func parseFlush(v string) (int64, error) {
	if strings.TrimSpace(v) == "default" {
		return kafkaconf.DefaultFlushMessages, nil
	}
	n, err := kafkaconf.ParseFlushMessages(v)
	if err != nil {
		return 0, fmt.Errorf("%w, or default", err)
	}
	return n, nil
}

func parseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fmt.Errorf("%q: want true or false", v)
	}
	return b, nil
}

func parseInt(v string, lo, hi int, what string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q: want a whole number", v)
	case n < lo || (hi > 0 && n > hi):
		if hi <= 0 {
			return n, fmt.Errorf("%d: want at least %d %s", n, lo, what)
		}
		return n, fmt.Errorf("%d: want %d to %d %s", n, lo, hi, what)
	}
	return n, nil
}

// Setting is a knob given a value on the command line.
type Setting struct {
	Knob  Knob
	Value string
}

// String writes the setting as its flag: --acks=1.
func (s Setting) String() string { return "--" + s.Knob.Name + "=" + s.Value }

// Flags writes settings as flags.
func Flags(set []Setting) []string {
	out := make([]string, len(set))
	for i, s := range set {
		out[i] = s.String()
	}
	return out
}

// Override returns s with the settings forced on, in order, then defaults and validation
// applied again. A bad value is an error naming its flag; a combination the scenario cannot run
// (--rf 1 on a topic with min ISR 2) is an *OverrideError naming the flags and the field they
// broke.
func (s Resolved) Override(set []Setting) (Resolved, error) {
	sc := s.Clone()
	var es Errors
	// In the table's order whatever the order given, so that the fault's step follows the
	// duration given beside it.
	order := map[string]int{}
	for i, k := range Knobs() {
		order[k.Name] = i
	}
	set = slices.Clone(set)
	slices.SortStableFunc(set, func(a, b Setting) int { return cmp.Compare(order[a.Knob.Name], order[b.Knob.Name]) })
	for _, st := range set {
		if st.Knob.Scenario == nil {
			es = append(es, &FieldError{Path: "--" + st.Knob.Name, Msg: "does not apply to a scenario"})
			continue
		}
		if err := st.Knob.Scenario(&sc, st.Value); err != nil {
			es = append(es, &FieldError{Path: "--" + st.Knob.Name, Msg: err.Error()})
		}
	}
	if len(es) > 0 {
		return Resolved{}, es
	}
	r, err := sc.Resolve()
	if err != nil {
		var fes Errors
		if errors.As(err, &fes) {
			return Resolved{}, &OverrideError{Scenario: s.Name, Flags: Flags(set), Errs: fes}
		}
		return Resolved{}, err
	}
	return r, nil
}

// OverrideHeader forces the settings onto a copy of a history's config, for judging a saved
// history as if it had run with them. A knob the checker does not judge by is an error.
func OverrideHeader(c history.Config, set []Setting) (history.Config, error) {
	c = c.Clone()
	for _, st := range set {
		if st.Knob.Header == nil {
			return c, fmt.Errorf("--%s: not a setting the checker judges by", st.Knob.Name)
		}
		if err := st.Knob.Header(&c, st.Value); err != nil {
			return c, fmt.Errorf("--%s: %w", st.Knob.Name, err)
		}
	}
	return c, nil
}

// OverrideError is a scenario that the given flags made invalid.
type OverrideError struct {
	Scenario string
	Flags    []string
	Errs     Errors
}

func (e *OverrideError) Error() string {
	return fmt.Sprintf("scenario %s with %s: %v", e.Scenario, strings.Join(e.Flags, " "), e.Errs)
}

// Unwrap gives the Errors, for errors.As.
func (e *OverrideError) Unwrap() error { return e.Errs }

func sinkModeNames() string {
	var names []string
	for _, in := range sink.Modes() {
		names = append(names, string(in.Mode))
	}
	return strings.Join(names, ", ")
}

// aimServiceFaults points the schedule's service faults at the store of mode m. A service-kill
// of the ledger would lose its in-memory entries, which no sink can survive: such steps are
// dropped when the store becomes the ledger.
func aimServiceFaults(s *Scenario, m sink.Mode) {
	service := serviceOf(m)
	aim := func(f *Fault) bool { // false: drop the fault
		spec, _ := LookupFault(f.Name)
		if spec.Kind != KindService {
			return true
		}
		f.Params.Service = service
		return !(f.Name == FaultServiceKill && service == ServiceLedger)
	}
	s.Faults.Timeline = slices.DeleteFunc(s.Faults.Timeline, func(st Step) bool { return !aim(&st.Fault) })
	for i := range s.Faults.Timeline {
		aim(&s.Faults.Timeline[i].Fault)
	}
	if p := s.Faults.Periodic; p != nil {
		p.Set = slices.DeleteFunc(p.Set, func(f Fault) bool { return !aim(&f) })
		for i := range p.Set {
			aim(&p.Set[i])
		}
	}
}
