package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkatoxic"
	"github.com/verity-kafka/verity/lazyfs/control"
)

// setup is a 3-node combined fake cluster with t-0 led by 1 (replicas 1,2,3, full ISR), a
// nemesis on it and its history.
func setup(t *testing.T, brokers int, dedicated bool) (*fakeCluster, *fakeLocator, *Nemesis, *memHistory) {
	t.Helper()
	fc := newFake(brokers, dedicated)
	var reps []int32
	for _, b := range fc.brokers {
		reps = append(reps, int32(b))
	}
	fc.setPartition("t", 0, 1, reps, reps)
	fl := &fakeLocator{controller: fc.controllers[0], epoch: 7, txn: map[string]int{"tx": 2}, group: map[string]int{"g": 3},
		share: map[string]int{"sg t-0": 2}, minISR: 2}
	h := newMemHistory(t)
	n := New(fc, h.w, Options{Seed: 42, Locator: fl})
	t.Cleanup(func() { _ = n.Close() })
	return fc, fl, n, h
}

func TestProcessFaultsRecordInvokeOKAndHeal(t *testing.T) {
	ctx := t.Context()
	cases := []struct {
		fault      Fault
		down       harness.NodeState
		inject     string
		heal       string
		nodes      []int
		roleSubstr string
	}{
		{Kill{LeaderOf("t", 0)}, harness.NodeStopped, "kill", "start", []int{1}, "leader of t-0 (epoch 3"},
		{Stop{Node(3)}, harness.NodeStopped, "stop", "start", []int{3}, "node 3"},
		{Pause{FollowersOf("t", 0)}, harness.NodePaused, "pause", "resume", []int{2, 3}, "followers of t-0"},
		{Kill{ActiveController()}, harness.NodeStopped, "kill", "start", []int{1}, "active controller (quorum epoch 7)"},
		{Kill{TxnCoordinator("tx")}, harness.NodeStopped, "kill", "start", []int{2}, `transaction coordinator of "tx"`},
		{Stop{GroupCoordinator("g")}, harness.NodeStopped, "stop", "start", []int{3}, `group coordinator of "g"`},
		{Kill{ShareCoordinator("sg", "t", 0)}, harness.NodeStopped, "kill", "start", []int{2}, "share coordinator of sg t-0 (leader 2)"},
		{Kill{ReplicasOf("t", 0)}, harness.NodeStopped, "kill", "start", []int{1, 2, 3}, "replicas of t-0 (leader 1"},
		{Kill{Controllers()}, harness.NodeStopped, "kill", "start", []int{1, 2, 3}, "every controller [1 2 3]"},
	}
	for _, tc := range cases {
		t.Run(tc.fault.String(), func(t *testing.T) {
			fc, _, n, h := setup(t, 3, false)
			inj, err := n.Inject(ctx, tc.fault)
			require.NoError(t, err)
			for _, id := range tc.nodes {
				require.Equal(t, tc.down, fc.NodeStates()[id])
			}
			require.Equal(t, tc.nodes, inj.Nodes())
			require.False(t, inj.InPlace.Before(inj.Called))
			require.Len(t, n.Active(), 1)
			require.NoError(t, n.Heal(ctx, inj))
			require.NoError(t, n.Heal(ctx, inj), "healing twice is a no-op")
			for _, id := range tc.nodes {
				require.Equal(t, harness.NodeRunning, fc.NodeStates()[id])
			}
			require.Empty(t, n.Active())
			es := h.events(t)
			require.Equal(t, []string{
				"invoke " + tc.inject + " " + fmtNodes(tc.nodes), "ok " + tc.inject + " " + fmtNodes(tc.nodes),
				"invoke " + tc.heal + " " + fmtNodes(tc.nodes), "ok " + tc.heal + " " + fmtNodes(tc.nodes),
			}, short(es))
			require.Contains(t, es[0].T.Role, tc.roleSubstr)
			require.Equal(t, tc.fault.Name(), es[2].T.Fault, "the heal names the fault it heals")
		})
	}
}

func fmtNodes(ns []int) string {
	b, _ := json.Marshal(ns)
	return strings.ReplaceAll(strings.ReplaceAll(string(b), ",", " "), "\"", "")
}

