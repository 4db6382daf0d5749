package workloads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

// ConsumerMode is how a consumer gets its partitions.
type ConsumerMode string

const (
	// Subscribe joins a consumer group (Group) that assigns the topics' partitions; positions
	// start from the group's committed offsets, and every rebalance is noted in the history.
	Subscribe ConsumerMode = "subscribe"
	// Assign reads the given partitions directly, without a group.
	Assign ConsumerMode = "assign"
)

// ConsumerConfig is one consumer instance.
type ConsumerConfig struct {
	Topics []string `json:"topics"`
	// Mode is subscribe (default) or assign.
	Mode ConsumerMode `json:"mode,omitempty"`
	// Isolation is read_uncommitted (default, Kafka's default) or read_committed.
	Isolation kafkaconf.Isolation `json:"isolation,omitempty"`
	// Group for subscribe mode; default "verity-group-<process>". Consumers that share a
	// group split the partitions.
	Group string `json:"group,omitempty"`
	// Partitions for assign mode, per topic; default all of each topic's partitions.
	Partitions map[string][]int32 `json:"partitions,omitempty"`
	// FromNewest starts where the log ends instead of at its earliest offset (for a group:
	// when it has no committed offset).
	FromNewest bool `json:"from_newest,omitempty"`
	// PollWait (default 200ms) and PollRecords (default 500) bound one poll.
	PollWait    time.Duration `json:"poll_wait,omitempty"`
	PollRecords int           `json:"poll_records,omitempty"`
	// RestartEvery, when set, restarts the consumer about that often (0.5x to 1.5x, from the
	// seed): a crash op, then a new instance that resumes from the group's committed offsets
	// (subscribe) or from the positions it had reached (assign).
	RestartEvery time.Duration `json:"restart_every,omitempty"`
	// MaxPolls stops the consumer after this many polls (0: until its context ends).
	MaxPolls int `json:"max_polls,omitempty"`
}

func (c ConsumerConfig) resolved(p int) (ConsumerConfig, error) {
	if len(c.Topics) == 0 && c.Partitions == nil {
		return c, errors.New("consumer: no topics")
	}
	switch c.Mode {
	case "":
		c.Mode = Subscribe
	case Subscribe, Assign:
	default:
		return c, fmt.Errorf("consumer: mode %q: want subscribe or assign", c.Mode)
	}
	if c.Isolation == "" {
		c.Isolation = kafkaconf.DefaultConsumerIsolation
	}
	if _, err := kafkaconf.ParseIsolation(string(c.Isolation)); err != nil {
		return c, fmt.Errorf("consumer: %w", err)
	}
	if c.Mode == Subscribe && c.Group == "" {
		c.Group = fmt.Sprintf("verity-group-%d", p)
	}
	if c.Mode == Assign {
		c.Group = ""
		if len(c.Topics) == 0 {
			c.Topics = slices.Sorted(maps.Keys(c.Partitions))
		}
	}
	if c.PollWait <= 0 {
		c.PollWait = 200 * time.Millisecond
	}
	if c.PollRecords <= 0 {
		c.PollRecords = 500
	}
	return c, nil
}

// FDataLoss is the f of an op noting that a consumer's client found the log truncated under its
// position (KIP-320) and moved the position back: value {"topic", "partition", "offset", "epoch",
// "reset_to", "reset_epoch"} (docs/history.md). Like any op of the process that is not a read,
// it makes the checker forget the consumer's positions.
const FDataLoss = "data-loss"

// ConsumerStats counts a consumer's polls.
type ConsumerStats struct {
	Process             int
	Polls, Records      int64
	Rebalances, Crashes int64
	// DataLosses counts the truncations under the consumer's position that its client reported.
	DataLosses int64
}

// consumerClient is what the consumer workload needs of a Kafka client: one consumer instance,
// started by the client's openConsumer in assign or subscribe mode. Everything the client has to
// tell reaches the one goroutine that records the process's ops through Poll, in the order it
// happened, so that the history shows the client's order.
type consumerClient interface {
	// Poll waits at most wait for what the client has to report and returns it in order:
	// records in arrival order (at most max) and, between them, control events (a rebalance's
	// new assignment, a log truncated under the position). The workload records all of it
	// before it calls Poll again.
	Poll(ctx context.Context, wait time.Duration, max int) []consumerEvent
	// Recorded tells the client the records, in the order Poll returned them, that the history
	// now shows as polled. In subscribe mode the client commits these, and never a record it has
	// not been told of, so that a restart resumes right after what the history shows.
	Recorded(recs []consumerEvent)
	// Close ends the instance (leaving its group) and everything it started.
	Close()
}

// openConsumer starts one consumer instance of a client. In assign mode it returns the
// partitions the instance consumes: those cfg.Partitions names, else every partition of each
// topic.
type openConsumer func(ctx context.Context, env Env, st consumerStart, log *slog.Logger) (consumerClient, map[string][]int32, error)

