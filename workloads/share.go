package workloads

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// Kafka's defaults for a share group's lock duration and delivery limit
// (group.share.record.lock.duration.ms, group.share.delivery.count.limit).
const (
	DefaultShareLock          = 30 * time.Second
	DefaultShareDeliveryLimit = 5
	// DefaultShareSessionTimeout is group.share.session.timeout.ms's default.
	DefaultShareSessionTimeout = 45 * time.Second
)

// ShareGroupConfig is one share group (KIP-932; docs/share-groups.md): Members consumers share
// Topics, each acknowledging what it acquires with the seeded Mix, some crashing while they hold
// records; after the workloads a drain member accepts what is left, and the group's start
// offsets are read.
type ShareGroupConfig struct {
	// Group is the share group's id; default "verity-share".
	Group  string   `json:"group,omitempty"`
	Topics []string `json:"topics"`
	// Members is how many consumers share the group (default 3), each its own process.
	Members int `json:"members,omitempty"`
	// Mix weighs how a member acknowledges each record it acquires: accept, release, reject
	// (default 80/15/5). A released record is delivered again with its count raised.
	Mix ShareMix `json:"mix,omitzero"`
	// CrashEvery, when set, crashes each member about that often (0.5x to 1.5x, from the seed)
	// right after a poll, while it holds what the poll acquired: the broker delivers those
	// records again once the member's connection closes or their locks end.
	CrashEvery time.Duration `json:"crash_every,omitempty"`
	// LockDuration is the group's share.record.lock.duration.ms, DeliveryLimit its
	// share.delivery.count.limit (Kafka 4.3 on); zero: the broker's (DefaultShareLock,
	// DefaultShareDeliveryLimit unless the cluster sets others).
	LockDuration  time.Duration `json:"lock_duration,omitempty"`
	DeliveryLimit int           `json:"delivery_limit,omitempty"`
	// PollWait (default 500ms) bounds one poll, PollRecords (default 20) what it acquires.
	PollWait    time.Duration `json:"poll_wait,omitempty"`
	PollRecords int           `json:"poll_records,omitempty"`
	// SessionTimeout is the group's share session timeout (group.share.session.timeout.ms;
	// default Kafka's 45 s): a crashed member keeps its partitions in the group's assignment
	// until it passes, so the drain waits it out.
	SessionTimeout time.Duration `json:"session_timeout,omitempty"`
	// DrainIdle is how long the drain member waits with nothing delivered before it takes the
	// group as done (default: the longer of the lock duration and the session timeout, and
	// 5 s), DrainDeadline the longest it drains (default 3 minutes).
	DrainIdle     time.Duration `json:"drain_idle,omitempty"`
	DrainDeadline time.Duration `json:"drain_deadline,omitempty"`
}

// ShareMix weighs the acknowledgement types.
type ShareMix struct {
	Accept  int `json:"accept"`
	Release int `json:"release"`
	Reject  int `json:"reject"`
}

func (m ShareMix) total() int { return m.Accept + m.Release + m.Reject }

// pick draws an acknowledgement type by the weights.
func (m ShareMix) pick(rng *rand.Rand) kclient.AckType {
	n := rng.IntN(m.total())
	switch {
	case n < m.Accept:
		return kclient.AckAccept
	case n < m.Accept+m.Release:
		return kclient.AckRelease
	}
	return kclient.AckReject
}