// The event value is history.Faults (plus fields the format allows to add).
func TestTargetsDecodeAsHistoryFaults(t *testing.T) {
	tg := Targets{Nodes: []int{2}, Links: [][2]string{{"client", "2"}, {"1", "2"}}, Toxic: map[string]any{"type": "latency"},
		Note: "n", Cut: "blackhole", Role: "leader of t-0"}
	b, err := json.Marshal(tg)
	require.NoError(t, err)
	var f history.Faults
	require.NoError(t, json.Unmarshal(b, &f))
	require.Equal(t, tg.Faults(), f)
	require.JSONEq(t, `{"nodes":[2],"links":[["client","2"],["1","2"]],"toxic":{"type":"latency"},"note":"n","cut":"blackhole","role":"leader of t-0"}`, string(b))
}

func TestFailedActionRecordsInfoAndIsUndone(t *testing.T) {
	fc, _, n, h := setup(t, 3, false)
	fc.failOn = "kill 3"
	_, err := n.Inject(t.Context(), Kill{FollowersOf("t", 0)})
	require.ErrorContains(t, err, "injected failure of kill 3")
	es := h.events(t)
	// Node 3's kill failed and it still runs: the undo starts node 2 alone.
	require.Equal(t, []string{"invoke kill [2 3]", "info kill [2 3]", "invoke start [2]", "ok start [2]"}, short(es))
	require.Contains(t, es[1].Err, "kill 3")
	require.Empty(t, n.Active())
	require.Equal(t, harness.NodeRunning, fc.NodeStates()[2])
}

func TestUnresolvableTargetRecordsNothing(t *testing.T) {
	_, _, n, h := setup(t, 3, false)
	_, err := n.Inject(t.Context(), Kill{LeaderOf("missing", 0)})
	require.ErrorContains(t, err, "no partition")
	require.Empty(t, h.events(t))
}

func cutSet(fc *fakeCluster) []string {
	var out []string
	for l := range fc.Cuts() {
		out = append(out, l.String())
	}
	slices.Sort(out)
	return out
}

func TestNetworkFaultsCutTheRightLinks(t *testing.T) {
	ctx := t.Context()
	t.Run("isolate", func(t *testing.T) {
		fc, _, n, h := setup(t, 3, false)
		inj, err := n.Inject(ctx, Isolate{Target: LeaderOf("t", 0)})
		require.NoError(t, err)
		require.Equal(t, []string{"1->2", "1->3", "2->1", "3->1"}, cutSet(fc))
		es := h.events(t)
		require.Equal(t, "blackhole", es[0].T.Cut)
		require.ElementsMatch(t, [][2]string{{"1", "2"}, {"1", "3"}, {"2", "1"}, {"3", "1"}}, es[0].T.Links)
		require.NoError(t, n.Heal(ctx, inj))
		require.Empty(t, cutSet(fc))
		require.Equal(t, []string{"invoke isolate [1]", "ok isolate [1]", "invoke heal [1]", "ok heal [1]"}, short(h.events(t)))
	})
	t.Run("isolate refusing", func(t *testing.T) {
		fc, _, n, _ := setup(t, 3, false)
		_, err := n.Inject(ctx, Isolate{Target: Node(2), Cut: harness.CutRefuse})
		require.NoError(t, err)
		for _, k := range fc.Cuts() {
			require.Equal(t, harness.CutRefuse, k)
		}
	})
	t.Run("split of 5", func(t *testing.T) {
		fc, _, n, h := setup(t, 5, false)
		_, err := n.Inject(ctx, Split{})
		require.NoError(t, err)
		minority := h.events(t)[0].T.Nodes
		require.Len(t, minority, 2)
		majority := without(allNodes(fc), minority...)
		for _, l := range fc.Links() {
			_, cut := fc.Cuts()[l]
			across := l.From != harness.ClientEndpoint && slices.Contains(minority, l.From) != slices.Contains(minority, l.To)
			require.Equal(t, across, cut, "link %s (minority %v, majority %v)", l, minority, majority)
		}
	})
	t.Run("split with dedicated controllers keeps a controller majority", func(t *testing.T) {
		fc, _, n, h := setup(t, 3, true)
		_, err := n.Inject(ctx, Split{})
		require.NoError(t, err)
		minority := h.events(t)[0].T.Nodes
		require.Len(t, minority, 2, "one broker and one controller")
		ctl := 0
		for _, id := range minority {
			if id > 100 {
				ctl++
			}
		}
		require.Equal(t, 1, ctl)
		require.NotEmpty(t, fc.Cuts())
	})
	t.Run("bridge of 5", func(t *testing.T) {
		fc, _, n, h := setup(t, 5, false)
		_, err := n.Inject(ctx, Bridge{})
		require.NoError(t, err)
		middle := h.events(t)[0].T.Nodes[0]
		cuts := fc.Cuts()
		for _, l := range fc.Links() {
			if l.From == middle || l.To == middle || l.From == harness.ClientEndpoint {
				require.NotContains(t, cuts, l, "the middle node and clients keep every link")
			}
		}
		require.Len(t, cuts, 8, "2x2 nodes, both ways")
	})
	t.Run("leader cut keeps client links", func(t *testing.T) {
		fc, _, n, _ := setup(t, 3, false)
		fc.setPartition("t", 0, 2, []int32{1, 2, 3}, []int32{1, 2, 3})
		_, err := n.Inject(ctx, LeaderCut{Topic: "t", Partition: 0})
		require.NoError(t, err)
		require.Equal(t, []string{"1->2", "2->1", "2->3", "3->2"}, cutSet(fc))
	})
	t.Run("one-way cut", func(t *testing.T) {
		fc, _, n, _ := setup(t, 3, false)
		_, err := n.Inject(ctx, OneWayCut{From: Node(3), To: LeaderOf("t", 0)})
		require.NoError(t, err)
		require.Equal(t, []string{"3->1"}, cutSet(fc))
	})
	t.Run("client cut", func(t *testing.T) {
		fc, _, n, _ := setup(t, 3, false)
		_, err := n.Inject(ctx, ClientCut{Target: LeaderOf("t", 0)})
		require.NoError(t, err)
		require.Equal(t, []string{"client->1"}, cutSet(fc))
	})
}

