package workloads

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
	"github.com/verity-kafka/verity/workloads/kclient/franz"
)

// shareReleases runs the share-group test on a cluster of each release named (comma-separated),
// beside the default release's run in TestOnCluster: go test ./workloads -run
// TestFranzShareReleases -share-releases=4.2.2,4.4.0.
var shareReleases = flag.String("share-releases", "", "Kafka releases to run the share-group test on, each on a cluster of its own")

func TestFranzShareReleases(t *testing.T) {
	if *shareReleases == "" {
		t.Skip("no -share-releases given; TestOnCluster runs the share-group test on the default release")
	}
	for _, v := range strings.Split(*shareReleases, ",") {
		t.Run(v, func(t *testing.T) {
			c := harnesstest.Start(t, harness.Spec{Nodes: 3, KafkaVersion: kafkaconf.KafkaVersion(strings.TrimSpace(v))})
			log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
			t.Run("accept, release, reject, crash", func(t *testing.T) { testFranzShare(t, c, log) })
			t.Run("acknowledgement after the lock ended", func(t *testing.T) { testFranzShareLockEnd(t, c, log) })
		})
	}
}

// shareSeen is what the share test's members saw, in the order they saw it (under one lock, so
// that the deliveries of one record by two members are in the broker's order: a record is
// acquired again only after the poll that returned it and the acknowledgement that gave it back).
type shareSeen struct {
	mu         sync.Mutex
	deliveries map[tpo][]shareDelivery
	commits    []shareCommit
	// settled are the records an ok commit accepted or rejected, each with its count.
	settled map[tpo]int
}

func (s *shareSeen) settledCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.settled)
}

type shareDelivery struct {
	member string
	count  int
	at     time.Time
}

type shareCommit struct {
	member string
	res    kclient.AckResult
}

func (s *shareSeen) delivered(member string, ds []kclient.Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for _, d := range ds {
		k := at(d.Record)
		s.deliveries[k] = append(s.deliveries[k], shareDelivery{member, d.Count, now})
	}
}

func (s *shareSeen) committed(member string, rs []kclient.AckResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rs {
		s.commits = append(s.commits, shareCommit{member, r})
		if r.Type != history.OK {
			continue
		}
		for _, a := range r.Acks {
			if a.Type == kclient.AckAccept || a.Type == kclient.AckReject {
				s.settled[tpo{r.Topic, r.Partition, a.Offset}]++
			}
		}
	}
}

// testFranzShare runs franz-go's share consumer through the seam on a share group: a member that
// crashes holding what it polled, then two members until every record is accepted or rejected,
// one accepting half of what it gets the first or second time and releasing the rest, the other
// rejecting every fifth offset and accepting the rest. It needs nothing of the cluster beyond
// what a 4.2 or later release finalizes on a new cluster (share.version=1).
//
// What the crashed member held comes back as soon as its connection closes, but the coordinator
// keeps it in the group, with its share of the partitions (one each, with three members and
// three partitions), until its session times out (group.share.session.timeout.ms, 45 s and its
// least by default): nobody reads those partitions meanwhile, so the test takes about a minute.
func testFranzShare(t *testing.T, c *harness.Cluster, log *slog.Logger) {
	var client kclient.Client = franz.New(func(id string) []kgo.Opt { return franz.Base(c.Bootstrap(), id) }, "")
	sc, ok := client.(kclient.ShareClient)
	require.True(t, ok, "franz-go is a kclient.ShareClient")
	testShare(t, c, log, sc, "fs")
}