// consumerStart is what an instance starts from.
type consumerStart struct {
	cfg      ConsumerConfig // resolved
	clientID string
	// from is, in assign mode, where each partition resumes: the position the previous
	// instances reached. A partition without one starts at the oldest offset (the newest with
	// FromNewest). The opener must not keep it.
	from map[string]map[int32]position
}

// position is where a consumer resumes in a partition.
type position struct {
	offset int64 // the next offset to read
	epoch  int32 // the leader epoch of the record before offset; -1 when unknown
}

type consumerEventKind uint8

const (
	ceRecord    consumerEventKind = iota // a record the client returned
	ceRebalance                          // the group gave the member a new assignment
	ceDataLoss                           // the log was truncated under the position
)

// consumerEvent is one thing a client reports to the recording goroutine.
type consumerEvent struct {
	kind consumerEventKind
	// rec (with its offset) and epoch, its leader epoch (-1 unknown): ceRecord.
	rec   history.Record
	epoch int32
	// claims: ceRebalance.
	claims claims
	// loss: ceDataLoss.
	loss dataLoss
	// handle is the client's own record (a sarama message with its session, a *kgo.Record),
	// for Recorded.
	handle any
}

// claims is a group member's assignment after a rebalance.
type claims struct {
	generation int32
	member     string
	partitions map[string][]int32
}

// payload is the assign op's value for the rebalance, the same for every client.
func (c claims) payload(group, isolation string) map[string]any {
	parts := map[string][]int32{}
	for t, ps := range c.partitions {
		ps = slices.Clone(ps)
		slices.Sort(ps)
		parts[t] = ps
	}
	topics := slices.AppendSeq([]string{}, maps.Keys(parts)) // [] rather than null when nothing is owned
	slices.Sort(topics)
	return map[string]any{
		"group": group, "generation": c.generation, "member": c.member,
		"partitions": parts, "topics": topics,
		"isolation": isolation, "rebalance": true,
	}
}

// dataLoss is a log truncated under a consumer's position, as the client reported it.
type dataLoss struct {
	topic     string
	partition int32
	// offset is the consumer's position (the next offset it would have read), epoch the
	// leader epoch it had read it at.
	offset int64
	epoch  int32
	// resetTo is where the client resumes: where the leader's log now diverges from what the
	// consumer read, or, when the client could not locate that, the reset offset the workload
	// configured (the oldest or the newest).
	resetTo    int64
	resetEpoch int32
}

func (d dataLoss) payload() map[string]any {
	return map[string]any{"topic": d.topic, "partition": d.partition, "offset": d.offset, "epoch": d.epoch,
		"reset_to": d.resetTo, "reset_epoch": d.resetEpoch}
}

type consumerRun struct {
	env   Env
	cfg   ConsumerConfig
	p     int
	proc  history.Process
	rng   *rand.Rand
	log   *slog.Logger
	open  openConsumer
	stats ConsumerStats
	// next is, in assign mode, the position reached in each partition: where a restarted
	// instance resumes.
	next map[string]map[int32]position
	// pending is what the instance's last Poll returned that is not recorded yet.
	pending []consumerEvent
}

// RunConsumer runs a consumer of the run's client as history process p until ctx ends: every
// poll is recorded with its records in the order the client returned them, and every rebalance
// and reported truncation as an op of the process between the polls where it happened.
func RunConsumer(ctx context.Context, env Env, p int, cfg ConsumerConfig) (ConsumerStats, error) {
	env, err := env.withDefaults()
	if err != nil {
		return ConsumerStats{}, err
	}
	if cfg, err = cfg.resolved(p); err != nil {
		return ConsumerStats{}, err
	}
	a, err := adaptersOf(env.Client)
	if err != nil {
		return ConsumerStats{}, err
	}
	return runConsumer(ctx, env, p, cfg, a.consumer)
}

// runConsumer is RunConsumer with its settled env, resolved cfg and client adapter.
func runConsumer(ctx context.Context, env Env, p int, cfg ConsumerConfig, open openConsumer) (ConsumerStats, error) {
	w := &consumerRun{env: env, cfg: cfg, p: p, proc: history.Client(p), rng: NewRand(env.Seed, p), open: open,
		log: env.Log.With("workload", "consumer", "process", p, "client", env.Client, "mode", cfg.Mode,
			"isolation", cfg.Isolation),
		next: map[string]map[int32]position{}}
	w.stats.Process = p
	for first := true; ctx.Err() == nil && !w.pollsDone(); first = false {
		if !first {
			if err := w.crash(); err != nil {
				return w.stats, err
			}
		}
		var until time.Time
		if cfg.RestartEvery > 0 {
			until = time.Now().Add(time.Duration((0.5 + w.rng.Float64()) * float64(cfg.RestartEvery)))
		}
		if err := w.instance(ctx, until); err != nil {
			return w.stats, err
		}
	}
	w.log.Info("consumer done", "polls", w.stats.Polls, "records", w.stats.Records, "rebalances", w.stats.Rebalances,
		"data_losses", w.stats.DataLosses)
	return w.stats, nil
}

func (w *consumerRun) pollsDone() bool {
	return w.cfg.MaxPolls > 0 && w.stats.Polls >= int64(w.cfg.MaxPolls)
}