// Two faults that cut one link: healing the first leaves the link cut for the second.
func TestOverlappingCutsHealOneByOne(t *testing.T) {
	ctx := t.Context()
	fc, _, n, _ := setup(t, 3, false)
	iso, err := n.Inject(ctx, Isolate{Target: Node(1)})
	require.NoError(t, err)
	one, err := n.Inject(ctx, OneWayCut{From: Node(2), To: Node(1)})
	require.NoError(t, err)
	require.NoError(t, n.Heal(ctx, iso))
	require.Equal(t, []string{"2->1"}, cutSet(fc))
	require.NoError(t, n.Heal(ctx, one))
	require.Empty(t, cutSet(fc))
}

func TestToxicsAndAckLoss(t *testing.T) {
	ctx := t.Context()
	fc, _, n, h := setup(t, 3, false)
	client1 := harness.Link{From: harness.ClientEndpoint, To: 1}

	ack, err := n.Inject(ctx, AckLoss{Target: LeaderOf("t", 0)})
	require.NoError(t, err)
	lat, err := n.Inject(ctx, Latency(ClientLinksTo(LeaderOf("t", 0)), 300*time.Millisecond, 10*time.Millisecond))
	require.NoError(t, err)
	tx := fc.Toxics()[client1]
	require.Len(t, tx, 2, "two toxics on one link, under different names")
	require.NotEqual(t, tx[0].Name, tx[1].Name)
	require.Equal(t, "limit_data", tx[0].Type)
	require.Equal(t, "downstream", tx[0].Stream, "ack loss drops answers only; requests still arrive")
	require.EqualValues(t, 0, tx[0].Attributes["bytes"])
	require.Equal(t, "latency", tx[1].Type)

	es := h.events(t)
	require.Equal(t, "ack-loss", es[0].F)
	require.Equal(t, [][2]string{{"client", "1"}}, es[0].T.Links)
	require.Equal(t, "limit_data", es[0].T.Toxic["type"])
	require.Equal(t, "latency", es[2].F)
	require.EqualValues(t, 300, es[2].T.Toxic["attributes"].(map[string]any)["latency"])

	require.NoError(t, n.Heal(ctx, ack))
	require.Len(t, fc.Toxics()[client1], 1, "the latency stays")
	require.NoError(t, n.Heal(ctx, lat))
	require.Empty(t, fc.Toxics())

	hold, err := n.Inject(ctx, AckLoss{Target: Node(2), Hold: true})
	require.NoError(t, err)
	tx = fc.Toxics()[harness.Link{From: harness.ClientEndpoint, To: 2}]
	require.Equal(t, "timeout", tx[0].Type)
	require.EqualValues(t, 0, tx[0].Attributes["timeout"])
	require.NoError(t, n.Heal(ctx, hold))
}