// shareProgram starts client's program (Kafka's Java client) on c for one test, as its share
// client.
func shareProgram(t *testing.T, c *harness.Cluster, log *slog.Logger, client kafkaconf.ClientName) kclient.ShareClient {
	p, err := StartProgram(withTimeout(t, 10*time.Minute), Env{Brokers: c.Bootstrap(), Client: client, Log: log}, "", nil, testLog{t})
	require.NoError(t, err, "starting the %s client program", client)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// testShare is the share-group test testFranzShare describes, on sc, a client's share consumer;
// pre names its topics, groups and client ids, so that the clients' runs on one cluster keep
// apart. Kafka's Java client's member leaves its group as it closes (ShareInstance.close in
// clients/java says why), so the other members get the crashed member's partitions at once
// rather than after its session timeout.
func testShare(t *testing.T, c *harness.Cluster, log *slog.Logger, sc kclient.ShareClient, pre string) {
	ctx := withTimeout(t, 6*time.Minute)
	name, group, admin := pre+"-share", pre+"-share-group", pre+"-share-admin"
	const n = 200
	require.NoError(t, c.CreateTopic(ctx, topic(name, 3)))
	base := func(id string) []kgo.Opt { return franz.Base(c.Bootstrap(), id) }

	prod, err := kgo.NewClient(base(pre + "-share-producer")...)
	require.NoError(t, err)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: name, Key: fmt.Appendf(nil, "k-%d", i), Value: fmt.Appendf(nil, "v-%d", i)}
	}
	require.NoError(t, prod.ProduceSync(ctx, recs...).FirstErr(), "producing %d records", n)
	prod.Close()
	ends := map[int32]int64{}
	total := int64(0)
	for p := range int32(3) {
		o, err := c.WaitOffsets(ctx, name, p, func(harness.Offsets) bool { return true })
		require.NoError(t, err)
		ends[p] = o.HighWatermark
		total += o.HighWatermark
	}
	require.EqualValues(t, n, total, "every record written once: ends %v", ends)

	// A short lock, so that a record whose lock ends without an acknowledgement comes back
	// soon: 15 s is the least the brokers allow a group by default
	// (group.share.min.record.lock.duration.ms).
	require.NoError(t, sc.ConfigureShareGroup(ctx, admin, kclient.ShareGroupSettings{Group: group,
		Start: kclient.ShareStartEarliest, LockDuration: 15 * time.Second}))
	open := func(member string, maxRecords int) kclient.ShareConsumer {
		m, err := sc.OpenShareConsumer(ctx, kclient.ShareConsumerSpec{ClientID: pre + "-share-" + member, Group: group,
			Topics: []string{name}, MaxRecords: maxRecords, Log: log.With("member", member)})
		require.NoError(t, err)
		return m
	}
	seen := &shareSeen{deliveries: map[tpo][]shareDelivery{}, settled: map[tpo]int{}}

	// The crashing member: what it polled comes back to the others with a higher count.
	// It acquires no more than it polls, so that every record it held is known.
	crash := open("crash", 30)
	var held []kclient.Delivery
	deadline := time.Now().Add(2 * time.Minute)
	for len(held) == 0 && time.Now().Before(deadline) {
		ds, err := crash.Poll(ctx, 5*time.Second, 30)
		if err != nil {
			t.Logf("crash member's poll: %v", err)
		}
		held = ds
	}
	require.NotEmpty(t, held, "the first member acquired records within 2 minutes")
	seen.delivered("crash", held)
	crashedAt := time.Now()
	crash.Close()
	t.Logf("crash member held %d records (first %s-%d@%d count %d), closed without acknowledging", len(held),
		held[0].Record.Topic, held[0].Record.Partition, *held[0].Record.Offset, held[0].Count)

	members := map[string]func(i int, d kclient.Delivery) kclient.AckType{
		// Half of what it gets, alternately, goes back unless it came twice already: the
		// group's delivery limit (5 by default) archives a record released too often, which
		// is then neither accepted nor rejected.
		"a": func(i int, d kclient.Delivery) kclient.AckType {
			if i%2 == 1 && d.Count < 3 {
				return kclient.AckRelease
			}
			return kclient.AckAccept
		},
		"b": func(_ int, d kclient.Delivery) kclient.AckType {
			if *d.Record.Offset%5 == 0 {
				return kclient.AckReject
			}
			return kclient.AckAccept
		},
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, len(members))
	for member, decide := range members {
		m := open(member, 0)
		wg.Go(func() {
			defer m.Close()
			for rctx.Err() == nil {
				ds, err := m.Poll(rctx, 2*time.Second, 50)
				if err != nil && rctx.Err() == nil {
					t.Logf("member %s: %v", member, err)
				}
				if len(ds) == 0 {
					continue
				}
				seen.delivered(member, ds)
				byType := map[kclient.AckType][]kclient.Delivery{}
				for i, d := range ds {
					typ := decide(i, d)
					byType[typ] = append(byType[typ], d)
				}
				for typ, sel := range byType {
					if err := m.Ack(typ, sel...); err != nil {
						errs <- fmt.Errorf("member %s: %w", member, err)
						return
					}
				}
				// The commit is waited for whatever happens meanwhile: the run stopping must not
				// leave it without an answer.
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				seen.committed(member, m.Commit(cctx))
				cancel()
			}
		})
	}
	settled := func(k int) error {
		return kit.WaitUntil(ctx, time.Now().Add(4*time.Minute), 100*time.Millisecond, func() (bool, error) {
			got := seen.settledCount()
			return got >= k, fmt.Errorf("%d of %d records accepted or rejected", got, k)
		})
	}
	require.NoError(t, settled(n))
	settledAfter := time.Since(crashedAt)

	// DescribeShareGroupOffsets reports the start offset the share coordinator persisted, and a
	// broker persists a partition's state with the start offset it had before the change it
	// persists (SharePartition.writeShareGroupState; the move past the records just acknowledged
	// comes after the write): the last acknowledgements of a partition move it only once
	// something else changes the partition's state. One more record per partition, accepted,
	// is that change.
	lagging, err := sc.ShareStartOffsets(ctx, admin, group, []string{name})
	require.NoError(t, err)
	for p, end := range ends {
		require.LessOrEqual(t, lagging[name][p], end, "start offsets %v, ends %v", lagging[name], ends)
	}
	prod, err = kgo.NewClient(append(base(pre+"-share-producer"), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	require.NoError(t, err)
	for p := range int32(3) {
		require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Topic: name, Partition: p, Value: fmt.Appendf(nil, "last-%d", p)}).FirstErr())
	}
	prod.Close()
	require.NoError(t, settled(n+3), "the records after the ends accepted")
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	seen.mu.Lock()
	defer seen.mu.Unlock()
	var notOK []string
	counts := map[string]int{}
	for _, cm := range seen.commits {
		counts[cm.member+" "+string(cm.res.Type)]++
		if cm.res.Type != history.OK {
			notOK = append(notOK, fmt.Sprintf("%s %s-%d %s %s (%d acks)", cm.member, cm.res.Topic, cm.res.Partition, cm.res.Type, cm.res.Error, len(cm.res.Acks)))
		}
	}
	t.Logf("commits by member and outcome: %v; not ok: %v", counts, notOK)
	require.Empty(t, notOK, "every commit on a healthy cluster is ok")

	// Every offset accepted or rejected by exactly one ok commit.
	var missing, twice []string
	for p, end := range ends {
		for off := range end + 1 {
			switch k := (tpo{name, p, off}); seen.settled[k] {
			case 0:
				missing = append(missing, fmt.Sprintf("%d@%d %v", p, off, seen.deliveries[k]))
			case 1:
			default:
				twice = append(twice, fmt.Sprintf("%d@%d", p, off))
			}
		}
	}
	require.Empty(t, missing, "offsets no ok commit accepted or rejected (with their deliveries)")
	require.Empty(t, twice, "offsets settled by two ok commits")

	// Delivery counts strictly increase, and what the crashed member held came back.
	hist := map[int]int{}
	for k, ds := range seen.deliveries {
		for i := 1; i < len(ds); i++ {
			require.Greater(t, ds[i].count, ds[i-1].count, "%s-%d@%d: deliveries %v", k.topic, k.partition, k.offset, ds)
		}
		// No record was acquired unseen: the crashed member acquired only what it polled, and
		// the others polled what they fetched ahead long before its lock could end.
		require.Equal(t, 1, ds[0].count, "%s-%d@%d: deliveries %v", k.topic, k.partition, k.offset, ds)
		hist[len(ds)]++
	}
	var back, firstOther time.Time
	for _, d := range held {
		ds := seen.deliveries[at(d.Record)]
		require.Greater(t, len(ds), 1, "%s-%d@%d, held by the crashed member, delivered again: %v", d.Record.Topic, d.Record.Partition, *d.Record.Offset, ds)
		require.Equal(t, "crash", ds[0].member)
		if back.IsZero() || ds[1].at.Before(back) {
			back = ds[1].at
		}
	}
	for _, ds := range seen.deliveries {
		for _, d := range ds {
			if d.member != "crash" && (firstOther.IsZero() || d.at.Before(firstOther)) {
				firstOther = d.at
			}
		}
	}
	buckets := map[string]map[int]int{}
	for k, ds := range seen.deliveries {
		for _, d := range ds {
			key := fmt.Sprintf("%s p%d", d.member, k.partition)
			if buckets[key] == nil {
				buckets[key] = map[int]int{}
			}
			buckets[key][int(d.at.Sub(crashedAt)/(5*time.Second))]++
		}
	}
	t.Logf("deliveries by member and partition, in 5 s steps after the crash: %v", buckets)
	t.Logf("after the crash: the other members' first record %s later, the first record the crashed member held %s later",
		firstOther.Sub(crashedAt).Round(time.Millisecond), back.Sub(crashedAt).Round(time.Millisecond))
	maxCount := 0
	for _, ds := range seen.deliveries {
		maxCount = max(maxCount, ds[len(ds)-1].count)
	}
	t.Logf("records by number of deliveries seen: %v; highest delivery count %d; all settled %s after the crash",
		hist, maxCount, settledAfter.Round(time.Millisecond))

	// The share-partition start offsets reach the ends once the acknowledgements are persisted.
	var last map[string]map[int32]int64
	err = kit.WaitUntil(ctx, time.Now().Add(time.Minute), 250*time.Millisecond, func() (bool, error) {
		so, err := sc.ShareStartOffsets(ctx, admin, group, []string{name})
		if err != nil {
			return false, err
		}
		last = so
		for p, end := range ends {
			if so[name][p] < end {
				return false, fmt.Errorf("start offsets %v", so[name])
			}
		}
		return true, nil
	})
	require.NoError(t, err, "share start offsets %v, partition ends %v", last, ends)
	for p, end := range ends {
		// end+1 only if something changed the partition's state after the last record's
		// acknowledgement was persisted.
		require.LessOrEqual(t, last[name][p], end+1, "share start offsets %v, ends before the last records %v", last[name], ends)
	}
	t.Logf("share start offsets %v once all %d records were settled, %v after one more record per partition = the ends %v",
		lagging[name], n, last[name], ends)
}