func (w *consumerRun) crash() error {
	w.stats.Crashes++
	return w.note(history.FCrash, history.Crash{Reason: "restart (restart_every)"})
}

// note records an op that marks a moment: subscribe, an assignment, a truncation, a crash.
func (w *consumerRun) note(f string, v any) error {
	inv, err := w.env.Recorder.Invoke(w.proc, f, raw(v))
	if err != nil {
		return fmt.Errorf("consumer %d: recording %s: %w", w.p, f, err)
	}
	if _, err := w.env.Recorder.Complete(inv, history.OK, inv.Value, ""); err != nil {
		return fmt.Errorf("consumer %d: recording %s: %w", w.p, f, err)
	}
	return nil
}

// instance runs one consumer instance until ctx ends or until (when not zero) passes.
func (w *consumerRun) instance(ctx context.Context, until time.Time) error {
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !until.IsZero() {
		var dcancel context.CancelFunc
		ictx, dcancel = context.WithDeadline(ictx, until)
		defer dcancel()
	}
	if w.cfg.Mode == Subscribe {
		if err := w.note(history.FSubscribe, map[string]any{"topics": w.cfg.Topics, "group": w.cfg.Group, "isolation": w.cfg.Isolation}); err != nil {
			return err
		}
	}
	cc, parts, err := w.open(ictx, w.env, consumerStart{cfg: w.cfg, clientID: clientID(w.p, "consumer"), from: w.next}, w.log)
	if err != nil {
		if ictx.Err() != nil {
			return nil // stopped (or due for a restart) while starting
		}
		return err
	}
	defer cc.Close()
	if w.cfg.Mode == Assign {
		// Recorded before any of the instance's records: Poll hands them over only from here.
		if err := w.note(history.FAssign, map[string]any{"partitions": parts, "topics": w.cfg.Topics, "isolation": w.cfg.Isolation}); err != nil {
			return err
		}
	}
	w.pending = nil
	for ictx.Err() == nil && !w.pollsDone() {
		if err := w.poll(ictx, cc); err != nil {
			return err
		}
	}
	return nil
}

// poll records one poll: the records the client returns within PollWait (at most PollRecords),
// in arrival order, up to the first control event; then the control events that follow them.
func (w *consumerRun) poll(ctx context.Context, cc consumerClient) error {
	pl := &history.Poll{Isolation: string(w.cfg.Isolation), Group: w.cfg.Group, Records: []history.Record{}}
	inv, err := w.env.Recorder.Invoke(w.proc, history.FPoll, history.Payload{Poll: pl})
	if err != nil {
		return fmt.Errorf("consumer %d: recording a poll: %w", w.p, err)
	}
	if len(w.pending) == 0 {
		w.pending = cc.Poll(ctx, w.cfg.PollWait, w.cfg.PollRecords)
	}
	n := 0
	for n < len(w.pending) && n < w.cfg.PollRecords && w.pending[n].kind == ceRecord {
		pl.Records = append(pl.Records, w.pending[n].rec)
		n++
	}
	recs := w.pending[:n:n]
	w.pending = w.pending[n:]
	if _, err := w.env.Recorder.Complete(inv, history.OK, history.Payload{Poll: pl}, ""); err != nil {
		return fmt.Errorf("consumer %d: recording a poll: %w", w.p, err)
	}
	w.stats.Polls++
	w.stats.Records += int64(len(recs))
	if w.cfg.Mode == Assign {
		for _, ev := range recs {
			w.remember(ev.rec.Topic, ev.rec.Partition, position{offset: *ev.rec.Offset + 1, epoch: ev.epoch})
		}
	}
	// Only now that the history shows them may the client commit them.
	cc.Recorded(recs)
	for len(w.pending) > 0 && w.pending[0].kind != ceRecord {
		ev := w.pending[0]
		w.pending = w.pending[1:]
		if err := w.control(ev); err != nil {
			return err
		}
	}
	return nil
}

func (w *consumerRun) remember(topic string, partition int32, pos position) {
	if w.next[topic] == nil {
		w.next[topic] = map[int32]position{}
	}
	w.next[topic][partition] = pos
}

// control records a control event as an op of the process, between the polls where it happened.
func (w *consumerRun) control(ev consumerEvent) error {
	switch ev.kind {
	case ceRebalance:
		w.stats.Rebalances++
		return w.note(history.FAssign, ev.claims.payload(w.cfg.Group, string(w.cfg.Isolation)))
	case ceDataLoss:
		d := ev.loss
		w.stats.DataLosses++
		w.log.Warn("the client found the log truncated under the consumer's position", "topic", d.topic,
			"partition", d.partition, "offset", d.offset, "epoch", d.epoch, "reset_to", d.resetTo, "reset_epoch", d.resetEpoch)
		if w.cfg.Mode == Assign {
			w.remember(d.topic, d.partition, position{offset: d.resetTo, epoch: d.resetEpoch})
		}
		return w.note(FDataLoss, d.payload())
	}
	return fmt.Errorf("consumer %d: unknown control event %d", w.p, ev.kind)
}