func TestEveryToxicConstructor(t *testing.T) {
	ctx := t.Context()
	links := FetchLinksOf("t", 0)
	for _, f := range []LinkToxic{
		Latency(links, time.Second, 0), Bandwidth(links, 10), Timeout(links, 0), ResetPeer(links, 0),
		SlowClose(links, time.Second), LimitData(links, 100),
	} {
		t.Run(f.Kind, func(t *testing.T) {
			fc, _, n, h := setup(t, 3, false)
			inj, err := n.Inject(ctx, f)
			require.NoError(t, err)
			require.Len(t, fc.Toxics(), 2, "the fetch links of both followers")
			for l, ts := range fc.Toxics() {
				require.Equal(t, 1, l.To, "fetch links go follower -> leader")
				require.Len(t, ts, len(f.Toxics))
			}
			require.NoError(t, n.Heal(ctx, inj))
			require.Empty(t, fc.Toxics())
			require.Equal(t, f.Kind, h.events(t)[0].F)
		})
	}
}

func TestCompound(t *testing.T) {
	ctx := t.Context()
	t.Run("both parts, healed in reverse", func(t *testing.T) {
		fc, _, n, h := setup(t, 3, false)
		inj, err := n.Inject(ctx, Both(Stop{FollowerOf("t", 0)}, Latency(ClientLinksTo(LeaderOf("t", 0)), time.Second, 0)))
		require.NoError(t, err)
		require.Len(t, fc.Toxics(), 1)
		require.NoError(t, n.Heal(ctx, inj))
		fs := []string{}
		for _, e := range h.events(t) {
			if e.Type == history.OK {
				fs = append(fs, e.F)
			}
		}
		require.Equal(t, []string{"stop", "latency", "heal", "start"}, fs)
	})
	t.Run("a part that fails undoes the others", func(t *testing.T) {
		fc, _, n, h := setup(t, 3, false)
		_, err := n.Inject(ctx, Both(Stop{Node(2)}, Kill{LeaderOf("nope", 0)}))
		require.Error(t, err)
		require.Equal(t, []string{"invoke stop [2]", "ok stop [2]", "invoke start [2]", "ok start [2]"}, short(h.events(t)))
		require.Equal(t, harness.NodeRunning, fc.NodeStates()[2])
	})
	t.Run("none records nothing", func(t *testing.T) {
		_, _, n, h := setup(t, 3, false)
		inj, err := n.Inject(ctx, None{})
		require.NoError(t, err)
		require.Zero(t, inj.Latency())
		require.NoError(t, n.Heal(ctx, inj))
		require.Empty(t, h.events(t))
	})
}