func (c ShareGroupConfig) resolved() (ShareGroupConfig, error) {
	if len(c.Topics) == 0 {
		return c, errors.New("share group: no topics")
	}
	c.Group = cmp.Or(c.Group, "verity-share")
	if c.Members == 0 {
		c.Members = 3
	}
	if c.Members < 0 {
		return c, fmt.Errorf("share group %s: members %d: want 1 or more", c.Group, c.Members)
	}
	if c.Mix == (ShareMix{}) {
		c.Mix = ShareMix{Accept: 80, Release: 15, Reject: 5}
	}
	if c.Mix.Accept < 0 || c.Mix.Release < 0 || c.Mix.Reject < 0 || c.Mix.total() == 0 {
		return c, fmt.Errorf("share group %s: mix %+v: weights are 0 or more, and not all 0", c.Group, c.Mix)
	}
	if c.LockDuration < 0 || (c.LockDuration > 0 && c.LockDuration < time.Second) {
		return c, fmt.Errorf("share group %s: lock_duration %s: Kafka takes 1s or more", c.Group, c.LockDuration)
	}
	if c.DeliveryLimit != 0 && (c.DeliveryLimit < 2 || c.DeliveryLimit > 10) {
		return c, fmt.Errorf("share group %s: delivery_limit %d: Kafka takes 2 to 10", c.Group, c.DeliveryLimit)
	}
	if c.CrashEvery < 0 {
		return c, fmt.Errorf("share group %s: crash_every %s: want a positive duration", c.Group, c.CrashEvery)
	}
	if c.PollWait <= 0 {
		c.PollWait = 500 * time.Millisecond
	}
	if c.PollRecords <= 0 {
		c.PollRecords = 20
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = DefaultShareSessionTimeout
	}
	if c.DrainIdle <= 0 {
		c.DrainIdle = max(c.lock(), c.SessionTimeout) + 5*time.Second
	}
	if c.DrainDeadline <= 0 {
		c.DrainDeadline = 3 * time.Minute
	}
	return c, nil
}

// lock is the lock duration the group runs with.
func (c ShareGroupConfig) lock() time.Duration { return cmp.Or(c.LockDuration, DefaultShareLock) }

// header is what the history's header states of the group: its own settings, else the
// brokers' (broker: the settings that depart from Kafka's defaults), else Kafka's defaults.
func (c ShareGroupConfig) header(broker map[string]string) *history.ShareConfig {
	lock, limit := c.lock().Milliseconds(), int32(cmp.Or(c.DeliveryLimit, DefaultShareDeliveryLimit))
	if v, err := strconv.ParseInt(broker["group.share.record.lock.duration.ms"], 10, 64); err == nil && c.LockDuration == 0 {
		lock = v
	}
	if v, err := strconv.ParseInt(broker["group.share.delivery.count.limit"], 10, 32); err == nil && c.DeliveryLimit == 0 {
		limit = int32(v)
	}
	return &history.ShareConfig{Group: c.Group, Topics: slices.Clone(c.Topics), LockMS: lock, DeliveryLimit: limit}
}

// ShareStats counts what a share group member did.
type ShareStats struct {
	Process                      int
	Polls, Deliveries            int64
	Accepted, Released, Rejected int64
	// AckFailed and AckUnknown count acknowledgements whose commit failed or whose outcome is
	// unknown.
	AckFailed, AckUnknown int64
	Crashes               int64
	// Rejoined counts the deliveries to the drain's second instance, which rebuilt the share
	// partitions from the group's state (DrainShareGroup).
	Rejoined int64
}

// shareMember runs one member process of a share group.
type shareMember struct {
	env   Env
	cfg   ShareGroupConfig
	p     int
	proc  history.Process
	rng   *rand.Rand
	log   *slog.Logger
	cl    kclient.ShareClient
	stats ShareStats
	// accept makes every acknowledgement an accept (the drain).
	accept bool
}

// shareClient is the run's client as a share-group client, or why it has none.
func shareClient(env Env) (kclient.ShareClient, error) {
	cl, err := env.client()
	if err != nil {
		return nil, err
	}
	sc, ok := cl.(kclient.ShareClient)
	if !ok {
		return nil, fmt.Errorf("%s has no share-group consumer (KIP-932): run share groups with a client that has (verity list clients)", env.Client)
	}
	return sc, nil
}

// PrepareShareGroup sets the group's start (earliest: it reads what was written before its
// first member joined), lock duration and delivery limit before any member joins.
func PrepareShareGroup(ctx context.Context, env Env, cfg ShareGroupConfig) error {
	sc, err := shareClient(env)
	if err != nil {
		return err
	}
	s := kclient.ShareGroupSettings{Group: cfg.Group, Start: kclient.ShareStartEarliest, LockDuration: cfg.LockDuration,
		DeliveryLimit: cfg.DeliveryLimit}
	if err := sc.ConfigureShareGroup(ctx, clientID(0, "share-admin"), s); err != nil {
		return fmt.Errorf("share group %s: configuring it: %w", cfg.Group, err)
	}
	return nil
}

