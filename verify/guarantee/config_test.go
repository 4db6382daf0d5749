package guarantee

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	raw := json.RawMessage(`{
		"scenario": "lab-isr-below-min",
		"producer": {"acks": "all", "idempotent": true, "max_in_flight": 5, "retries": 10},
		"processes": {"3": {"acks": 1}},
		"topic": {"replication_factor": 3, "min_insync_replicas": 2},
		"topics": {"loose": {"min_insync_replicas": 1}},
		"isolation": "read_uncommitted",
		"faults": ["kill", "wipe_disk"],
		"deviations": ["replica.lag.time.max.ms=10000"],
		"workload": {"mix": "anything else is ignored"}
	}`)
	c, warnings, err := Decode(raw)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("Decode: %v %v", err, warnings)
	}
	if c.Scenario != "lab-isr-below-min" || c.ReadIsolation() != ReadUncommitted || len(c.Deviations) != 1 {
		t.Errorf("decoded %+v", c)
	}
	if p := c.ProducerFor(1, false); p.Acks != AcksAll || !p.Idempotent || p.Retries != 10 || len(p.Assumed) != 0 {
		t.Errorf("process 1: %+v", p)
	}
	if p := c.ProducerFor(3, false); p.Acks != 1 || p.Idempotent || p.Retries != 10 {
		t.Errorf("process 3 keeps its own acks: %+v", p)
	}
	if tp := c.TopicFor("loose"); tp.MinISR != 1 || tp.RF != 3 {
		t.Errorf("topic override: %+v", tp)
	}
	if f := c.FaultsOf(); !f.DiskLoss() || !slices.Contains(f.Kinds, FaultDiskLoss) {
		t.Errorf("faults: %+v", f)
	}
}

func TestDecodeTolerantOfOtherShapes(t *testing.T) {
	c, warnings, err := Decode(json.RawMessage(`{"topic": "verity", "producer": {"acks": "most"}, "scenario": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], `"producer"`) || !strings.Contains(warnings[1], `"topic"`) {
		t.Errorf("warnings: %q", warnings)
	}
	if c.Scenario != "x" {
		t.Errorf("the readable fields are kept: %+v", c)
	}
	if _, _, err := Decode(json.RawMessage(`[1,2]`)); err == nil {
		t.Error("a config that is not an object must be an error")
	}
	if c, w, err := Decode(nil); err != nil || len(w) > 0 || c.Scenario != "" {
		t.Errorf("an empty config: %+v %v %v", c, w, err)
	}
}

func TestDefaults(t *testing.T) {
	var c Config
	s := c.ProducerFor(1, false)
	if s.Acks != AcksAll || !s.Idempotent || s.MaxInFlight != 5 || len(s.Assumed) == 0 {
		t.Errorf("Kafka 4.3 producer defaults: %+v", s)
	}
	if tp := c.TopicFor("t"); tp.RF != 1 || tp.MinISR != 1 || tp.Unclean || len(tp.Assumed) != 3 {
		t.Errorf("Kafka 4.3 topic defaults: %+v", tp)
	}
	if s := c.ProducerFor(1, true); !s.Transactional || !s.Idempotent || s.Conflict != "" {
		t.Errorf("a transactional producer: %+v", s)
	}
	c.Producer.MaxInFlight = p(6)
	if s := c.ProducerFor(1, false); s.Idempotent {
		t.Errorf("in-flight 6 turns default idempotence off: %+v", s)
	}
}

func TestApplyOverridesEveryLevel(t *testing.T) {
	c := Config{
		Producer:  Producer{Acks: p(AcksAll)},
		Processes: map[string]Producer{"2": {Acks: p(AcksAll)}},
		Topic:     Topic{MinInsyncReplicas: p(2)},
		Topics:    map[string]Topic{"x": {MinInsyncReplicas: p(3)}},
	}
	one, minISR, iso := Acks(1), 1, ReadUncommitted
	o := c.Apply(Overrides{Acks: &one, MinISR: &minISR, Isolation: &iso})
	if o.ProducerFor(2, false).Acks != 1 || o.ProducerFor(9, false).Acks != 1 {
		t.Error("acks override must reach every process")
	}
	if o.TopicFor("x").MinISR != 1 || o.TopicFor("y").MinISR != 1 {
		t.Error("min ISR override must reach every topic")
	}
	if *c.Processes["2"].Acks != AcksAll {
		t.Error("Apply changed the original config")
	}
	if got := (Overrides{Acks: &one, MinISR: &minISR}).Strings(); !slices.Equal(got, []string{"acks=1", "min.insync.replicas=1"}) {
		t.Errorf("Strings: %q", got)
	}
}

func TestAcksJSON(t *testing.T) {
	for in, want := range map[string]Acks{`"all"`: AcksAll, `-1`: AcksAll, `"-1"`: AcksAll, `1`: 1, `"0"`: 0} {
		var a Acks
		if err := json.Unmarshal([]byte(in), &a); err != nil || a != want {
			t.Errorf("%s: %v %v", in, a, err)
		}
	}
	var a Acks
	if err := json.Unmarshal([]byte(`"2"`), &a); err == nil {
		t.Error("acks 2 must be rejected")
	}
	if b, _ := json.Marshal(AcksAll); string(b) != `"all"` {
		t.Errorf("marshal: %s", b)
	}
}

func TestFaultKind(t *testing.T) {
	for in, want := range map[string]string{"wipe": FaultDiskLoss, "Disk_Loss": FaultDiskLoss, "unclean_election": FaultUncleanElection, "kill": "kill"} {
		if got := FaultKind(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
