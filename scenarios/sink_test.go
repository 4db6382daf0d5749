package scenarios

import (
	"strings"
	"testing"

	"github.com/verity-kafka/verity/sink"
)

// --sink switches every sink's mode and aims the service faults at the new mode's store.
func TestSinkKnob(t *testing.T) {
	knob, ok := LookupKnob("sink")
	if !ok {
		t.Fatal("no --sink knob")
	}
	s, err := Builtin("sink-naive")
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Override([]Setting{{Knob: knob, Value: "http-keyed"}})
	if err != nil {
		t.Fatalf("--sink=http-keyed on sink-naive: %v", err)
	}
	if m := got.Workload.Sinks[0].Mode; m != sink.HTTPKeyed {
		t.Errorf("mode %s", m)
	}
	for _, st := range got.Faults.Timeline {
		if st.Name == FaultServiceKill {
			t.Errorf("a service-kill of the ledger stayed in the schedule: %+v", st)
		}
		if st.Name == FaultSinkCut && st.Params.Service != ServiceLedger {
			t.Errorf("sink-cut still aimed at %q", st.Params.Service)
		}
	}
	if _, err := got.Override([]Setting{{Knob: knob, Value: "unique-key"}}); err != nil {
		t.Errorf("back to a PostgreSQL mode: %v", err)
	}
	d, _ := Default().Resolve()
	if _, err := d.Override([]Setting{{Knob: knob, Value: "naive"}}); err == nil || !strings.Contains(err.Error(), "no sink") {
		t.Errorf("--sink on a scenario without a sink: %v", err)
	}
	if _, err := r.Override([]Setting{{Knob: knob, Value: "outboxes"}}); err == nil || !strings.Contains(err.Error(), "want one of") {
		t.Errorf("--sink=outboxes: %v", err)
	}

	// --sink=outbox gives the sink an outbox topic like the one it consumes; back to naive
	// takes it away again.
	ob, err := r.Override([]Setting{{Knob: knob, Value: "outbox"}})
	if err != nil {
		t.Fatalf("--sink=outbox on sink-naive: %v", err)
	}
	sk := ob.Workload.Sinks[0]
	if sk.Mode != sink.Outbox || sk.Outbox != "sink-outbox" || ob.Topics[len(ob.Topics)-1].Name != "sink-outbox" ||
		ob.Topics[len(ob.Topics)-1].Partitions != ob.Topics[0].Partitions {
		t.Errorf("--sink=outbox: sink %+v, topics %+v", sk, ob.Topics)
	}
	back, err := ob.Override([]Setting{{Knob: knob, Value: "naive"}})
	if err != nil || back.Workload.Sinks[0].Outbox != "" {
		t.Errorf("outbox back to naive: %+v, %v", back.Workload.Sinks, err)
	}

	// The outbox built-in's downstream sink keeps its mode.
	s, _ = Builtin("sink-outbox")
	r, err = s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	got, err = r.Override([]Setting{{Knob: knob, Value: "naive"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Workload.Sinks[0].Mode != sink.Naive || got.Workload.Sinks[1].Mode != sink.UniqueKey {
		t.Errorf("--sink=naive on sink-outbox: %+v", got.Workload.Sinks)
	}
}

func TestOutboxValidation(t *testing.T) {
	s, _ := Builtin("sink-naive")
	s.Workload.Sinks[0].Outbox = "events"
	if _, err := s.Resolve(); err == nil || !strings.Contains(err.Error(), "workload.sinks[0].outbox") {
		t.Errorf("an outbox topic on a naive sink: %v", err)
	}
	s.Workload.Sinks[0].Mode = sink.Outbox
	s.Workload.Sinks[0].Outbox = s.Workload.Sinks[0].Topic
	if _, err := s.Resolve(); err == nil || !strings.Contains(err.Error(), "its own output") {
		t.Errorf("an outbox topic that is the input: %v", err)
	}
}
