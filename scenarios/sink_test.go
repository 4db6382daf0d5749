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
	if _, err := r.Override([]Setting{{Knob: knob, Value: "outbox"}}); err == nil || !strings.Contains(err.Error(), "want one of") {
		t.Errorf("--sink=outbox: %v", err)
	}
}
