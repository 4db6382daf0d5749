package runner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verity-kafka/verity/nemesis"
	"github.com/verity-kafka/verity/scenarios"
)

func TestEveryBuiltinCompiles(t *testing.T) {
	for _, s := range scenarios.Builtins() {
		pl, err := compile(s, "verity")
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		if _, err := pl.schedule.Plan(s.Seed, s.Duration.Std()); err != nil {
			t.Errorf("%s: the fault schedule does not plan: %v", s.Name, err)
		}
		if len(pl.workloads.Topics) != len(s.Topics) {
			t.Errorf("%s: %d topics compiled, want %d", s.Name, len(pl.workloads.Topics), len(s.Topics))
		}
	}
}

func TestCompileDefault(t *testing.T) {
	pl, err := compile(scenarios.Default(), "verity-x")
	if err != nil {
		t.Fatal(err)
	}
	ws := pl.workloads
	if len(ws.Producers) != 2 || ws.Producers[0].Instances != 2 || !ws.Producers[1].Async {
		t.Fatalf("producers %+v: want 2 one-at-a-time and 1 async", ws.Producers)
	}
	p := ws.Producers[0].ProducerConfig
	// Kafka allows 5 in flight with idempotence; sarama 1: the run says so instead of
	// silently turning idempotence off.
	if p.Idempotence == nil || !*p.Idempotence || p.MaxInFlight != 1 || p.Acks != "all" || p.Rate != scenarios.DefaultRate {
		t.Errorf("producer config %+v: want idempotent acks=all, 1 in flight, the default rate", p)
	}
	if len(pl.notes) != 1 || !strings.Contains(pl.notes[0], "sarama") {
		t.Errorf("notes %q: want one note on sarama's in-flight limit", pl.notes)
	}
	if len(ws.Consumers) != 1 || ws.Consumers[0].Isolation != "read_committed" {
		t.Errorf("consumers %+v", ws.Consumers)
	}
	if ws.Header["isolation"] != "read_committed" || !slices.Equal(ws.Header["faults"].([]string), []string{"kill"}) {
		t.Errorf("header %v: want isolation and the scheduled faults", ws.Header)
	}
	tl, ok := pl.schedule.(nemesis.Timeline)
	if !ok || len(tl) != 1 || tl[0].At != 20*time.Second || tl[0].For != 20*time.Second || tl[0].Fault.String() != "kill(leader of verity-0)" {
		t.Errorf("schedule %v: want kill(leader of verity-0) at 20s for 20s", pl.schedule)
	}
}

func TestCompileNonIdempotentKeepsInFlight(t *testing.T) {
	s, err := scenarios.Builtin("plain-inflight-reorder")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := compile(s, "v")
	if err != nil {
		t.Fatal(err)
	}
	p := pl.workloads.Producers[0].ProducerConfig
	if *p.Idempotence || p.MaxInFlight != 5 || len(pl.notes) != 0 {
		t.Errorf("producer %+v, notes %q: want non-idempotent with 5 in flight and no note", p, pl.notes)
	}
	// acks=1 without an explicit idempotence is Kafka's default for such acks: off.
	s.Client.Idempotence = nil
	s.Client.Acks = "1"
	pl, err = compile(s, "v")
	if err != nil {
		t.Fatal(err)
	}
	if *pl.workloads.Producers[0].Idempotence {
		t.Error("acks=1 with idempotence unset compiled to an idempotent producer")
	}
}

func TestCompileTransactionsAndGroups(t *testing.T) {
	s, err := scenarios.Builtin("lab-lso-hold")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := compile(s, "tag")
	if err != nil {
		t.Fatal(err)
	}
	tx := pl.workloads.Transactional
	if len(tx) != 1 || tx[0].TxnID != "tag-txn-0" || tx[0].HoldOpen != 30*time.Second || tx[0].Timeout <= tx[0].HoldOpen {
		t.Errorf("transactional %+v: want tag-txn-0 held 30s with a longer timeout", tx)
	}
	s, _ = scenarios.Builtin("eos-coordinator-kill")
	pl, err = compile(s, "tag")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pl.schedule.String(), `transaction coordinator of "tag-txn-0"`) {
		t.Errorf("schedule %s: want the coordinator of the run's first transactional.id", pl.schedule)
	}
	s, _ = scenarios.Builtin("group-rebalance")
	pl, err = compile(s, "tag")
	if err != nil {
		t.Fatal(err)
	}
	cs := pl.workloads.Consumers
	if len(cs) != 3 || cs[0].Group != "tag-verity-group" || cs[0].Mode != "subscribe" || cs[0].RestartEvery != 10*time.Second {
		t.Errorf("group consumers %+v", cs)
	}
}

func TestFreshNames(t *testing.T) {
	for _, s := range scenarios.Builtins() {
		f := freshNames(s, "-c1r2")
		if err := f.Validate(); err != nil {
			t.Errorf("%s renamed is invalid: %v", s.Name, err)
			continue
		}
		pl, err := compile(f, "t")
		if err != nil {
			t.Errorf("%s renamed: %v", s.Name, err)
			continue
		}
		for _, top := range pl.topics {
			if !strings.HasSuffix(top, "-c1r2") {
				t.Errorf("%s: topic %q not renamed", s.Name, top)
			}
		}
		// Every partition target names a renamed topic: nothing aims at the old ones.
		if str := pl.schedule.String(); strings.Contains(str, " of ") && strings.Contains(str, "-0") && !strings.Contains(str, "-c1r2-0") && !strings.Contains(str, "coordinator") {
			t.Errorf("%s: schedule %s still aims at an old topic", s.Name, str)
		}
		if s.Topics[0].Name == f.Topics[0].Name {
			t.Errorf("%s: freshNames changed nothing", s.Name)
		}
	}
}

func TestPresetsMapToFaults(t *testing.T) {
	for _, name := range presetNames() {
		f, err := Preset(name, scenarios.DefaultTopic)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		s := scenarios.Default()
		s.Faults = singleFault(f, s.Duration)
		if err := s.Validate(); err != nil {
			t.Errorf("%s: the preset does not validate: %v", name, err)
			continue
		}
		nf, err := fault(f, faultRefs{txnID: "x", group: "g"})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if name != "none" && nf.Name() == "none" {
			t.Errorf("%s mapped to no fault", name)
		}
	}
	if _, err := Preset("explode", "t"); err == nil || !strings.Contains(err.Error(), "kill") {
		t.Errorf("an unknown preset: %v; want an error listing the faults", err)
	}
}

func TestFaultErrors(t *testing.T) {
	cases := []struct {
		f    scenarios.Fault
		want string
	}{
		{scenarios.Fault{Name: scenarios.FaultKill}, "needs a target"},
		{scenarios.Fault{Name: scenarios.FaultKill, Target: &scenarios.Target{Role: scenarios.RoleTxnCoordinator}}, "no transactional producer"},
		{scenarios.Fault{Name: scenarios.FaultLatency, Target: &scenarios.Target{Role: scenarios.RoleController},
			Params: scenarios.Params{Links: scenarios.LinksFetch}}, "partition target"},
		{scenarios.Fault{Name: scenarios.FaultSplitMajority, Target: &scenarios.Target{Role: scenarios.RoleNode, Node: 1}}, "not supported"},
		{scenarios.Fault{Name: "explode"}, "not in the catalogue"},
	}
	for _, c := range cases {
		if _, err := fault(c.f, faultRefs{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.f, err, c.want)
		}
	}
}
