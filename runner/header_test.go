package runner

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/scenarios"
)

// The header a scenario's run writes, read back by the checker's parser, states every setting
// the run's producers and topics use: nothing assumed, nothing unreadable, and the scenario's
// (and its flags') settings where they are not sarama's limits.
func TestHeaderStatesTheRunsSettings(t *testing.T) {
	type want struct {
		acks          kafkaconf.Acks
		idempotent    bool
		inFlight      int
		appResend     bool
		retries       int
		rf, minISR    int
		unclean       bool
		faults        []string
		transactional []int // processes that must be transactional
		processAcks   map[int]kafkaconf.Acks
	}
	cases := []struct {
		scenario string
		flags    []string
		want     want
	}{
		// Idempotent producers keep one request in flight (sarama), retries sarama's 3.
		{"default", nil, want{acks: kafkaconf.AcksAll, idempotent: true, inFlight: 1, retries: 3, rf: 3, minISR: 2, faults: []string{"kill"}}},
		{"acks1-leader-loss", nil, want{acks: kafkaconf.AcksLeader, inFlight: 5, retries: 3, rf: 3, minISR: 2, faults: []string{"kill", "latency"}}},
		{"unclean-isolation", nil, want{acks: kafkaconf.AcksAll, idempotent: true, inFlight: 1, retries: 3, rf: 3, minISR: 1, unclean: true,
			faults: []string{"isolate", "one-way-cut"}}},
		{"minisr1-disk-loss", nil, want{acks: kafkaconf.AcksAll, idempotent: true, inFlight: 1, retries: 3, rf: 3, minISR: 1,
			faults: []string{"disk-loss", "stop"}}},
		{"plain-inflight1-order", nil, want{acks: kafkaconf.AcksAll, inFlight: 1, retries: 3, rf: 3, minISR: 2, faults: []string{"reset-peer"}}},
		{"app-resend", nil, want{acks: kafkaconf.AcksAll, idempotent: true, inFlight: 1, appResend: true, retries: 1, rf: 3, minISR: 2,
			faults: []string{"ack-loss"}}},
		// Producers 0-1 plain, 2 transactional, 3-4 processors.
		{"eos-coordinator-kill", nil, want{acks: kafkaconf.AcksAll, idempotent: true, inFlight: 1, retries: 3, rf: 3, minISR: 2,
			faults: []string{"kill"}, transactional: []int{2, 3, 4}}},
		// Producers 0-2 at the client's acks=all, 3 with its own acks=1.
		{"lab-isr-below-min", nil, want{acks: kafkaconf.AcksAll, idempotent: true, inFlight: 1, retries: 3, rf: 3, minISR: 2,
			faults: []string{"stop"}, processAcks: map[int]kafkaconf.Acks{0: kafkaconf.AcksAll, 3: kafkaconf.AcksLeader}}},
		{"default", []string{"acks=0", "rf=1", "min-isr=1", "unclean=true", "isolation=read_uncommitted"},
			want{acks: kafkaconf.AcksNone, inFlight: 5, retries: 3, rf: 1, minISR: 1, unclean: true, faults: []string{"kill"}}},
	}
	for _, c := range cases {
		t.Run(c.scenario+" "+strings.Join(c.flags, " "), func(t *testing.T) {
			s := override(t, builtin(t, c.scenario), c.flags...)
			h, err := Header(s)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := history.ParseConfig(raw)
			if err != nil {
				t.Fatalf("the checker cannot read the header: %v", err)
			}
			if cfg.Scenario != s.Name || cfg.ReadIsolation() != kafkaconf.ReadCommitted || !slices.Equal(cfg.Faults, c.want.faults) {
				t.Errorf("scenario %q, isolation %q, faults %v", cfg.Scenario, cfg.ReadIsolation(), cfg.Faults)
			}
			w := c.want
			p := kafkaconf.ResolveProducer(cfg.ProducerOf(0), kafkaconf.JavaClient())
			if p.Acks != w.acks || p.Idempotent != w.idempotent || p.MaxInFlight != w.inFlight || p.AppResend != w.appResend ||
				p.Retries != w.retries || p.Conflict != "" || len(p.Assumed) != 0 {
				t.Errorf("process 0: %+v, want acks %s idempotent %t in-flight %d retries %d app-resend %t, nothing assumed",
					p, w.acks, w.idempotent, w.inFlight, w.retries, w.appResend)
			}
			for _, topic := range s.Topics {
				tp := kafkaconf.ResolveTopic(cfg.TopicOf(topic.Name))
				if tp.RF != w.rf || tp.MinISR != w.minISR || tp.Unclean != w.unclean || tp.Conflict != "" || len(tp.Assumed) != 0 {
					t.Errorf("topic %s: %+v, want RF %d min ISR %d unclean %t", topic.Name, tp, w.rf, w.minISR, w.unclean)
				}
			}
			for _, n := range w.transactional {
				if ps := kafkaconf.ResolveProducer(cfg.ProducerOf(n), kafkaconf.JavaClient()); !ps.Transactional || !ps.Idempotent ||
					ps.Acks != kafkaconf.AcksAll || len(ps.Assumed) != 0 {
					t.Errorf("process %d: %+v, want transactional, nothing assumed", n, ps)
				}
			}
			for n, a := range w.processAcks {
				if ps := kafkaconf.ResolveProducer(cfg.ProducerOf(n), kafkaconf.JavaClient()); ps.Acks != a || ps.Conflict != "" ||
					(a != kafkaconf.AcksAll && ps.Idempotent) {
					t.Errorf("process %d: %+v, want acks %s", n, ps, a)
				}
			}
			var spec scenarios.Scenario
			if err := json.Unmarshal(cfg.Spec, &spec); err != nil || spec.Name != s.Name {
				t.Errorf("spec %q: %v", spec.Name, err)
			}
		})
	}
}

