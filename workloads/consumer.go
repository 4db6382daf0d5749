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
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
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
	// StallEvery, when set (subscribe mode), stalls the consumer about that often (0.5x to
	// 1.5x, from the seed) for twice MaxPollInterval without a poll, as a slow application
	// does: the group drops the member, and its next poll tells it that its partitions are
	// lost. MaxPollInterval is its client's max.poll.interval.ms (for the clients that have
	// one; 0: the client's default).
	StallEvery      time.Duration `json:"stall_every,omitempty"`
	MaxPollInterval time.Duration `json:"max_poll_interval,omitempty"`
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
	if c.StallEvery != 0 && (c.Mode != Subscribe || c.StallEvery < 0 || c.MaxPollInterval <= 0) {
		return c, fmt.Errorf("consumer: stall_every %s: only a group member stalls, every positive duration, past a max_poll_interval given", c.StallEvery)
	}
	if c.PollWait <= 0 {
		c.PollWait = 200 * time.Millisecond
	}
	if c.PollRecords <= 0 {
		c.PollRecords = 500
	}
	return c, nil
}

// ConsumerStats counts a consumer's polls.
type ConsumerStats struct {
	Process             int
	Polls, Records      int64
	Rebalances, Crashes int64
	// Stalls counts the stalls past max.poll.interval.ms (StallEvery).
	Stalls int64
	// DataLosses counts the truncations under the consumer's position that its client reported.
	DataLosses int64
}

// consumerOpener is what the consumer role needs of a client (kclient.Client has it): the
// partitions of the topics an assign-mode consumer reads, and the instances.
type consumerOpener interface {
	Partitions(ctx context.Context, clientID string, topics []string) (map[string][]int32, error)
	OpenConsumer(ctx context.Context, s kclient.ConsumerSpec) (kclient.Consumer, error)
}

// claimsPayload is the assign op's value for a rebalance's assignment c, the same for every
// client.
func claimsPayload(c kclient.Claims, group, isolation string) map[string]any {
	parts := map[string][]int32{}
	for t, ps := range c.Partitions {
		ps = slices.Clone(ps)
		slices.Sort(ps)
		parts[t] = ps
	}
	topics := slices.AppendSeq([]string{}, maps.Keys(parts)) // [] rather than null when nothing is owned
	slices.Sort(topics)
	return map[string]any{
		"group": group, "generation": c.Generation, "member": c.Member,
		"partitions": parts, "topics": topics,
		"isolation": isolation, "rebalance": true,
	}
}

type consumerRun struct {
	env   Env
	cfg   ConsumerConfig
	p     int
	proc  history.Process
	rng   *rand.Rand
	log   *slog.Logger
	cl    consumerOpener
	stats ConsumerStats
	// next is, in assign mode, the position reached in each partition: where a restarted
	// instance resumes.
	next map[string]map[int32]kclient.Position
	// pending is what the instance's last Poll returned that is not recorded yet.
	pending []kclient.Event
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
	cl, err := env.client()
	if err != nil {
		return ConsumerStats{}, err
	}
	return runConsumer(ctx, env, p, cfg, cl)
}

// runConsumer is RunConsumer with its settled env, resolved cfg and client.
func runConsumer(ctx context.Context, env Env, p int, cfg ConsumerConfig, cl consumerOpener) (ConsumerStats, error) {
	w := &consumerRun{env: env, cfg: cfg, p: p, proc: history.Client(p), rng: NewRand(env.Seed, p), cl: cl,
		log: env.Log.With("workload", "consumer", "process", p, "client", env.Client, "mode", cfg.Mode,
			"isolation", cfg.Isolation),
		next: map[string]map[int32]kclient.Position{}}
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
		"data_losses", w.stats.DataLosses, "stalls", w.stats.Stalls)
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
		sub := map[string]any{"topics": w.cfg.Topics, "group": w.cfg.Group, "isolation": w.cfg.Isolation}
		if w.cfg.FromNewest {
			sub["reset"] = "latest" // where a group with no committed offset starts (docs/history.md)
		}
		if err := w.note(history.FSubscribe, sub); err != nil {
			return err
		}
	}
	spec := kclient.ConsumerSpec{ClientID: clientID(w.p, "consumer"), Isolation: w.cfg.Isolation, FromNewest: w.cfg.FromNewest,
		MaxPollInterval: w.cfg.MaxPollInterval, Log: w.log}
	var parts map[string][]int32
	if w.cfg.Mode == Subscribe {
		spec.Group, spec.Topics, spec.GroupProtocol = w.cfg.Group, w.cfg.Topics, w.env.GroupProtocol
	} else {
		var err error
		if parts, err = w.assignment(ictx, spec.ClientID+"-meta"); err != nil {
			if ictx.Err() != nil {
				return nil
			}
			return err
		}
		spec.Assign = w.positions(parts)
	}
	cc, err := w.cl.OpenConsumer(ictx, spec)
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
	stallAt := w.nextStall()
	for ictx.Err() == nil && !w.pollsDone() {
		if !stallAt.IsZero() && time.Now().After(stallAt) {
			w.stats.Stalls++
			w.log.Info("stalling past max.poll.interval.ms", "for", 2*w.cfg.MaxPollInterval)
			if kit.Sleep(ictx, 2*w.cfg.MaxPollInterval) != nil {
				return nil
			}
			stallAt = w.nextStall()
		}
		if err := w.poll(ictx, cc); err != nil {
			return err
		}
	}
	return nil
}