func TestDiskLossAndRollingBounce(t *testing.T) {
	ctx := t.Context()
	t.Run("disk loss", func(t *testing.T) {
		fc, _, n, h := setup(t, 3, false)
		inj, err := n.Inject(ctx, DiskLoss{FollowerOf("t", 0)})
		require.NoError(t, err)
		require.NoError(t, n.Heal(ctx, inj))
		es := h.events(t)
		require.Len(t, es, 2, "one event; nothing to heal")
		require.Equal(t, "disk-loss", es[0].F, "the name verify counts disk losses by")
		require.Contains(t, fc.Calls(), "wipe "+fmtNodes(es[0].T.Nodes)[1:2])
	})
	t.Run("power loss: the start's completion says what each node dropped", func(t *testing.T) {
		fc, _, n, h := setup(t, 3, false)
		fc.powerLoss = true
		inj, err := n.Inject(ctx, PowerLoss{FollowersOf("t", 0)})
		require.NoError(t, err)
		require.Equal(t, harness.NodeStopped, fc.NodeStates()[2])
		require.NoError(t, n.Heal(ctx, inj))
		es := h.events(t)
		require.Equal(t, []string{"invoke power-loss [2 3]", "ok power-loss [2 3]", "invoke start [2 3]", "ok start [2 3]"}, short(es))
		require.Empty(t, es[2].T.Dropped, "nothing is known before the start")
		require.Equal(t, map[int]harness.Drop{2: {Files: 2, Bytes: 2000}, 3: {Files: 3, Bytes: 3000}}, es[3].T.Dropped)
		require.Equal(t, "power-loss", es[3].T.Fault)

		inj, err = n.Inject(ctx, Kill{Node(2)})
		require.NoError(t, err)
		require.NoError(t, n.Heal(ctx, inj))
		require.Empty(t, h.events(t)[7].T.Dropped, "a kill's start drops nothing")
	})
	t.Run("disk fault: the inject carries the rules, the heal what they did on each node", func(t *testing.T) {
		fc, _, n, h := setup(t, 3, false)
		rules := control.Faults{Rules: []control.DiskFault{{Kind: control.KindError, Op: control.OpWrite, Path: "t-0/*"}}}
		_, err := n.Inject(ctx, DiskFault{Fault: "disk-error", Target: Node(2), Rules: rules})
		require.ErrorContains(t, err, "lazy filesystem", "refused without the lazy filesystem")
		fc.powerLoss = true
		inj, err := n.Inject(ctx, DiskFault{Fault: "disk-error", Target: Node(2), Rules: rules})
		require.NoError(t, err)
		require.NoError(t, n.Heal(ctx, inj))
		es := h.events(t)
		require.Equal(t, []string{"invoke disk-error [2]", "ok disk-error [2]", "invoke heal [2]", "ok heal [2]", "invoke start [2]", "ok start [2]"}, short(es),
			"a broker that runs on after a failed call is restarted, so that its failed directory comes back")
		require.Equal(t, rules.Rules, es[0].T.DiskRules)
		require.EqualValues(t, 2, es[3].T.Disk[2].Rules[0].Hits)
		require.Equal(t, "disk-error", es[3].T.Fault)
		require.Contains(t, es[4].T.Note, "offline")
		require.Equal(t, []string{"disk-faults 2 1 rules", "disk-clear 2", "stop 2", "start 2"}, fc.Calls())

		fc.diskHalts = map[int]bool{3: true}
		inj, err = n.Inject(ctx, DiskFault{Fault: "disk-full", Target: Node(3), Rules: rules})
		require.NoError(t, err)
		require.NoError(t, n.Heal(ctx, inj))
		require.Equal(t, []string{"invoke disk-full [3]", "ok disk-full [3]", "invoke heal [3]", "ok heal [3]", "invoke start [3]", "ok start [3]"},
			short(h.events(t)[6:]), "a broker the fault stopped is started, once")
		require.Equal(t, harness.NodeRunning, fc.NodeStates()[3])

		slow := control.Faults{Rules: []control.DiskFault{{Kind: control.KindSlow, Op: control.OpFsync, Path: "**", Delay: "1s"}}}
		inj, err = n.Inject(ctx, DiskFault{Fault: "slow-disk", Target: Node(1), Rules: slow})
		require.NoError(t, err)
		require.NoError(t, n.Heal(ctx, inj))
		require.Equal(t, []string{"invoke slow-disk [1]", "ok slow-disk [1]", "invoke heal [1]", "ok heal [1]"},
			short(h.events(t)[12:]), "a delay fails nothing: no restart")

		// A set that failed leaves the node reporting the rules of the fault before (on node 2,
		// which failed calls): they are not this fault's, and the node is not restarted.
		fc.diskSetFail = true
		_, err = n.Inject(ctx, DiskFault{Fault: "disk-error", Target: Node(2), Rules: rules})
		require.Error(t, err, "the inject fails, and heals what it may have set")
		require.Equal(t, []string{"invoke disk-error [2]", "info disk-error [2]", "invoke heal [2]", "ok heal [2]"}, short(h.events(t)[16:]))
		for _, e := range h.events(t)[16:] {
			require.NotEqual(t, "start", e.F, "a restart for the rules of an earlier fault")
		}
	})
	t.Run("rolling upgrade: brokers then controllers, gated, then metadata.version finalized", func(t *testing.T) {
		fc, _, n, h := setup(t, 3, true)
		_, err := n.Inject(ctx, RollingUpgrade{To: "4.4.0"})
		require.NoError(t, err)
		var calls []string
		for _, c := range fc.Calls() {
			if !strings.HasPrefix(c, "cut") {
				calls = append(calls, c)
			}
		}
		require.Equal(t, []string{"upgrade 1 4.4.0", "upgrade 2 4.4.0", "upgrade 3 4.4.0", "upgrade 101 4.4.0", "upgrade 102 4.4.0",
			"upgrade 103 4.4.0", "set-features metadata.version=30"}, calls)
		require.Equal(t, 6, fc.healthy, "a health gate after every node")
		es := h.events(t)
		require.Equal(t, "finalize-features", es[len(es)-1].F)
		require.Contains(t, es[len(es)-1].T.Note, "metadata.version=30 (from 29)")
		require.Error(t, RollingUpgrade{To: "4.3.1"}.Available(fc), "the fake runs the default release: no upgrade to it")
	})
	t.Run("rolling bounce, one node at a time, seeded order", func(t *testing.T) {
		orders := map[bool][]string{}
		for _, hard := range []bool{false, true} {
			fc, _, n, h := setup(t, 3, false)
			_, err := n.Inject(ctx, RollingBounce{Hard: hard})
			require.NoError(t, err)
			var calls []string
			for _, c := range fc.Calls() {
				if !strings.HasPrefix(c, "cut") {
					calls = append(calls, c)
				}
			}
			require.Len(t, calls, 6)
			down := "stop"
			if hard {
				down = "kill"
			}
			for i := 0; i < 6; i += 2 {
				require.True(t, strings.HasPrefix(calls[i], down), calls)
				require.Equal(t, "start"+strings.TrimPrefix(calls[i], down), calls[i+1], "each node back before the next")
			}
			require.Equal(t, 2, fc.healthy, "a health gate between nodes")
			require.Equal(t, RollingBounce{Hard: hard}.Name(), h.events(t)[0].T.Fault)
			var order []string
			for i := 0; i < 6; i += 2 {
				order = append(order, strings.Fields(calls[i])[1])
			}
			orders[hard] = order
		}
		// Same seed, same injection number: same order.
		require.Equal(t, orders[false], orders[true])
	})
	t.Run("rolling bounce stops when the cluster does not heal", func(t *testing.T) {
		fc, _, n, _ := setup(t, 3, false)
		fc.unhealthy = context.DeadlineExceeded
		_, err := n.Inject(ctx, RollingBounce{Gate: 20 * time.Millisecond})
		require.ErrorContains(t, err, "bounce stops here")
		require.Equal(t, []string{"stop 2", "start 2", "reset admin"}, fc.Calls()[:3], "no second node goes down")
		for _, c := range fc.Calls()[3:] {
			require.Equal(t, "reset admin", c)
		}
	})
}