// TestShareClients: the share-group capability is franz-go's alone among the Go clients (sarama
// has no share consumer), and the roles see it through the client a run builds.
func TestShareClients(t *testing.T) {
	for name, build := range clients() {
		if name == kafkaconf.Java {
			continue // a program; what it can do is its own
		}
		_, ok := build(Env{}).(kclient.ShareClient)
		require.Equal(t, name == kafkaconf.FranzGo, ok, "%s is a kclient.ShareClient", name)
	}
}

// testFranzShareLockEnd holds records past their acquisition lock: another member of the group
// is given them again (with a higher count), and the late acknowledgement is refused by the
// broker, which Commit reports as fail.
func testFranzShareLockEnd(t *testing.T, c *harness.Cluster, log *slog.Logger) {
	testShareLockEnd(t, c, log, franz.New(func(id string) []kgo.Opt { return franz.Base(c.Bootstrap(), id) }, ""), "fs")
}

// testShareLockEnd is the late-acknowledgement test on sc; pre names its topic, group and ids.
func testShareLockEnd(t *testing.T, c *harness.Cluster, log *slog.Logger, sc kclient.ShareClient, pre string) {
	ctx := withTimeout(t, 4*time.Minute)
	name, group, admin := pre+"-share-lock", pre+"-share-lock-group", pre+"-share-admin"
	const n = 20
	require.NoError(t, c.CreateTopic(ctx, topic(name, 1)))
	base := func(id string) []kgo.Opt { return franz.Base(c.Bootstrap(), id) }
	prod, err := kgo.NewClient(base(pre + "-share-lock-producer")...)
	require.NoError(t, err)
	for i := range n {
		require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Topic: name, Value: fmt.Appendf(nil, "v-%d", i)}).FirstErr())
	}
	prod.Close()
	// The brokers keep a group's lock at group.share.min.record.lock.duration.ms (15 s by
	// default) or more.
	err = sc.ConfigureShareGroup(ctx, admin, kclient.ShareGroupSettings{Group: group, LockDuration: time.Second})
	require.Error(t, err, "a 1 s lock refused")
	t.Logf("a 1 s lock: %v", err)
	require.NoError(t, sc.ConfigureShareGroup(ctx, admin, kclient.ShareGroupSettings{Group: group,
		Start: kclient.ShareStartEarliest, LockDuration: 15 * time.Second}))
	open := func(member string) kclient.ShareConsumer {
		m, err := sc.OpenShareConsumer(ctx, kclient.ShareConsumerSpec{ClientID: pre + "-share-lock-" + member, Group: group,
			Topics: []string{name}, MaxRecords: 5, Log: log.With("member", member)})
		require.NoError(t, err)
		t.Cleanup(m.Close)
		return m
	}
	poll := func(m kclient.ShareConsumer, what string, cond func([]kclient.Delivery) bool) []kclient.Delivery {
		t.Helper()
		var got []kclient.Delivery
		err := kit.WaitUntil(ctx, time.Now().Add(2*time.Minute), 0, func() (bool, error) {
			ds, err := m.Poll(ctx, 2*time.Second, 5)
			got = ds
			if len(ds) > 0 && !cond(ds) {
				// Not what is waited for: accepted (a release would bring them back at once,
				// up to the delivery limit), so that the member can poll on.
				require.NoError(t, m.Ack(kclient.AckAccept, ds...))
				for _, r := range m.Commit(ctx) {
					require.Equal(t, history.OK, r.Type, "accepting %+v: %s", r.Acks, r.Error)
				}
				return false, fmt.Errorf("polled %d records, not %s", len(ds), what)
			}
			return len(ds) > 0, err
		})
		require.NoError(t, err, what)
		return got
	}

	slow := open("slow")
	held := poll(slow, "any", func([]kclient.Delivery) bool { return true })
	heldAt := map[int64]int{}
	for _, d := range held {
		heldAt[*d.Record.Offset] = d.Count
	}
	t.Logf("slow member holds offsets %v (counts)", heldAt)

	other := open("other")
	again := poll(other, "a record the slow member holds, delivered again", func(ds []kclient.Delivery) bool {
		for _, d := range ds {
			if _, ok := heldAt[*d.Record.Offset]; ok {
				return true
			}
		}
		return false
	})
	againAt := map[int64]int{}
	for _, d := range again {
		againAt[*d.Record.Offset] = d.Count
	}
	t.Logf("the other member polled offsets %v (counts)", againAt)
	for _, d := range again {
		if cnt, ok := heldAt[*d.Record.Offset]; ok {
			require.Greater(t, d.Count, cnt, "offset %d delivered again after its lock ended", *d.Record.Offset)
		}
	}
	require.NoError(t, slow.Ack(kclient.AckAccept, held...))
	late := slow.Commit(ctx)
	require.Len(t, late, 1)
	t.Logf("the slow member's accept after its lock ended: %s %s", late[0].Type, late[0].Error)
	require.Equal(t, history.Fail, late[0].Type, "the broker refuses an acknowledgement of records the member no longer holds: %+v", late[0])
	require.Contains(t, late[0].Error, "INVALID_RECORD_STATE")
	require.NoError(t, other.Ack(kclient.AckAccept, again...))
	for _, r := range other.Commit(ctx) {
		require.Equal(t, history.OK, r.Type, "%+v", r)
	}
}
