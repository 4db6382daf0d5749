package scenarios

import (
	"cmp"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/lazyfs/control"
	"github.com/verity-kafka/verity/nemesis"
	"github.com/verity-kafka/verity/sink"
	"slices"
	"strings"
	"testing"
)

// The catalogue holds the nemesis issue's faults, in its order (more may follow), and the roles.
func TestFaultCatalogueHasTheIssueList(t *testing.T) {
	want := []FaultName{"kill", "stop", "pause", "rolling-bounce-clean", "rolling-bounce-hard", "disk-loss", "power-loss", "isolate",
		"split-majority", "bridge", "leader-cut-from-followers", "one-way-cut", "client-cut", "latency", "bandwidth",
		"blackhole-timeout", "reset-peer", "slow-close", "limit-data", "ack-loss", "compound", "none"}
	got := FaultNames()
	last := -1
	for _, n := range want {
		i := slices.Index(got, n)
		if i < 0 || i < last {
			t.Errorf("FaultNames %v: %s missing or out of the issue's order", got, n)
		}
		last = i
	}
	if len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
		t.Errorf("FaultNames %v: a name twice", got)
	}
	roles := []Role{"leader-of", "follower-of", "followers-of", "replicas-of", "controller", "controllers", "txn-coordinator",
		"group-coordinator", "share-coordinator", "random-minority", "random-majority", "node"}
	if got := Roles(); !slices.Equal(got, roles) {
		t.Errorf("Roles\n got %v\nwant %v", got, roles)
	}
}

