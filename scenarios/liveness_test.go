package scenarios

import (
	"errors"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

const healing = "faults:\n  timeline:\n    - {at: 10s, duration: 10s, fault: kill, target: {role: leader-of}}\n"

// expect.liveness is checked like every other field: its path, its line, and what it accepts.
func TestLivenessValidation(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"bounds", "name: x\n" + healing + "expect:\n  liveness:\n    max_stall: 25s\n    recover_within: 15s\n", nil},
		{"empty", "name: x\nexpect:\n  liveness: {}\n",
			[]string{"expect.liveness: states no bound: give max_stall or recover_within, or remove it (line 3)"}},
		{"too short", "name: x\nexpect:\n  liveness:\n    max_stall: 1s\n",
			[]string{"expect.liveness.max_stall: 1s: want more than 1s, the shortest stretch without progress the checker counts as a stall (line 4)"}},
		{"too long", "name: x\nduration: 30s\nexpect:\n  liveness:\n    max_stall: 30s\n",
			[]string{"expect.liveness.max_stall: 30s is not shorter than the run (duration 30s)", "(line 5)"}},
		{"no heal", "name: x\nexpect:\n  liveness:\n    recover_within: 10s\n",
			[]string{"expect.liveness.recover_within: the schedule heals no fault: nothing to judge recover_within against (line 4)"}},
		{"heal ends by itself", "name: x\nfaults:\n  timeline:\n    - {at: 10s, fault: leader-election}\nexpect:\n  liveness:\n    recover_within: 10s\n",
			[]string{"the schedule heals no fault"}},
		{"unknown capability", "name: x\nexpect:\n  liveness:\n    max_stall: 20s\n    breaks_without: [leaves-leader]\n    why: because\n",
			[]string{`expect.liveness.breaks_without[0]: capability "leaves-leader": want one of`, "(line 5)"}},
		{"no why", "name: x\nexpect:\n  liveness:\n    max_stall: 20s\n    breaks_without: [leaves-unanswering-leader]\n",
			[]string{"expect.liveness.why: missing: say why a client without leaves-unanswering-leader breaks max_stall 20s"}},
		{"why alone", "name: x\nexpect:\n  liveness:\n    max_stall: 20s\n    why: because\n",
			[]string{"expect.liveness.why: set, but expect.liveness.breaks_without names no capability whose lack it explains (line 5)"}},
		{"breaks without a bound", "name: x\nexpect:\n  liveness:\n    breaks_without: [leaves-unanswering-leader]\n    why: because\n",
			[]string{"expect.liveness: states no bound"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error for:\n%s", c.yaml)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
		})
	}
}

// The stated bounds go to the header in milliseconds; a client lacking a breaks_without
// capability is expected to break them.
func TestLivenessBoundsAndLacks(t *testing.T) {
	s, err := Builtin("unanswering-leader")
	if err != nil {
		t.Fatal(err)
	}
	l := s.Expect.Liveness
	b := l.Bounds()
	if b == nil || b.MaxStallMS == nil || *b.MaxStallMS != 25000 || b.RecoverWithinMS != nil {
		t.Fatalf("bounds %+v, want max_stall_ms 25000 alone", b)
	}
	for _, c := range kafkaconf.Clients() {
		lacks := l.Lacks(c)
		if want := c.Name == kafkaconf.Sarama; (len(lacks) > 0) != want {
			t.Errorf("%s lacks %v of breaks_without; want a lack %v", c.Name, lacks, want)
		}
	}
	if l.BoundsText() != "max_stall 25s" {
		t.Errorf("bounds text %q", l.BoundsText())
	}
	var none *LivenessExpect
	if none.Bounds() != nil || none.Lacks(kafkaconf.Clients()[0]) != nil {
		t.Error("no expectation states bounds")
	}
}

// --max-stall and --recover-within state a bound on a scenario and on a header; 0 removes it.
func TestLivenessKnobs(t *testing.T) {
	s, err := Default().Resolve()
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Override(settings(t, "max-stall=20s", "recover-within=15s"))
	if err != nil {
		t.Fatal(err)
	}
	if l := got.Expect.Liveness; l == nil || l.MaxStall != sec(20) || l.RecoverWithin != sec(15) {
		t.Errorf("expect.liveness %+v", l)
	}
	if s.Expect.Liveness != nil {
		t.Error("Override changed the scenario it was given")
	}
	off, err := got.Override(settings(t, "max-stall=0", "recover-within=0"))
	if err != nil {
		t.Fatal(err)
	}
	if off.Expect.Liveness != nil {
		t.Errorf("both bounds removed, expect.liveness still %+v", off.Expect.Liveness)
	}
	if _, err := s.Override(settings(t, "max-stall=500ms")); err == nil || !strings.Contains(err.Error(), "--max-stall: 500ms: want more than 1s") {
		t.Errorf("a bound shorter than a stall: %v", err)
	}
	var oe *OverrideError
	if _, err := s.Override(settings(t, "max-stall=2m")); !errors.As(err, &oe) || !strings.Contains(err.Error(), "expect.liveness.max_stall: 2m is not shorter than the run") {
		t.Errorf("a bound longer than the run: %v", err)
	}

	h := history.Config{Liveness: &history.LivenessBounds{RecoverWithinMS: new(int64(9000))}}
	hc, err := OverrideHeader(h, settings(t, "max-stall=25s"))
	if err != nil {
		t.Fatal(err)
	}
	if b := hc.Liveness; b == nil || b.MaxStallMS == nil || *b.MaxStallMS != 25000 || b.RecoverWithinMS == nil || *b.RecoverWithinMS != 9000 {
		t.Errorf("header bounds %+v", b)
	}
	if h.Liveness.MaxStallMS != nil {
		t.Error("OverrideHeader changed the config it was given")
	}
	hc, err = OverrideHeader(h, settings(t, "recover-within=0"))
	if err != nil || hc.Liveness != nil {
		t.Errorf("the only bound removed: %+v, %v", hc.Liveness, err)
	}
}
