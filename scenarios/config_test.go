package scenarios

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/verity-kafka/verity/verify/guarantee"
)

// A scenario's header config, decoded by the checker's own decoder, gives the settings the
// scenario states, with nothing assumed and nothing unreadable.
func TestConfigRoundTripsThroughGuaranteeDecode(t *testing.T) {
	type want struct {
		acks          guarantee.Acks
		idempotent    bool
		inFlight      int
		appResend     bool
		retries       int // 0: Kafka's default
		rf, minISR    int
		unclean       bool
		isolation     string
		faults        []string
		transactional []int // processes that must be transactional
		processAcks   map[int]guarantee.Acks
	}
	cases := []struct {
		scenario string
		over     Overrides
		want     want
	}{
		{"default", Overrides{}, want{acks: guarantee.AcksAll, idempotent: true, inFlight: 5, rf: 3, minISR: 2,
			isolation: ReadCommitted, faults: []string{"kill"}}},
		{"acks1-leader-loss", Overrides{}, want{acks: 1, idempotent: false, inFlight: 5, rf: 3, minISR: 2,
			isolation: ReadCommitted, faults: []string{"kill", "latency"}}},
		{"unclean-isolation", Overrides{}, want{acks: guarantee.AcksAll, idempotent: true, inFlight: 5, rf: 3, minISR: 1, unclean: true,
			isolation: ReadCommitted, faults: []string{"isolate", "one-way-cut"}}},
		{"minisr1-disk-loss", Overrides{}, want{acks: guarantee.AcksAll, idempotent: true, inFlight: 5, rf: 3, minISR: 1,
			isolation: ReadCommitted, faults: []string{"disk-loss", "stop"}}},
		{"plain-inflight1-order", Overrides{}, want{acks: guarantee.AcksAll, idempotent: false, inFlight: 1, rf: 3, minISR: 2,
			isolation: ReadCommitted, faults: []string{"reset-peer"}}},
		{"app-resend", Overrides{}, want{acks: guarantee.AcksAll, idempotent: true, inFlight: 5, appResend: true, retries: 1, rf: 3, minISR: 2,
			isolation: ReadCommitted, faults: []string{"ack-loss"}}},
		// Producers 0-1 plain, 2 transactional, 3-4 processors.
		{"eos-coordinator-kill", Overrides{}, want{acks: guarantee.AcksAll, idempotent: true, inFlight: 5, rf: 3, minISR: 2,
			isolation: ReadCommitted, faults: []string{"kill"}, transactional: []int{2, 3, 4}}},
		// Producers 0-2 at the client's acks=all, 3 with its own acks=1.
		{"lab-isr-below-min", Overrides{}, want{acks: guarantee.AcksAll, idempotent: true, inFlight: 5, rf: 3, minISR: 2,
			isolation: ReadCommitted, faults: []string{"stop"}, processAcks: map[int]guarantee.Acks{0: guarantee.AcksAll, 3: 1}}},
		{"lab-abort-invisible", Overrides{}, want{acks: guarantee.AcksAll, idempotent: true, inFlight: 5, rf: 3, minISR: 2,
			isolation: ReadCommitted, transactional: []int{0, 1}}},
		{"default", overrides("0", 1, 1, true, ReadUncommitted), want{acks: 0, idempotent: false, inFlight: 5, rf: 1, minISR: 1, unclean: true,
			isolation: ReadUncommitted, faults: []string{"kill"}}},
	}
	for _, c := range cases {
		t.Run(c.scenario+" "+slicesJoin(c.over.Strings()), func(t *testing.T) {
			s, err := Builtin(c.scenario)
			if err != nil {
				t.Fatal(err)
			}
			if s, err = s.Override(c.over); err != nil {
				t.Fatal(err)
			}
			raw, err := s.Config()
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(raw) {
				t.Fatalf("not JSON: %s", raw)
			}
			cfg, warns, err := guarantee.Decode(raw)
			if err != nil || len(warns) > 0 {
				t.Fatalf("Decode: %v, warnings %v", err, warns)
			}
			if cfg.Scenario != s.Name {
				t.Errorf("scenario %q", cfg.Scenario)
			}
			p := cfg.DefaultProducer(false)
			w := c.want
			if w.retries == 0 {
				w.retries = guarantee.DefaultRetries
			}
			if p.Acks != w.acks || p.Idempotent != w.idempotent || p.MaxInFlight != w.inFlight || p.AppResend != w.appResend ||
				p.Retries != w.retries || p.Conflict != "" || len(p.Assumed) != 0 {
				t.Errorf("producer %+v, want acks %s idempotent %t in-flight %d app-resend %t, nothing assumed",
					p, w.acks, w.idempotent, w.inFlight, w.appResend)
			}
			for _, topic := range s.Topics {
				tp := cfg.TopicFor(topic.Name)
				if tp.RF != w.rf || tp.MinISR != w.minISR || tp.Unclean != w.unclean || tp.Conflict != "" || len(tp.Assumed) != 0 {
					t.Errorf("topic %s: %+v, want RF %d min ISR %d unclean %t", topic.Name, tp, w.rf, w.minISR, w.unclean)
				}
			}
			if cfg.ReadIsolation() != w.isolation {
				t.Errorf("isolation %q, want %q", cfg.ReadIsolation(), w.isolation)
			}
			if !reflect.DeepEqual(cfg.Faults, w.faults) {
				t.Errorf("faults %v, want %v", cfg.Faults, w.faults)
			}
			for _, n := range w.transactional {
				if ps := cfg.ProducerFor(n, false); !ps.Transactional || !ps.Idempotent || ps.Acks != guarantee.AcksAll {
					t.Errorf("process %d: %+v, want transactional", n, ps)
				}
			}
			for n, a := range w.processAcks {
				if ps := cfg.ProducerFor(n, false); ps.Acks != a || ps.Conflict != "" {
					t.Errorf("process %d: acks %s (conflict %q), want %s", n, ps.Acks, ps.Conflict, a)
				}
			}
			if c.scenario == "lab-isr-below-min" && cfg.ProducerFor(3, false).Idempotent {
				t.Error("the acks=1 producer is judged idempotent")
			}
		})
	}
}

func overrides(acks string, rf, minISR int, unclean bool, iso string) Overrides {
	return Overrides{Acks: &acks, RF: &rf, MinISR: &minISR, Unclean: &unclean, Isolation: &iso}
}

func slicesJoin(s []string) string {
	if len(s) == 0 {
		return "as built"
	}
	out := s[0]
	for _, x := range s[1:] {
		out += " " + x
	}
	return out
}

// Broker overrides that differ from Kafka's defaults are deviations; those that restate a
// default are not.
func TestConfigDeviations(t *testing.T) {
	s := Default()
	s.Broker = map[string]string{"replica.lag.time.max.ms": "10000", "min.insync.replicas": "1", "log.segment.bytes": "1048576"}
	raw, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := guarantee.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"log.segment.bytes=1048576", "replica.lag.time.max.ms=10000"}; !slices.Equal(cfg.Deviations, want) {
		t.Errorf("deviations %v, want %v", cfg.Deviations, want)
	}
}

func TestConfigRefusesAnInvalidScenario(t *testing.T) {
	s := Default()
	s.Client.Acks = "2"
	if _, err := s.Config(); err == nil {
		t.Error("Config of an invalid scenario gave no error")
	}
}