// Broker settings that differ from Kafka's defaults are deviations in the header, beside the
// harness's own; those that restate a default are not.
func TestHeaderDeviations(t *testing.T) {
	s := builtin(t, "default")
	s.Broker = map[string]string{"replica.lag.time.max.ms": "10000", "min.insync.replicas": "1", "log.segment.bytes": "1048576"}
	h, err := Header(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"log.segment.bytes=1048576", "replica.lag.time.max.ms=10000", "group.initial.rebalance.delay.ms=0"} {
		if !slices.Contains(h.Deviations, want) {
			t.Errorf("deviations %v lack %s", h.Deviations, want)
		}
	}
	if slices.ContainsFunc(h.Deviations, func(d string) bool { return strings.HasPrefix(d, "min.insync.replicas") }) {
		t.Errorf("deviations %v list a setting at Kafka's default", h.Deviations)
	}
}

// override forces flags (name=value) onto s.
func override(t *testing.T, s scenarios.Resolved, flags ...string) scenarios.Resolved {
	t.Helper()
	var set []scenarios.Setting
	for _, f := range flags {
		name, v, _ := strings.Cut(f, "=")
		k, ok := scenarios.LookupKnob(name)
		if !ok {
			t.Fatalf("no knob %s", name)
		}
		set = append(set, scenarios.Setting{Knob: k, Value: v})
	}
	r, err := s.Override(set)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The scenario's liveness bounds go to the header's config.liveness in milliseconds, read back
// by the checker's parser; a scenario that states none writes none.
func TestHeaderLiveness(t *testing.T) {
	h, err := Header(builtin(t, "unanswering-leader"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	back, err := history.ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if l := back.Liveness; l == nil || l.MaxStallMS == nil || *l.MaxStallMS != 25000 || l.RecoverWithinMS != nil {
		t.Errorf("config.liveness %+v, want max_stall_ms 25000", l)
	}
	h, err = Header(override(t, builtin(t, "default"), "recover-within=12s"))
	if err != nil {
		t.Fatal(err)
	}
	if l := h.Liveness; l == nil || l.RecoverWithinMS == nil || *l.RecoverWithinMS != 12000 || l.MaxStallMS != nil {
		t.Errorf("--recover-within 12s: config.liveness %+v", l)
	}
	if h, _ := Header(builtin(t, "default")); h.Liveness != nil {
		t.Errorf("default states no bound, its header has %+v", h.Liveness)
	}
}
