package scenarios

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestOverride(t *testing.T) {
	base, err := Builtin("lab-isr-below-min") // has a producer group with its own acks
	if err != nil {
		t.Fatal(err)
	}
	acks, minISR, rf, nodes, seed, dur := "1", 1, 2, 5, int64(42), 90*time.Second
	unclean, iso := true, ReadUncommitted
	s, err := base.Override(Overrides{Acks: &acks, MinISR: &minISR, RF: &rf, Unclean: &unclean, Isolation: &iso,
		Nodes: &nodes, Seed: &seed, Duration: &dur})
	if err != nil {
		t.Fatal(err)
	}
	if s.Client.Acks != "1" || s.Client.Idempotence != nil {
		t.Errorf("client after --acks 1: acks %q, idempotence %v (want 1 and Kafka's default)", s.Client.Acks, s.Client.Idempotence)
	}
	for i, g := range s.Workload.Producers {
		if g.Acks != "" || g.Idempotence != nil {
			t.Errorf("producer group %d kept its own acks %q / idempotence %v against --acks", i, g.Acks, g.Idempotence)
		}
	}
	tp := s.Topics[0]
	if tp.MinInsyncReplicas != 1 || tp.ReplicationFactor != 2 || !tp.UncleanLeaderElection {
		t.Errorf("topic %+v", tp)
	}
	if s.Client.Isolation != ReadUncommitted || s.Topology.Nodes != 5 || s.Seed != 42 || s.Duration.Std() != dur {
		t.Errorf("scenario %+v", s)
	}
	// The original is untouched.
	if base.Client.Acks != "all" || base.Topics[0].MinInsyncReplicas != 2 || base.Workload.Producers[2].Acks != "1" {
		t.Error("Override changed the scenario it was called on")
	}

	yes := true
	all := "all"
	s, err = base.Override(Overrides{Acks: &all, Idempotence: &yes})
	if err != nil {
		t.Fatal(err)
	}
	if s.Client.Idempotence == nil || !*s.Client.Idempotence || s.Workload.Producers[2].Acks != "" || s.Workload.Producers[2].Idempotence != nil {
		t.Errorf("--acks all --idempotence: %+v / %+v", s.Client, s.Workload.Producers)
	}
	minus1 := "-1"
	if s, err = base.Override(Overrides{Acks: &minus1}); err != nil || s.Client.Acks != "all" {
		t.Errorf("--acks -1: %q, %v", s.Client.Acks, err)
	}
}

func TestOverrideErrors(t *testing.T) {
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	yes := true
	cases := []struct {
		name string
		o    Overrides
		want []string
	}{
		{"acks value", Overrides{Acks: str("2")}, []string{`--acks: "2": want 0, 1 or all`}},
		{"min ISR value", Overrides{MinISR: num(0)}, []string{"--min-isr: 0: want at least 1"}},
		{"rf value", Overrides{RF: num(-1)}, []string{"--rf: -1: want at least 1"}},
		{"isolation value", Overrides{Isolation: str("dirty")}, []string{`--isolation: "dirty": want read_committed or read_uncommitted`}},
		{"nodes value", Overrides{Nodes: num(0)}, []string{"--nodes: 0: want 1 to 50 brokers"}},
		{"rf below min ISR", Overrides{RF: num(1)},
			[]string{"scenario default with --rf=1: topics[0].min_insync_replicas: 2 is more than replication_factor 1"}},
		{"min ISR above RF", Overrides{MinISR: num(4)},
			[]string{"with --min-isr=4: topics[0].min_insync_replicas: 4 is more than replication_factor 3"}},
		{"nodes below RF", Overrides{Nodes: num(2)},
			[]string{"with --nodes=2: topics[0].replication_factor: 3 is more than topology.nodes 2"}},
		{"idempotence with acks 1", Overrides{Acks: str("1"), Idempotence: &yes},
			[]string{"--acks=1 --idempotence=true: client.idempotence: true needs acks all (has acks 1)"}},
		{"duration before a step", Overrides{Duration: func() *time.Duration { d := 10 * time.Second; return &d }()},
			[]string{"faults.timeline[0].at: 20s is not before the end of the run (duration 10s)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Default().Override(c.o)
			if err == nil {
				t.Fatalf("no error for %v", c.o.Strings())
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Errorf("error %T does not unwrap to Errors", err)
			}
		})
	}
}

func TestOverrideStrings(t *testing.T) {
	a, n, sd, d := "all", 2, int64(3), 90*time.Second
	got := strings.Join(Overrides{Acks: &a, MinISR: &n, Seed: &sd, Duration: &d}.Strings(), " ")
	if got != "--acks=all --min-isr=2 --seed=3 --duration=1m30s" {
		t.Errorf("Strings = %q", got)
	}
}
