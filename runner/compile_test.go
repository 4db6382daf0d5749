package runner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/nemesis"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/workloads"
)

// builtin resolves the built-in called name.
func builtin(t *testing.T, name string) scenarios.Resolved {
	t.Helper()
	s, err := scenarios.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func builtins(t *testing.T) []scenarios.Resolved {
	var out []scenarios.Resolved
	for _, name := range scenarios.Names() {
		out = append(out, builtin(t, name))
	}
	return out
}

func TestEveryBuiltinCompiles(t *testing.T) {
	for _, s := range builtins(t) {
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

// A scenario and the workloads it compiles to agree on what they ask of the cluster: both
// read kafkaconf's role table, each from its own shape of the workload.
func TestScenarioAndCompiledWorkloadUseTheSame(t *testing.T) {
	kinds := map[kafkaconf.Uses]bool{}
	for _, s := range builtins(t) {
		pl, err := compile(s, "verity")
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		want, got := s.Workload.Uses(), pl.workloads.Uses()
		if got != want {
			t.Errorf("%s: the scenario uses %+v, its compiled workloads %+v", s.Name, want, got)
		}
		kinds[got] = true
	}
	if len(kinds) < 3 {
		t.Errorf("the built-ins show %d kinds of use (%v): the test compares too little", len(kinds), kinds)
	}
}

func TestCompileDefault(t *testing.T) {
	pl, err := compile(builtin(t, "default"), "verity-x")
	if err != nil {
		t.Fatal(err)
	}
	ws := pl.workloads
	if len(ws.Producers) != 2 || ws.Producers[0].Instances != 2 || !ws.Producers[1].Async {
		t.Fatalf("producers %+v: want 2 one-at-a-time and 1 async", ws.Producers)
	}
	p, _, err := ws.Producers[0].ProducerConfig.Resolved(workloads.Sarama())
	if err != nil {
		t.Fatal(err)
	}
	// Kafka allows 5 in flight with idempotence; sarama 1: the run says so instead of
	// silently turning idempotence off.
	if !*p.Idempotence || *p.MaxInFlight != 1 || *p.Acks != kafkaconf.AcksAll || p.Rate != scenarios.DefaultRate {
		t.Errorf("producer config %+v: want idempotent acks=all, 1 in flight, the default rate", p)
	}
	if len(pl.notes) != 2 || !strings.Contains(pl.notes[0], "sarama's idempotent producer allows no more") ||
		!strings.Contains(pl.notes[1], "sarama's default 3") {
		t.Errorf("notes %q: want the notes on sarama's in-flight limit and retries", pl.notes)
	}
	if len(ws.Consumers) != 1 || ws.Consumers[0].Isolation != kafkaconf.ReadCommitted {
		t.Errorf("consumers %+v", ws.Consumers)
	}
	if !slices.Equal(ws.ScheduledFaults, []string{"kill"}) {
		t.Errorf("scheduled faults %v", ws.ScheduledFaults)
	}
	tl, ok := pl.schedule.(nemesis.Timeline)
	if !ok || len(tl) != 1 || tl[0].At != 20*time.Second || tl[0].For != 20*time.Second || tl[0].Fault.String() != "kill(leader of verity-0)" {
		t.Errorf("schedule %v: want kill(leader of verity-0) at 20s for 20s", pl.schedule)
	}
}

func TestCompileNonIdempotentKeepsInFlight(t *testing.T) {
	s := builtin(t, "plain-inflight-reorder")
	pl, err := compile(s, "v")
	if err != nil {
		t.Fatal(err)
	}
	p := pl.workloads.Producers[0].ProducerConfig.Settings(workloads.Sarama())
	if p.Idempotent || p.MaxInFlight != 5 || slices.ContainsFunc(pl.notes, func(n string) bool { return strings.Contains(n, "in.flight") }) {
		t.Errorf("producer %+v, notes %q: want non-idempotent with 5 in flight and no note on it", p, pl.notes)
	}
	// acks=1 without an explicit idempotence is Kafka's default for such acks: off.
	s.Client.Idempotence = nil
	s.Client.Acks = new(kafkaconf.AcksLeader)
	pl, err = compile(s, "v")
	if err != nil {
		t.Fatal(err)
	}
	if pl.workloads.Producers[0].ProducerConfig.Settings(workloads.Sarama()).Idempotent {
		t.Error("acks=1 with idempotence unset compiled to an idempotent producer")
	}
}

func TestCompileTransactionsAndGroups(t *testing.T) {
	pl, err := compile(builtin(t, "lab-lso-hold"), "tag")
	if err != nil {
		t.Fatal(err)
	}
	tx := pl.workloads.Transactional
	if len(tx) != 1 || tx[0].TxnID != "tag-txn-0" || tx[0].HoldOpen != 30*time.Second || tx[0].Timeout <= tx[0].HoldOpen {
		t.Errorf("transactional %+v: want tag-txn-0 held 30s with a longer timeout", tx)
	}
	pl, err = compile(builtin(t, "eos-coordinator-kill"), "tag")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pl.schedule.String(), `transaction coordinator of "tag-txn-0"`) {
		t.Errorf("schedule %s: want the coordinator of the run's first transactional.id", pl.schedule)
	}
	pl, err = compile(builtin(t, "group-rebalance"), "tag")
	if err != nil {
		t.Fatal(err)
	}
	cs := pl.workloads.Consumers
	if len(cs) != 3 || cs[0].Group != "tag-verity-group" || cs[0].Mode != "subscribe" || cs[0].RestartEvery != 10*time.Second {
		t.Errorf("group consumers %+v", cs)
	}
	// A sink's group is a group too: a group-coordinator fault aims at it.
	s := builtin(t, "sink-naive")
	s.Faults = scenarios.Schedule{Kind: scenarios.ScheduleTimeline, Timeline: []scenarios.Step{{At: scenarios.Duration(5 * time.Second),
		For: scenarios.Duration(5 * time.Second), Fault: scenarios.Fault{Name: scenarios.FaultKill, Target: &scenarios.Target{Role: scenarios.RoleGroupCoordinator}}}}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if pl, err = compile(s, "tag"); err != nil {
		t.Fatal(err)
	}
	if str := pl.schedule.String(); !strings.Contains(str, `group coordinator of "tag-sink-`) {
		t.Errorf("schedule %s: want the coordinator of the sink's group", str)
	}
}

func TestFreshNames(t *testing.T) {
	for _, s := range builtins(t) {
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

// A shape reads as settings, in the suite's and the matrix's progress lines and errors.
func TestDescribeShape(t *testing.T) {
	s := specShape(harness.Spec{Nodes: 3, Postgres: true, Ledger: true,
		BrokerConfig: map[string]string{"transaction.partition.verification.enable": "true", "log.segment.bytes": "1048576"}})
	want := "3 brokers, stores ledger, postgres, Kafka 4.3.1, broker settings log.segment.bytes=1048576, transaction.partition.verification.enable=true"
	if got := describeShape(s); got != want {
		t.Errorf("describeShape = %q, want %q", got, want)
	}
	if got := describeShape(specShape(harness.Spec{Nodes: 1})); strings.Contains(got, "stores") || strings.Contains(got, "settings") {
		t.Errorf("a plain cluster's shape names no stores or settings: %q", got)
	}
}