func TestAvailable(t *testing.T) {
	one, two, three := newFake(1, false), newFake(2, false), newFake(3, false)
	require.Error(t, Split{}.Available(two))
	require.NoError(t, Split{}.Available(three))
	require.Error(t, Bridge{}.Available(two))
	require.Error(t, DiskLoss{Node(1)}.Available(one))
	require.ErrorContains(t, PowerLoss{Node(1)}.Available(three), "lazy filesystem")
	// The request toxic needs a Toxiproxy image that has it (Verity's stand-in).
	drop := DropRequest(ClientLinksTo(Node(1)), kafkatoxic.Request{Key: 0}, 1)
	require.ErrorIs(t, drop.Available(three), harness.ErrNoRequestToxic)
	three.images.Toxics = []string{kafkatoxic.Type}
	require.NoError(t, drop.Available(three))
	require.Error(t, RollingBounce{}.Available(one))
	require.Error(t, Kill{Node(9)}.Available(three))
	require.Error(t, Isolate{Target: Node(1)}.Available(one))
	require.Error(t, Kill{FollowerOf("t", 0)}.Available(one))
	require.Error(t, Compound{}.Available(three))
	require.Error(t, Both(Split{}, None{}).Available(two))
	require.Error(t, LinkToxic{Kind: "x", Links: Links(harness.Link{From: 1, To: 2})}.Available(three), "no toxic")
	require.Error(t, Latency(Links(harness.Link{From: 1, To: 9}), time.Second, 0).Available(three))
	require.NoError(t, Split{}.Available(newFake(3, true)))

	_, _, n, h := setup(t, 2, false)
	_, err := n.Inject(t.Context(), Split{})
	require.ErrorContains(t, err, "not available")
	require.Empty(t, h.events(t))
}