// RunShareMember runs one member of cfg's share group as history process p until ctx ends.
func RunShareMember(ctx context.Context, env Env, p int, cfg ShareGroupConfig) (ShareStats, error) {
	m, err := newShareMember(env, p, cfg)
	if err != nil {
		return ShareStats{}, err
	}
	cfg = m.cfg
	for ctx.Err() == nil {
		var until time.Time
		if cfg.CrashEvery > 0 {
			until = time.Now().Add(time.Duration((0.5 + m.rng.Float64()) * float64(cfg.CrashEvery)))
		}
		if err := m.instance(ctx, until, nil); err != nil {
			return m.stats, err
		}
	}
	m.log.Info("share member done", "polls", m.stats.Polls, "deliveries", m.stats.Deliveries, "crashes", m.stats.Crashes)
	return m.stats, nil
}

// newShareMember is member p of cfg's group on env's client, with its settings resolved.
func newShareMember(env Env, p int, cfg ShareGroupConfig) (*shareMember, error) {
	env, err := env.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg, err = cfg.resolved(); err != nil {
		return nil, err
	}
	cl, err := shareClient(env)
	if err != nil {
		return nil, err
	}
	m := &shareMember{env: env, cfg: cfg, p: p, proc: history.Client(p), rng: NewRand(env.Seed, p), cl: cl,
		log: env.Log.With("workload", "share", "process", p, "client", env.Client, "group", cfg.Group)}
	m.stats.Process = p
	return m, nil
}

// note records an op that marks a moment: joining, a crash.
func (m *shareMember) note(f string, v any) error {
	inv, err := m.env.Recorder.Invoke(m.proc, f, raw(v))
	if err != nil {
		return fmt.Errorf("share member %d: recording %s: %w", m.p, f, err)
	}
	if _, err := m.env.Recorder.Complete(inv, history.OK, inv.Value, ""); err != nil {
		return fmt.Errorf("share member %d: recording %s: %w", m.p, f, err)
	}
	return nil
}

// instance runs one member instance until ctx ends or until (when not zero) passes; then it
// crashes right after a poll, holding what that poll acquired. idle, when set, is told after
// every wait of a poll whether it delivered anything, and ends the instance when it says so.
func (m *shareMember) instance(ctx context.Context, until time.Time, idle func(delivered bool) bool) error {
	if err := m.note(history.FShareSubscribe, history.ShareSubscribe{Group: m.cfg.Group, Topics: m.cfg.Topics}); err != nil {
		return err
	}
	sc, err := m.cl.OpenShareConsumer(ctx, kclient.ShareConsumerSpec{ClientID: clientID(m.p, "share"), Group: m.cfg.Group,
		Topics: m.cfg.Topics, MaxRecords: m.cfg.PollRecords, Log: m.log})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("share member %d: opening: %w", m.p, err)
	}
	closed := false
	defer func() {
		if !closed {
			sc.Close()
		}
	}()
	for ctx.Err() == nil {
		ds, stopped, err := m.poll(ctx, sc, idle)
		if err != nil || stopped {
			return err
		}
		if !until.IsZero() && time.Now().After(until) && len(ds) > 0 {
			closed = true
			return m.crash(sc)
		}
		if idle != nil && len(ds) > 0 {
			idle(true)
		}
		if err := m.ack(ctx, sc, ds); err != nil {
			return err
		}
	}
	return nil
}

// crash ends the instance without acknowledging what it holds. The crash op's invoke comes
// before the instance closes: from the close on, the broker may deliver its records to others.
func (m *shareMember) crash(sc kclient.ShareConsumer) error {
	m.stats.Crashes++
	inv, err := m.env.Recorder.Invoke(m.proc, history.FCrash, raw(history.Crash{Reason: "crash holding records (crash_every)"}))
	if err != nil {
		sc.Close()
		return fmt.Errorf("share member %d: recording a crash: %w", m.p, err)
	}
	sc.Close()
	if _, err := m.env.Recorder.Complete(inv, history.OK, inv.Value, ""); err != nil {
		return fmt.Errorf("share member %d: recording a crash: %w", m.p, err)
	}
	return nil
}

