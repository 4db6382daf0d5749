package runner

import (
	"strings"
	"testing"

	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// What the guarantee table holds of a few built-ins, derived from their settings: the
// durability scenarios forbid loss, the weak ones permit it, and a run with readers of both
// isolation levels gets both judgements of aborted-read.
func TestExpectations(t *testing.T) {
	type want struct {
		a   guarantee.Anomaly
		j   guarantee.Judgement
		has bool
		why string // in the reason of j, when has
	}
	cases := map[string][]want{
		"default": {{guarantee.LostWrite, guarantee.Forbidden, true, "min.insync.replicas=2"}, {guarantee.LostWrite, guarantee.Permitted, false, ""},
			{guarantee.Duplicate, guarantee.Forbidden, true, "enable.idempotence=true"}, {guarantee.Reorder, guarantee.Permitted, false, ""}},
		"acks1-leader-loss": {{guarantee.LostWrite, guarantee.Permitted, true, "acks=1"}, {guarantee.LostWrite, guarantee.Forbidden, false, ""},
			{guarantee.LostObserved, guarantee.Forbidden, true, ""}},
		"minisr1-disk-loss": {{guarantee.LostWrite, guarantee.Permitted, true, "min.insync.replicas=1 with disk loss"}},
		"minisr2-disk-loss": {{guarantee.LostWrite, guarantee.Forbidden, true, "min.insync.replicas=2"}},
		"unclean-isolation": {{guarantee.LostWrite, guarantee.Permitted, true, "unclean.leader.election.enable=true"}},
		"lab-abort-invisible": {{guarantee.AbortedRead, guarantee.Permitted, true, "read_uncommitted"},
			{guarantee.AbortedRead, guarantee.Forbidden, true, "read_committed"}},
		"plain-ack-loss":         {{guarantee.Duplicate, guarantee.Permitted, true, "retries=3"}, {guarantee.Reorder, guarantee.Forbidden, true, "max.in.flight.requests.per.connection=1"}},
		"plain-inflight-reorder": {{guarantee.Reorder, guarantee.Permitted, true, "max.in.flight.requests.per.connection=5"}},
		"app-resend":             {{guarantee.Duplicate, guarantee.Permitted, true, "sent this value again"}},
		"lab-isr-below-min":      {{guarantee.UnexpectedAck, guarantee.Forbidden, true, "NOT_ENOUGH_REPLICAS"}},
	}
	for name, wants := range cases {
		exps, err := Expectations(builtin(t, name))
		if err != nil {
			t.Fatal(err)
		}
		by := map[guarantee.Anomaly]Expected{}
		for _, e := range exps {
			by[e.Anomaly] = e
		}
		if len(by) != len(guarantee.Anomalies()) {
			t.Errorf("%s: %d families, want every one", name, len(by))
		}
		for _, w := range wants {
			e := by[w.a]
			if e.Has(w.j) != w.has || (w.has && !strings.Contains(e.Why[w.j], w.why)) {
				t.Errorf("%s: %s %s: %t (%q), want %t with %q", name, w.a, w.j, e.Has(w.j), e.Why[w.j], w.has, w.why)
			}
		}
	}
}

// Every built-in's positive controls are anomalies the table permits under its settings.
func TestBuiltinClaimsHold(t *testing.T) {
	for _, s := range builtins(t) {
		if err := checkClaims(s); err != nil {
			t.Error(err)
		}
	}
}

// A scenario file's claims are checked against the table before anything starts.
func TestClaimsContradictingTheTable(t *testing.T) {
	s := builtin(t, "default")
	s.Expect.Permitted = []guarantee.Anomaly{guarantee.LostWrite}
	s.Expect.Likely = []guarantee.Anomaly{guarantee.Duplicate}
	s.Expect.Provoke = "somehow"
	err := checkClaims(s)
	for _, want := range []string{"expect.permitted[0]: lost-write is never permitted", "min.insync.replicas=2",
		"expect.likely[0]: duplicate is never permitted"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if _, err := prepare(s, Options{Out: t.TempDir()}); err == nil {
		t.Error("a run with claims the table contradicts was prepared")
	}
	s = builtin(t, "acks1-leader-loss")
	s.Expect.Forbidden = []guarantee.Anomaly{guarantee.LostObserved}
	s.Expect.Permitted = []guarantee.Anomaly{guarantee.LostWrite, guarantee.Duplicate}
	if err := checkClaims(s); err != nil {
		t.Errorf("claims that hold: %v", err)
	}
}

// Force drops only the claims the forced settings deny, and says which; without settings the
// scenario is untouched (Run still refuses a scenario whose own claims the table denies).
func TestForce(t *testing.T) {
	base := builtin(t, "acks1-leader-loss") // lost-write likely under acks=1
	acks, _ := scenarios.LookupKnob("acks")
	s, notes, err := Force(base, []scenarios.Setting{{Knob: acks, Value: "all"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Expect.Likely) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "lost-write is likely does not hold with --acks=all") {
		t.Errorf("--acks all: likely %v, notes %v", s.Expect.Likely, notes)
	}
	if err := checkClaims(s); err != nil {
		t.Errorf("the forced scenario's claims: %v", err)
	}
	s, notes, err = Force(base, []scenarios.Setting{{Knob: acks, Value: "1"}})
	if err != nil || len(notes) != 0 || len(s.Expect.Likely) != 1 {
		t.Errorf("--acks 1 keeps the claim: likely %v, notes %v, err %v", s.Expect.Likely, notes, err)
	}
	if s, notes, err := Force(base, nil); err != nil || notes != nil || len(s.Expect.Likely) != 1 {
		t.Errorf("no settings: likely %v, notes %v, err %v", s.Expect.Likely, notes, err)
	}
	if _, _, err := Force(base, []scenarios.Setting{{Knob: acks, Value: "2"}}); err == nil {
		t.Error("a bad value is an error")
	}
}

// A positive control is expected per client, in one place: app-resend's duplicate needs a client
// that gives a send up (idempotent-gives-up), which franz-go is not. Forcing franz-go drops the
// control with a note saying why; a scenario that names franz-go itself with that control is
// refused; under sarama the control stays.
func TestPositiveControlPerClient(t *testing.T) {
	base := builtin(t, "app-resend")
	k, _ := scenarios.LookupKnob(clientKnob)
	franz, notes, err := Force(base, []scenarios.Setting{{Knob: k, Value: "franz-go"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(franz.Expect.Likely) != 0 || len(franz.Expect.LikelyNeeds) != 0 || len(notes) != 1 ||
		!strings.Contains(notes[0], "it needs idempotent-gives-up of the client, which franz-go lacks") {
		t.Errorf("franz-go: likely %v, needs %v, notes %v; want the control dropped with its reason", franz.Expect.Likely, franz.Expect.LikelyNeeds, notes)
	}
	sarama, notes, err := Force(base, []scenarios.Setting{{Knob: k, Value: "sarama"}})
	if err != nil || len(sarama.Expect.Likely) != 1 || len(notes) != 0 {
		t.Errorf("sarama: likely %v, notes %v, err %v; want the control kept", sarama.Expect.Likely, notes, err)
	}

	own := base.Clone()
	own.Client.Name = "franz-go"
	r, err := own.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	err = checkClaims(r)
	if err == nil || !strings.Contains(err.Error(), "expect.likely[0]: duplicate cannot fire under client franz-go: it needs idempotent-gives-up") {
		t.Errorf("a scenario naming franz-go with the control: %v", err)
	}
}