// Every spec is consistent: known roles and params, required params among the accepted ones,
// a target need that matches its roles.
func TestFaultSpecsConsistent(t *testing.T) {
	params := []string{ParamLinks, ParamCut, ParamDelay, ParamJitter, ParamRateKBps, ParamAfter, ParamBytes, ParamHold, ParamTo, ParamGate, ParamService, ParamAPI, ParamNth, ParamUntil, ParamFeature, ParamLevel, ParamVersion, ParamPath, ParamOp, ParamOnce}
	kinds := []string{KindProcess, KindDisk, KindNetwork, KindToxic, KindAckLoss, KindService, KindFeature, KindClient, KindCompound, KindNone}
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
				case ParamAPI:
					f.Params.API = "Produce"
				case ParamFeature:
					f.Params.Feature = kafkaconf.FeatureTransaction
				case ParamLevel:
					f.Params.Level = new(int16(0))
				case ParamVersion:
					f.Params.Version = "4.4.0"
				}
			}
			if spec.Name == FaultCompound {
				f.Parts = []Fault{{Name: FaultKill, Target: &Target{Role: RoleController}}, {Name: FaultBridge}}
			}
			if spec.Kind == KindService {
				s.Workload.Sinks = []Sink{{Name: "sink", Mode: sink.Naive, Count: 1, Topic: DefaultTopic}}
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

// Every fault of the catalogue builds the nemesis fault its row says, and every role its
// nemesis target.
func TestFaultsBuild(t *testing.T) {
	leader := &Target{Role: RoleLeaderOf, Topic: "t"}
	refs := Refs{TxnID: "tx", Group: "g"}
	cases := []struct {
		f    Fault
		want string // the nemesis fault's String
	}{
		{Fault{Name: FaultKill, Target: leader}, "kill(leader of t-0)"},
		{Fault{Name: FaultStop, Target: &Target{Role: RoleFollowersOf, Topic: "t", Partition: 2}}, "stop(followers of t-2)"},
		{Fault{Name: FaultPause, Target: &Target{Role: RoleController}}, "pause(active controller)"},
		{Fault{Name: FaultDiskLoss, Target: &Target{Role: RoleNode, Node: 2}}, "disk-loss(node 2)"},
		{Fault{Name: FaultKill, Target: &Target{Role: RoleTxnCoordinator}}, `kill(transaction coordinator of "tx")`},
		{Fault{Name: FaultIsolate, Target: &Target{Role: RoleGroupCoordinator, Group: "h"}}, `isolate(group coordinator of "h")`},
		{Fault{Name: FaultClientCut, Target: &Target{Role: RoleRandomMinority}}, "client-cut(a random minority of the brokers)"},
		{Fault{Name: FaultLeaderCut, Target: leader}, "leader-cut(leader of t-0 from its followers)"},
		{Fault{Name: FaultOneWayCut, Target: &Target{Role: RoleFollowerOf, Topic: "t"}, Params: Params{To: leader}},
			"one-way-cut(a follower of t-0 -> leader of t-0)"},
		{Fault{Name: FaultLatency, Target: leader, Params: Params{Delay: sec(0.3), Links: LinksFetch}}, "latency(fetch links of t-0"},
		{Fault{Name: FaultBandwidth, Target: leader, Params: Params{RateKBps: 64, Links: LinksNode}}, "bandwidth(node links of leader of t-0"},
		{Fault{Name: FaultLimitData, Target: leader}, "limit-data(client links to leader of t-0"},
		{Fault{Name: FaultAckLoss, Target: leader, Params: Params{Hold: true}}, "ack-loss"},
		{Fault{Name: FaultRollingBounceHard}, "rolling-bounce"},
		{Fault{Name: FaultSplitMajority}, "split("},
		{Fault{Name: FaultNone}, "none"},
		{Fault{Name: FaultCompound, Parts: []Fault{{Name: FaultKill, Target: leader}, {Name: FaultBridge}}}, "kill(leader of t-0)"},
	}
	built := map[FaultName]bool{}
	for _, c := range cases {
		nf, err := c.f.Build(refs)
		if err != nil {
			t.Errorf("%s: %v", c.f.Name, err)
			continue
		}
		built[c.f.Name] = true
		if !strings.Contains(nf.String(), c.want) {
			t.Errorf("%s built %q, want it to contain %q", c.f.Name, nf.String(), c.want)
		}
	}
	for _, spec := range FaultSpecs() {
		if spec.Build == nil {
			t.Errorf("%s has no constructor", spec.Name)
		}
	}
	for _, c := range []struct {
		f    Fault
		want string
	}{
		{Fault{Name: FaultKill}, "needs a target"},
		{Fault{Name: FaultKill, Target: &Target{Role: RoleTxnCoordinator}}, "no transactional producer"},
		{Fault{Name: FaultKill, Target: &Target{Role: RoleGroupCoordinator}}, "no consumer group"},
		{Fault{Name: "explode"}, "not in the catalogue"},
	} {
		if _, err := c.f.Build(Refs{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.f, err, c.want)
		}
	}
}

// Every preset (the matrix's fault axis) validates in the default scenario and builds a fault
// of its own name; compound has none.
func TestPresets(t *testing.T) {
	for _, name := range PresetNames() {
		f, err := Preset(FaultName(name), DefaultTopic)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if f.Name != FaultName(name) {
			t.Errorf("preset %s is fault %s", name, f.Name)
		}
		s := Default()
		s.Faults = SingleFault(f, s.Duration)
		r, err := s.Resolve()
		if err != nil {
			t.Errorf("%s: the preset does not validate: %v", name, err)
			continue
		}
		sched, err := r.NemesisSchedule(Refs{TxnID: "x", Group: "g"})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		nemesisName := map[string]string{"blackhole-timeout": "timeout", "split-majority": "split", "leader-cut-from-followers": "leader-cut"}
		if name != "none" && !strings.Contains(sched.String(), cmp.Or(nemesisName[name], strings.TrimSuffix(strings.TrimSuffix(name, "-clean"), "-hard"))) {
			t.Errorf("%s: schedule %s", name, sched)
		}
	}
	if slices.Contains(PresetNames(), string(FaultCompound)) {
		t.Error("compound has a preset")
	}
	if _, err := Preset("explode", "t"); err == nil || !strings.Contains(err.Error(), "kill") {
		t.Errorf("an unknown preset: %v; want an error listing the faults", err)
	}
}

// A disk fault becomes one lazy-filesystem rule on the files its path names, and its scenario
// runs the nodes on the lazy filesystem.
func TestDiskFaultRules(t *testing.T) {
	leader := &Target{Role: RoleLeaderOf, Topic: "verity", Partition: 2}
	cases := []struct {
		f    Fault
		want control.DiskFault
	}{
		{Fault{Name: FaultDiskError, Target: leader, Params: Params{Path: DiskLog}},
			control.DiskFault{Kind: control.KindError, Op: control.OpWrite, Path: "verity-2/**"}},
		{Fault{Name: FaultDiskError, Target: leader, Params: Params{Path: DiskMetadata, Op: "fsync", Once: true}},
			control.DiskFault{Kind: control.KindError, Op: control.OpFsync, Path: "__cluster_metadata-0/**", Once: true}},
		{Fault{Name: FaultDiskFull, Target: leader, Params: Params{Bytes: 4096}},
			control.DiskFault{Kind: control.KindFull, Path: "**", AfterBytes: 4096}},
		{Fault{Name: FaultSlowDisk, Target: leader, Params: Params{Path: DiskCheckpoints, Delay: sec(1.5)}},
			control.DiskFault{Kind: control.KindSlow, Op: control.OpFsync, Path: "*checkpoint*", Delay: "1.5s"}},
	}
	for _, c := range cases {
		nf, err := c.f.Build(Refs{})
		if err != nil {
			t.Fatalf("%s: %v", c.f.Name, err)
		}
		df, ok := nf.(nemesis.DiskFault)
		if !ok || len(df.Rules.Rules) != 1 || df.Rules.Rules[0] != c.want || df.Fault != string(c.f.Name) {
			t.Errorf("%s: built %#v, want the rule %#v", c.f.Name, nf, c.want)
		}
		if err := df.Rules.Validate(); err != nil {
			t.Errorf("%s: %v", c.f.Name, err)
		}
	}
	// Under several log directories each area is one level down, in whichever directory holds it.
	for path, want := range map[string]string{DiskLog: "*/verity-2/**", DiskMetadata: "*/__cluster_metadata-0/**",
		DiskCheckpoints: "*/*checkpoint*", DiskAll: "**", "dir1/**": "dir1/**"} {
		nf, err := Fault{Name: FaultDiskError, Target: leader, Params: Params{Path: path}}.Build(Refs{LogDirs: 2})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if got := nf.(nemesis.DiskFault).Rules.Rules[0].Path; got != want {
			t.Errorf("path %s under two log directories: %q, want %q", path, got, want)
		}
	}
	s := base("x", "x", "x")
	s.Faults = timeline(Step{At: sec(5), For: sec(5), Fault: Fault{Name: FaultDiskFull, Target: leader}})
	if !s.withDefaults().Topology.PowerLoss {
		t.Error("a scenario with a disk fault does not run its nodes on the lazy filesystem")
	}
}