// poll records one share-poll and returns what it acquired; stopped when the member stopped
// (ctx ended, or idle said so after an empty wait) before anything came.
//
// The op stays open across empty waits until records come: a client fetches while it polls and
// may finish a fetch after the wait ended (franz-go buffers the records for the next wait), and
// the checker reckons a lock from the invoke of the poll that delivered the record, so that
// invoke must come before the fetch. A poll the member stops is info: a fetch may still be in
// flight, and the broker releases what it acquired when the member closes, counting a delivery
// no member was handed.
func (m *shareMember) poll(ctx context.Context, sc kclient.ShareConsumer, idle func(delivered bool) bool) (ds []kclient.Delivery, stopped bool, err error) {
	inv, err := m.env.Recorder.Invoke(m.proc, history.FSharePoll, raw(history.SharePoll{Group: m.cfg.Group}))
	if err != nil {
		return nil, false, fmt.Errorf("share member %d: recording a poll: %w", m.p, err)
	}
	out := history.SharePoll{Group: m.cfg.Group}
	t, text := history.OK, ""
	for {
		var perr error
		ds, perr = sc.Poll(ctx, m.cfg.PollWait, m.cfg.PollRecords)
		m.stats.Polls++
		if perr != nil && len(ds) == 0 {
			// A poll that failed may have acquired records the client did not return.
			t, text = history.Info, perr.Error()
			break
		}
		if len(ds) > 0 {
			break
		}
		if ctx.Err() != nil || (idle != nil && idle(false)) {
			t, text, stopped = history.Info, "the member stopped while it polled: a fetch still in flight may have acquired records it was never handed", true
			break
		}
	}
	m.stats.Deliveries += int64(len(ds))
	for _, d := range ds {
		out.Records = append(out.Records, history.SharedRecord(d.Record, int32(d.Count)))
	}
	if _, err := m.env.Recorder.Complete(inv, t, raw(out), text); err != nil {
		return nil, false, fmt.Errorf("share member %d: recording a poll: %w", m.p, err)
	}
	return ds, stopped, nil
}

// ack acknowledges every record of ds, each with a type drawn from the mix (accept for the
// drain), commits, and records one share-ack per partition.
func (m *shareMember) ack(ctx context.Context, sc kclient.ShareConsumer, ds []kclient.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	type key struct {
		topic string
		part  int32
	}
	byPartition := func(a, b key) int { return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.part, b.part)) }
	byType := map[kclient.AckType][]kclient.Delivery{}
	acks := map[key][]history.ShareAckEntry{}
	for _, d := range ds {
		t := kclient.AckAccept
		if !m.accept {
			t = m.cfg.Mix.pick(m.rng)
		}
		byType[t] = append(byType[t], d)
		k := key{d.Record.Topic, d.Record.Partition}
		acks[k] = append(acks[k], history.ShareAckEntry{Offset: *d.Record.Offset, Type: history.AckType(t)})
	}
	for _, t := range []kclient.AckType{kclient.AckAccept, kclient.AckRelease, kclient.AckReject} {
		if len(byType[t]) == 0 {
			continue
		}
		if err := sc.Ack(t, byType[t]...); err != nil {
			return fmt.Errorf("share member %d: acknowledging: %w", m.p, err)
		}
	}
	// Every partition's invoke before the commit: they are in flight together, and each
	// completion names its invoke.
	invs := map[key]history.Op{}
	for _, k := range slices.SortedFunc(maps.Keys(acks), byPartition) {
		inv, err := m.env.Recorder.Invoke(m.proc, history.FShareAck, raw(history.ShareAck{Group: m.cfg.Group, Topic: k.topic, Partition: k.part, Acks: acks[k]}))
		if err != nil {
			return fmt.Errorf("share member %d: recording an acknowledgement: %w", m.p, err)
		}
		invs[k] = inv
	}
	results := sc.Commit(ctx)
	for _, r := range results {
		k := key{r.Topic, r.Partition}
		inv, ok := invs[k]
		if !ok {
			continue
		}
		delete(invs, k)
		if err := m.completeAck(inv, r.Type, r.Error, acks[k]); err != nil {
			return err
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(invs), byPartition) {
		// The client gave no answer for the partition: what became of its acknowledgements
		// is not known.
		if err := m.completeAck(invs[k], history.Info, "no answer for the partition's acknowledgements", acks[k]); err != nil {
			return err
		}
	}
	return nil
}

