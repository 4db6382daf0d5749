package scenarios

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/kafkaconf"
)

// catalogue are the names of the scenario catalogue Verity was designed with; every one must be built in.
func catalogue() []string {
	return []string{"lab-follower-down", "lab-isr-below-min", "lab-leader-failover", "lab-abort-invisible",
		"lab-fencing", "lab-lso-hold", "acks0-leader-loss", "acks1-leader-loss", "minisr1-disk-loss",
		"minisr2-disk-loss", "unclean-isolation", "elr-last-replica", "idempotent-ack-loss", "idempotent-inflight5-ack-loss", "plain-ack-loss",
		"plain-inflight-reorder", "app-resend", "eos-coordinator-kill", "eos-rolling-bounce", "group-rebalance"}
}

func TestBuiltinsValidate(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Builtins() {
		t.Run(s.Name, func(t *testing.T) {
			if err := s.Validate(); err != nil {
				t.Fatalf("built-in does not validate:\n%v", err)
			}
			if seen[s.Name] {
				t.Fatalf("name %q used twice", s.Name)
			}
			seen[s.Name] = true
			if s.Description == "" || s.Source == "" || s.Expect.Text == "" {
				t.Errorf("a built-in must say what it does, which document section it follows and what it expects: description %q, source %q, expect.text %q",
					s.Description, s.Source, s.Expect.Text)
			}
			// What a built-in's configuration permits or forbids comes from the guarantee
			// table (runner.Expectations), not from lists restated by hand.
			if len(s.Expect.Forbidden)+len(s.Expect.Permitted) > 0 {
				t.Errorf("expect restates the guarantee table: forbidden %v, permitted %v", s.Expect.Forbidden, s.Expect.Permitted)
			}
			if !reflect.DeepEqual(s, s.withDefaults()) {
				t.Errorf("Builtins returned a scenario without its defaults applied")
			}
		})
	}
	for _, name := range append(catalogue(), "default") {
		if !seen[name] {
			t.Errorf("scenario %q of the catalogue is not built in", name)
		}
	}
	if got := Names()[0]; got != "default" {
		t.Errorf("first built-in is %q, want default", got)
	}
}

// A built-in written as YAML and parsed back is the same value.
func TestBuiltinYAMLRoundTrip(t *testing.T) {
	for _, s := range Builtins() {
		t.Run(s.Name, func(t *testing.T) {
			b, err := s.YAML()
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(b)
			if err != nil {
				t.Fatalf("parsing the YAML of a built-in: %v\n%s", err, b)
			}
			if !reflect.DeepEqual(got.Scenario, s) {
				t.Errorf("YAML round trip changed the scenario:\n got %+v\nwant %+v\nYAML:\n%s", got, s, b)
			}
			// And the YAML of the result is byte for byte the same.
			b2, err := got.YAML()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, b2) {
				t.Errorf("YAML differs after a round trip:\n%s\n---\n%s", b, b2)
			}
		})
	}
}

// The history header carries the whole scenario under "spec" as JSON, which reads back to the
// same value.
func TestBuiltinJSONRoundTrip(t *testing.T) {
	for _, s := range Builtins() {
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		var back Scenario
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if !reflect.DeepEqual(back, s) {
			t.Errorf("%s: JSON reads back differently:\n got %+v\nwant %+v", s.Name, back, s)
		}
	}
}

// The same seed gives the identical scenario and YAML; another seed changes the seed and
// nothing else.
func TestBuiltinSameSeedSameScenario(t *testing.T) {
	for _, name := range Names() {
		build := func(seed string) (Resolved, []byte) {
			s, err := resolved(t, name).Override(settings(t, "seed="+seed))
			if err != nil {
				t.Fatal(err)
			}
			y, err := s.YAML()
			if err != nil {
				t.Fatal(err)
			}
			return s, y
		}
		a, ay := build("7")
		b, by := build("7")
		if !reflect.DeepEqual(a, b) || !bytes.Equal(ay, by) {
			t.Errorf("%s: two builds with seed 7 differ", name)
		}
		c, _ := build("8")
		if c.Seed != 8 {
			t.Errorf("%s: seed %d, want 8", name, c.Seed)
		}
		c.Seed = 7
		if !reflect.DeepEqual(a, c) {
			t.Errorf("%s: seed 8 changed more than the seed", name)
		}
	}
}

func TestDefaultScenario(t *testing.T) {
	s := Default()
	if s.Name != "default" || s.Topology.Nodes != 3 || s.Duration != sec(60) {
		t.Errorf("default: name %q, nodes %d, duration %s", s.Name, s.Topology.Nodes, s.Duration)
	}
	tp := s.Topics[0]
	if tp.ReplicationFactor != 3 || tp.MinInsyncReplicas != 2 || tp.UncleanLeaderElection {
		t.Errorf("default topic %+v, want RF 3, min ISR 2, unclean off", tp)
	}
	if *s.Client.Acks != kafkaconf.AcksAll || s.Client.Idempotence == nil || !*s.Client.Idempotence {
		t.Errorf("default client %+v, want acks=all and idempotence", s.Client)
	}
	if len(s.Faults.Timeline) != 1 || s.Faults.Timeline[0].Name != FaultKill || s.Faults.Timeline[0].Target.Role != RoleLeaderOf {
		t.Errorf("default faults %+v, want one leader kill", s.Faults)
	}
	b, err := Builtin("default")
	if err != nil || !reflect.DeepEqual(b, s) {
		t.Errorf("Builtin(default) = %+v, %v; want Default()", b, err)
	}
}

func TestBuiltinUnknown(t *testing.T) {
	_, err := Builtin("acks1-leader-los")
	if err == nil {
		t.Fatal("no error for an unknown built-in")
	}
	for _, want := range []string{`"acks1-leader-los"`, "did you mean acks1-leader-loss?", "default, lab-follower-down"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// Builtins hands out fresh values: changing one changes no later call's.
func TestBuiltinsAreFresh(t *testing.T) {
	a := Builtins()
	a[0].Topics[0].Name = "changed"
	a[0].Faults.Timeline[0].Target.Role = RoleNode
	b := Builtins()
	if b[0].Topics[0].Name != DefaultTopic || b[0].Faults.Timeline[0].Target.Role != RoleLeaderOf {
		t.Error("changing a returned scenario changed the catalogue")
	}
}