// Random choices come from the seed: the same seed picks the same targets, another seed (over
// a few tries) picks others.
func TestTargetsAreSeeded(t *testing.T) {
	picks := func(seed int64) []int {
		fc := newFake(5, false)
		fc.setPartition("t", 0, 1, []int32{1, 2, 3, 4, 5}, []int32{1, 2, 3, 4, 5})
		h := newMemHistory(t)
		n := New(fc, h.w, Options{Seed: seed, Locator: &fakeLocator{}})
		var out []int
		for _, f := range []Fault{Pause{FollowerOf("t", 0)}, Pause{RandomMinority()}, Pause{RandomBroker()}, Split{}, Bridge{}} {
			inj, err := n.Inject(t.Context(), f)
			require.NoError(t, err)
			out = append(out, inj.Nodes()...)
			require.NoError(t, n.Heal(t.Context(), inj))
		}
		return out
	}
	a := picks(7)
	require.Equal(t, a, picks(7))
	differ := false
	for s := int64(8); s < 12 && !differ; s++ {
		differ = !slices.Equal(a, picks(s))
	}
	require.True(t, differ, "other seeds should pick other nodes")
}

func TestRecover(t *testing.T) {
	ctx := t.Context()
	t.Run("healthy", func(t *testing.T) {
		fc, _, n, h := setup(t, 3, false)
		_, err := n.Inject(ctx, Kill{Node(2)})
		require.NoError(t, err)
		fc.setState(3, harness.NodePaused) // a fault the nemesis did not make: heal-all still undoes it
		r := n.Recover(ctx, time.Second)
		require.True(t, r.Healthy, "%v", r.Err)
		require.Empty(t, r.UnknownReason())
		require.Empty(t, n.Active())
		require.Equal(t, []string{
			"invoke kill [2]", "ok kill [2]", "invoke start [2]", "ok start [2]",
			"invoke heal-all [3]", "ok heal-all [3]", "invoke healthy []", "ok healthy []",
		}, short(h.events(t)))
	})
	t.Run("not healthy in time: the run cannot pass", func(t *testing.T) {
		fc, _, n, h := setup(t, 3, false)
		fc.unhealthy = context.DeadlineExceeded
		r := n.Recover(ctx, 50*time.Millisecond)
		require.False(t, r.Healthy)
		require.Contains(t, r.UnknownReason(), "cannot pass")
		es := h.events(t)
		last := es[len(es)-1]
		require.Equal(t, history.Fail, last.Type)
		require.Equal(t, "healthy", last.F)
		require.Contains(t, last.Err, "not healthy")
	})
	t.Run("a stuck admin client is reset between health checks", func(t *testing.T) {
		fc, _, n, _ := setup(t, 3, false)
		fc.failHealthy = 2
		r := n.Recover(ctx, 10*time.Second)
		require.True(t, r.Healthy, "%v", r.Err)
		require.Equal(t, 3, fc.healthy)
		require.Equal(t, 2, strings.Count(strings.Join(fc.Calls(), ","), "reset admin"))
	})
	t.Run("runs even after the run's context ended", func(t *testing.T) {
		fc, _, n, _ := setup(t, 3, false)
		_, err := n.Inject(ctx, Pause{Node(1)})
		require.NoError(t, err)
		done, cancel := context.WithCancel(ctx)
		cancel()
		r := n.Recover(done, time.Second)
		require.True(t, r.Healthy, "%v", r.Err)
		require.Equal(t, harness.NodeRunning, fc.NodeStates()[1])
	})
}