func (m *shareMember) completeAck(inv history.Op, t history.Type, text string, acks []history.ShareAckEntry) error {
	switch t {
	case history.OK:
		for _, a := range acks {
			switch a.Type {
			case history.AckAccept:
				m.stats.Accepted++
			case history.AckRelease:
				m.stats.Released++
			case history.AckReject:
				m.stats.Rejected++
			}
		}
	case history.Fail:
		m.stats.AckFailed += int64(len(acks))
	default:
		m.stats.AckUnknown += int64(len(acks))
	}
	if _, err := m.env.Recorder.CompleteAsync(inv, t, inv.Value, text); err != nil {
		return fmt.Errorf("share member %d: recording an acknowledgement: %w", m.p, err)
	}
	return nil
}

// DrainShareGroup runs, as process p once the workloads have ended and the faults healed, a
// member that accepts everything the group still delivers until nothing comes for DrainIdle
// (or DrainDeadline passes); then a second instance of it, the rejoin, for as long again; then
// records each partition's start offset as a share-state op.
//
// The rejoin reads what the group's state in __share_group_state says is left: when the
// first instance's connections close, no member of the group has a share session on any
// broker, and each share-partition leader drops its share partitions (onGroupEmpty); the
// rejoin's fetches rebuild them from the persisted state. A leader's memory can be right
// while the state it wrote is not (a late write taking the start offset back), and only a
// rebuild shows that: as records accepted before and delivered again.
func DrainShareGroup(ctx context.Context, env Env, p int, cfg ShareGroupConfig) (ShareStats, error) {
	m, err := newShareMember(env, p, cfg)
	if err != nil {
		return ShareStats{}, err
	}
	m.accept = true
	for pass := range 2 {
		before := m.stats.Deliveries
		if err := m.drainInstance(ctx); err != nil {
			return m.stats, err
		}
		if ctx.Err() != nil {
			return m.stats, ctx.Err()
		}
		if pass == 1 {
			m.stats.Rejoined = m.stats.Deliveries - before
		}
	}
	m.log.Info("share drain done", "deliveries", m.stats.Deliveries, "rejoined", m.stats.Rejoined)
	return m.stats, m.startOffsets(ctx)
}

// drainInstance runs one drain instance until nothing comes for DrainIdle, at most
// DrainDeadline. DrainIdle outlasts the session timeout, after which the coordinator assigns
// a departed instance's partitions to the others.
func (m *shareMember) drainInstance(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, m.cfg.DrainDeadline)
	defer cancel()
	last := time.Now()
	idle := func(delivered bool) bool {
		if delivered {
			last = time.Now()
		}
		return time.Since(last) >= m.cfg.DrainIdle
	}
	return m.instance(dctx, time.Time{}, idle)
}

// startOffsets records each partition's share-partition start offset. The group's state is
// written by the share coordinator after the drain's acknowledgements: it is read until two
// reads a second apart agree, for at most 30 s.
func (m *shareMember) startOffsets(ctx context.Context) error {
	var prev map[string]map[int32]int64
	var offs map[string]map[int32]int64
	for deadline := time.Now().Add(30 * time.Second); ; {
		var err error
		offs, err = m.cl.ShareStartOffsets(ctx, clientID(m.p, "share-admin"), m.cfg.Group, m.cfg.Topics)
		if err == nil && prev != nil && maps.EqualFunc(prev, offs, maps.Equal[map[int32]int64]) {
			break
		}
		if err != nil {
			m.log.Info("reading the share start offsets", "err", err)
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("share group %s: reading its start offsets: %w", m.cfg.Group, err)
			}
			break
		}
		prev = offs
		if kit.Sleep(ctx, time.Second) != nil {
			return ctx.Err()
		}
	}
	for _, t := range slices.Sorted(maps.Keys(offs)) {
		for _, part := range slices.Sorted(maps.Keys(offs[t])) {
			st := history.ShareState{Group: m.cfg.Group, Topic: t, Partition: part}
			inv, err := m.env.Recorder.Invoke(m.proc, history.FShareState, raw(st))
			if err != nil {
				return fmt.Errorf("share group %s: recording its start offsets: %w", m.cfg.Group, err)
			}
			off := offs[t][part]
			st.StartOffset = &off
			if _, err := m.env.Recorder.Complete(inv, history.OK, raw(st), ""); err != nil {
				return fmt.Errorf("share group %s: recording its start offsets: %w", m.cfg.Group, err)
			}
		}
	}
	return nil
}
