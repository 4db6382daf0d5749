package nemesis

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/verity-kafka/verity/harness"
)

// Refs are what the catalogue's faults aim at: a partition (its leader, its followers, its
// fetch links), and optionally a transactional.id and a consumer group (their coordinators).
type Refs struct {
	Topic     string
	Partition int32
	TxnID     string // "" leaves out the transaction-coordinator faults
	Group     string // "" leaves out the group-coordinator faults
}

// Entry is one fault of the catalogue under a stable name that scenarios and the CLI use.
type Entry struct {
	Name  string
	Kind  string // process, network, toxic, ack-loss, compound, none
	Fault Fault
}

// Catalogue lists the built-in faults aimed at r, with default strengths that show their
// effect within a test on the harness's fast settings. Scenarios that want other strengths
// build the fault values directly.
func Catalogue(r Refs) []Entry {
	leader, follower := LeaderOf(r.Topic, r.Partition), FollowerOf(r.Topic, r.Partition)
	clientLeader := ClientLinksTo(leader)
	fetch := FetchLinksOf(r.Topic, r.Partition)
	es := []Entry{
		{"none", "none", None{}},

		{"kill-leader", "process", Kill{leader}},
		{"kill-follower", "process", Kill{follower}},
		{"kill-controller", "process", Kill{ActiveController()}},
		{"kill-random-minority", "process", Kill{RandomMinority()}},
		{"stop-leader", "process", Stop{leader}},
		{"stop-follower", "process", Stop{follower}},
		{"stop-followers", "process", Stop{FollowersOf(r.Topic, r.Partition)}},
		{"pause-leader", "process", Pause{leader}},
		{"pause-follower", "process", Pause{follower}},
		{"pause-controller", "process", Pause{ActiveController()}},
		{"rolling-bounce", "process", RollingBounce{}},
		{"rolling-bounce-hard", "process", RollingBounce{Hard: true}},
		{"disk-loss-follower", "process", DiskLoss{follower}},
		{"disk-loss-leader", "process", DiskLoss{leader}},

		{"isolate-leader", "network", Isolate{Target: leader}},
		{"isolate-follower", "network", Isolate{Target: follower}},
		{"isolate-controller", "network", Isolate{Target: ActiveController()}},
		{"isolate-leader-refuse", "network", Isolate{Target: leader, Cut: harness.CutRefuse}},
		{"split", "network", Split{}},
		{"bridge", "network", Bridge{}},
		{"leader-cut", "network", LeaderCut{Topic: r.Topic, Partition: r.Partition}},
		{"one-way-fetch-cut", "network", OneWayCut{From: follower, To: leader}},
		{"client-cut-leader", "network", ClientCut{Target: leader}},

		{"latency-client-leader", "toxic", Latency(clientLeader, 100*time.Millisecond, 20*time.Millisecond)},
		{"latency-fetch", "toxic", Latency(fetch, 200*time.Millisecond, 50*time.Millisecond)},
		{"bandwidth-fetch", "toxic", Bandwidth(fetch, 64)},
		{"bandwidth-client-leader", "toxic", Bandwidth(clientLeader, 64)},
		{"timeout-client-leader", "toxic", Timeout(clientLeader, 0)},
		{"timeout-fetch", "toxic", Timeout(fetch, 2*time.Second)},
		{"reset-peer-client-leader", "toxic", ResetPeer(clientLeader, 0)},
		{"slow-close-client-leader", "toxic", SlowClose(clientLeader, 2*time.Second)},
		{"limit-data-client-leader", "toxic", LimitData(clientLeader, 64<<10)},

		{"ack-loss", "ack-loss", AckLoss{Target: leader}},
		{"ack-loss-hold", "ack-loss", AckLoss{Target: leader, Hold: true}},

		{"stop-follower+latency-client-leader", "compound", Both(Stop{follower}, Latency(clientLeader, 100*time.Millisecond, 0))},
		{"pause-follower+ack-loss", "compound", Both(Pause{follower}, AckLoss{Target: leader})},
	}
	if r.TxnID != "" {
		tc := TxnCoordinator(r.TxnID)
		es = append(es,
			Entry{"kill-txn-coordinator", "process", Kill{tc}},
			Entry{"pause-txn-coordinator", "process", Pause{tc}},
			Entry{"isolate-txn-coordinator", "network", Isolate{Target: tc}})
	}
	if r.Group != "" {
		gc := GroupCoordinator(r.Group)
		es = append(es,
			Entry{"kill-group-coordinator", "process", Kill{gc}},
			Entry{"isolate-group-coordinator", "network", Isolate{Target: gc}})
	}
	return es
}

// Lookup returns the catalogue fault called name, aimed at r.
func Lookup(r Refs, name string) (Fault, error) {
	var names []string
	for _, e := range Catalogue(r) {
		if e.Name == name {
			return e.Fault, nil
		}
		names = append(names, e.Name)
	}
	slices.Sort(names)
	return nil, fmt.Errorf("no fault %q in the catalogue (for %+v); known: %s", name, r, strings.Join(names, ", "))
}