// nextStall is when the instance stalls next (StallEvery); zero: never.
func (w *consumerRun) nextStall() time.Time {
	if w.cfg.StallEvery <= 0 {
		return time.Time{}
	}
	return time.Now().Add(time.Duration((0.5 + w.rng.Float64()) * float64(w.cfg.StallEvery)))
}

// assignment lists the partitions an assign-mode consumer reads: those cfg.Partitions names, and
// every partition of the other topics, as the cluster knows them.
func (w *consumerRun) assignment(ctx context.Context, clientID string) (map[string][]int32, error) {
	parts := map[string][]int32{}
	var ask []string
	for _, t := range w.cfg.Topics {
		if ps, ok := w.cfg.Partitions[t]; ok {
			parts[t] = ps
		} else {
			ask = append(ask, t)
		}
	}
	if len(ask) == 0 {
		return parts, nil
	}
	found, err := w.cl.Partitions(ctx, clientID, ask)
	if err != nil {
		return nil, fmt.Errorf("consumer %d: %w", w.p, err)
	}
	maps.Copy(parts, found)
	return parts, nil
}

// positions is where each of parts resumes: where the previous instances got to, else the
// start (FromNewest says which).
func (w *consumerRun) positions(parts map[string][]int32) map[string]map[int32]kclient.Position {
	from := map[string]map[int32]kclient.Position{}
	for t, ps := range parts {
		from[t] = map[int32]kclient.Position{}
		for _, p := range ps {
			pos, ok := w.next[t][p]
			if !ok {
				pos = kclient.Position{Offset: -1, Epoch: -1}
			}
			from[t][p] = pos
		}
	}
	return from
}

// poll records one poll: the records the client returns within PollWait (at most PollRecords),
// in arrival order, up to the first control event; then the control events that follow them.
func (w *consumerRun) poll(ctx context.Context, cc kclient.Consumer) error {
	pl := &history.Poll{Isolation: string(w.cfg.Isolation), Group: w.cfg.Group, Records: []history.Record{}}
	inv, err := w.env.Recorder.Invoke(w.proc, history.FPoll, history.Payload{Poll: pl})
	if err != nil {
		return fmt.Errorf("consumer %d: recording a poll: %w", w.p, err)
	}
	if len(w.pending) == 0 {
		w.pending = cc.Poll(ctx, w.cfg.PollWait, w.cfg.PollRecords)
	}
	n := 0
	for n < len(w.pending) && n < w.cfg.PollRecords && w.pending[n].Kind == kclient.EventRecord {
		pl.Records = append(pl.Records, w.pending[n].Record)
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
			w.remember(ev.Record.Topic, ev.Record.Partition, kclient.Position{Offset: *ev.Record.Offset + 1, Epoch: ev.Epoch})
		}
	}
	// Only now that the history shows them may the client commit them.
	cc.Recorded(recs)
	for len(w.pending) > 0 && w.pending[0].Kind != kclient.EventRecord {
		ev := w.pending[0]
		w.pending = w.pending[1:]
		if err := w.control(ev); err != nil {
			return err
		}
	}
	return nil
}

func (w *consumerRun) remember(topic string, partition int32, pos kclient.Position) {
	if w.next[topic] == nil {
		w.next[topic] = map[int32]kclient.Position{}
	}
	w.next[topic][partition] = pos
}

// control records a control event as an op of the process, between the polls where it happened.
func (w *consumerRun) control(ev kclient.Event) error {
	switch ev.Kind {
	case kclient.EventAssigned:
		w.stats.Rebalances++
		return w.note(history.FAssign, claimsPayload(ev.Claims, w.cfg.Group, string(w.cfg.Isolation)))
	case kclient.EventDataLoss:
		d := ev.Loss
		w.stats.DataLosses++
		w.log.Warn("the client found the log truncated under the consumer's position", "topic", d.Topic,
			"partition", d.Partition, "offset", d.Offset, "epoch", d.Epoch, "reset_to", d.ResetTo, "reset_epoch", d.ResetEpoch)
		if w.cfg.Mode == Assign {
			w.remember(d.Topic, d.Partition, kclient.Position{Offset: d.ResetTo, Epoch: d.ResetEpoch})
		}
		return w.note(history.FDataLoss, d)
	case kclient.EventRevoked:
		// A consumer reports its new assignment; a generation's end alone changes nothing it
		// records.
		return nil
	}
	return fmt.Errorf("consumer %d: unknown control event %d", w.p, ev.Kind)
}