func TestFaultsOnAFake(t *testing.T) {
	r := refs{Topic: "t", Partition: 0, TxnID: "tx", Group: "g"}
	seen := map[string]bool{}
	fc := newFake(3, false)
	for _, e := range testFaults(r) {
		require.False(t, seen[e.Name], "duplicate name %s", e.Name)
		seen[e.Name] = true
		require.NoError(t, e.Fault.Available(fc), e.Name)
		f, err := lookup(r, e.Name)
		require.NoError(t, err)
		require.Equal(t, e.Fault.String(), f.String())
	}
	_, err := lookup(r, "nope")
	require.ErrorContains(t, err, "kill-leader")
	require.NotContains(t, names(testFaults(refs{Topic: "t"})), "kill-txn-coordinator")

	// Every catalogue fault injects and heals on the fake, and the cluster is back as it was.
	for _, e := range testFaults(r) {
		if strings.HasPrefix(e.Name, "rolling") {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			fc, _, n, h := setup(t, 3, false)
			inj, err := n.Inject(t.Context(), e.Fault)
			require.NoError(t, err)
			require.NoError(t, n.Heal(t.Context(), inj))
			require.Empty(t, fc.Cuts())
			require.Empty(t, fc.Toxics())
			for id, s := range fc.NodeStates() {
				require.Equal(t, harness.NodeRunning, s, "node %d", id)
			}
			es := h.events(t)
			require.Zero(t, len(es)%2, "invoke/ok pairs")
			for i := 0; i < len(es); i += 2 {
				require.Equal(t, history.Invoke, es[i].Type)
				require.Equal(t, history.OK, es[i+1].Type)
				require.Equal(t, es[i].F, es[i+1].F)
			}
		})
	}
}

func names(es []entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name)
	}
	return out
}

// refs are what the test faults aim at: a partition (its leader, its followers, its fetch
// links), and optionally a transactional.id and a consumer group (their coordinators).
type refs struct {
	Topic     string
	Partition int32
	TxnID     string // "" leaves out the transaction-coordinator faults
	Group     string // "" leaves out the group-coordinator faults
}

// entry is one test fault under a name.
type entry struct {
	Name  string
	Kind  string // process, network, toxic, ack-loss, compound, none
	Fault Fault
}

// testFaults are fault values of every kind aimed at r, with strengths that show their effect
// within a test on the harness's fast settings. (The catalogue that scenarios and the CLI use
// is scenarios.FaultSpecs, which builds these values.)
func testFaults(r refs) []entry {
	leader, follower := LeaderOf(r.Topic, r.Partition), FollowerOf(r.Topic, r.Partition)
	clientLeader := ClientLinksTo(leader)
	fetch := FetchLinksOf(r.Topic, r.Partition)
	es := []entry{
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
			entry{"kill-txn-coordinator", "process", Kill{tc}},
			entry{"pause-txn-coordinator", "process", Pause{tc}},
			entry{"isolate-txn-coordinator", "network", Isolate{Target: tc}})
	}
	if r.Group != "" {
		gc := GroupCoordinator(r.Group)
		es = append(es,
			entry{"kill-group-coordinator", "process", Kill{gc}},
			entry{"isolate-group-coordinator", "network", Isolate{Target: gc}})
	}
	return es
}

// lookup returns the test fault called name, aimed at r.
func lookup(r refs, name string) (Fault, error) {
	var names []string
	for _, e := range testFaults(r) {
		if e.Name == name {
			return e.Fault, nil
		}
		names = append(names, e.Name)
	}
	slices.Sort(names)
	return nil, fmt.Errorf("no fault %q (for %+v); known: %s", name, r, strings.Join(names, ", "))
}

// A leader that refuses the stray produce is the outcome the fault looks for (verification on):
// the event completes info with the refusal and the injection succeeds; a produce that could
// not be sent at all is a failed injection.
func TestStrayRefusalIsAnOutcome(t *testing.T) {
	f := StrayTxnProduce{Topic: "txn", Partition: 0}
	t.Run("refused", func(t *testing.T) {
		fc, _, n, h := setup(t, 3, false)
		fc.refuseStray = true
		_, err := n.Inject(t.Context(), f)
		require.NoError(t, err)
		ev := h.events(t)
		require.Len(t, ev, 2)
		require.Equal(t, history.Info, ev[1].Type)
		require.Contains(t, ev[1].Err, "TRANSACTION_ABORTABLE")
	})
	t.Run("not sent", func(t *testing.T) {
		fc, _, n, h := setup(t, 3, false)
		fc.failOn = "stray txn-0 verity-stray-txn"
		_, err := n.Inject(t.Context(), f)
		require.ErrorContains(t, err, "injected failure of stray txn-0")
		require.Equal(t, history.Info, h.events(t)[1].Type)
	})
}

// A toxic fault reads as settings in progress lines and fault lists, not as Go's map syntax.
func TestToxicFaultReadsAsSettings(t *testing.T) {
	got := Latency(FetchLinksOf("t", 0), 300*time.Millisecond, 0).String()
	require.Contains(t, got, "latency downstream jitter=0 latency=300", got)
	require.NotContains(t, got, "map[", got)
}
