package scenarios

import (
	"slices"
	"testing"
)

// The fault names are the nemesis issue's catalogue, exactly.
func TestFaultCatalogueIsTheIssueList(t *testing.T) {
	want := []FaultName{"kill", "stop", "pause", "rolling-bounce-clean", "rolling-bounce-hard", "disk-loss", "isolate",
		"split-majority", "bridge", "leader-cut-from-followers", "one-way-cut", "client-cut", "latency", "bandwidth",
		"blackhole-timeout", "reset-peer", "slow-close", "limit-data", "ack-loss", "compound", "none"}
	if got := FaultNames(); !slices.Equal(got, want) {
		t.Errorf("FaultNames\n got %v\nwant %v", got, want)
	}
	roles := []Role{"leader-of", "follower-of", "followers-of", "controller", "txn-coordinator", "group-coordinator",
		"random-minority", "random-majority", "node"}
	if got := Roles(); !slices.Equal(got, roles) {
		t.Errorf("Roles\n got %v\nwant %v", got, roles)
	}
}

// Every spec is consistent: known roles and params, required params among the accepted ones,
// a target need that matches its roles.
func TestFaultSpecsConsistent(t *testing.T) {
	params := []string{ParamLinks, ParamCut, ParamDelay, ParamJitter, ParamRateKBps, ParamAfter, ParamBytes, ParamHold, ParamTo, ParamGate}
	kinds := []string{KindProcess, KindNetwork, KindToxic, KindAckLoss, KindCompound, KindNone}
	for _, s := range FaultSpecs() {
		if s.Doc == "" || !slices.Contains(kinds, s.Kind) {
			t.Errorf("%s: doc %q, kind %q", s.Name, s.Doc, s.Kind)
		}
		for _, r := range s.Roles {
			if !slices.Contains(Roles(), r) {
				t.Errorf("%s: unknown role %s", s.Name, r)
			}
		}
		if (s.Target == TargetNone) != (len(s.Roles) == 0) {
			t.Errorf("%s: target %s with roles %v", s.Name, s.Target, s.Roles)
		}
		for _, p := range append(slices.Clone(s.Params), s.Required...) {
			if !slices.Contains(params, p) {
				t.Errorf("%s: unknown param %s", s.Name, p)
			}
		}
		for _, p := range s.Required {
			if !slices.Contains(s.Params, p) {
				t.Errorf("%s: requires %s but does not accept it", s.Name, p)
			}
		}
		if _, ok := LookupFault(s.Name); !ok {
			t.Errorf("LookupFault(%s) failed", s.Name)
		}
	}
	if _, ok := LookupFault("kil"); ok {
		t.Error("LookupFault found an unknown name")
	}
}

// Every fault of the catalogue can be written in a scenario that validates.
func TestEveryFaultValidatesInAScenario(t *testing.T) {
	for _, spec := range FaultSpecs() {
		t.Run(string(spec.Name), func(t *testing.T) {
			s := Default()
			f := Fault{Name: spec.Name}
			if spec.Target == TargetRequired {
				f.Target = &Target{Role: spec.Roles[0], Topic: DefaultTopic}
				if spec.Roles[0] != RoleLeaderOf && spec.Roles[0] != RoleFollowerOf && spec.Roles[0] != RoleFollowersOf {
					f.Target.Topic = ""
				}
			}
			for _, p := range spec.Required {
				switch p {
				case ParamDelay:
					f.Params.Delay = sec(0.1)
				case ParamRateKBps:
					f.Params.RateKBps = 64
				case ParamTo:
					f.Params.To = &Target{Role: RoleController}
				}
			}
			if spec.Name == FaultCompound {
				f.Parts = []Fault{{Name: FaultKill, Target: &Target{Role: RoleController}}, {Name: FaultBridge}}
			}
			st := Step{At: sec(5), Fault: f}
			if spec.Heals {
				st.For = sec(5)
			}
			s.Faults = Schedule{Kind: ScheduleTimeline, Timeline: []Step{st}}
			if err := s.Validate(); err != nil {
				t.Fatalf("%+v:\n%v", st, err)
			}
			b, err := s.YAML()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(b); err != nil {
				t.Fatalf("YAML of it does not parse: %v\n%s", err, b)
			}
		})
	}
}
