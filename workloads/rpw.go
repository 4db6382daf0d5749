package workloads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/history"
)

// ProcessorConfig is a read-process-write processor: it consumes Input in a consumer group at
// read_committed, turns each record into one output record, and produces the outputs and
// commits the consumed offsets in one transaction.
type ProcessorConfig struct {
	Input  string `json:"input"`
	Output string `json:"output"`
	// Group is the consumer group; default "verity-rpw-<input>".
	Group string `json:"group,omitempty"`
	// TxnID is the stable transactional.id; default "verity-rpw-<process>".
	TxnID string `json:"txn_id,omitempty"`
	// BatchRecords (default 20) and BatchWait (default 100ms, counted from a batch's first
	// record) bound the inputs of one transaction.
	BatchRecords int           `json:"batch_records,omitempty"`
	BatchWait    time.Duration `json:"batch_wait,omitempty"`
	// AbortProbability is the chance that a step's transaction is aborted on purpose; the
	// processor then seeks back to the committed offsets and processes the inputs again.
	AbortProbability float64 `json:"abort_probability,omitempty"`
	// CrashEvery, when set, crashes the processor about that often (0.5x to 1.5x, from the
	// seed), in the middle of a transaction: outputs sent, offsets added, no commit. A new
	// instance (same process, same transactional.id) takes over and resumes from the
	// committed offsets.
	CrashEvery time.Duration `json:"crash_every,omitempty"`
	// MaxSteps stops the processor after this many transactions (0: until its context ends).
	MaxSteps int `json:"max_steps,omitempty"`
	TxnClientConfig
}

func (c ProcessorConfig) resolved(p int) (ProcessorConfig, error) {
	if c.Input == "" || c.Output == "" {
		return c, errors.New("processor: input and output topics are required")
	}
	if c.Group == "" {
		c.Group = "verity-rpw-" + c.Input
	}
	if c.TxnID == "" {
		c.TxnID = fmt.Sprintf("verity-rpw-%d", p)
	}
	if c.BatchRecords <= 0 {
		c.BatchRecords = 20
	}
	if c.BatchWait <= 0 {
		c.BatchWait = 100 * time.Millisecond
	}
	if c.AbortProbability < 0 || c.AbortProbability > 1 {
		return c, errors.New("processor: abort_probability must lie in [0, 1]")
	}
	c.TxnClientConfig = c.TxnClientConfig.withDefaults()
	return c, nil
}

// ProcessorStats counts a processor's steps.
type ProcessorStats struct {
	Process                    int
	Committed, Failed, Unknown int64
	Aborted                    int64 // on purpose (part of Failed)
	InputsCommitted            int64
	Crashes, Sessions          int64
}

type processor struct {
	env       Env
	cfg       ProcessorConfig
	p         int
	proc      history.Process
	rng       *rand.Rand
	values    *Values
	outParts  int32
	log       *slog.Logger
	stats     ProcessorStats
	nextCrash time.Time
	steps     int
}

// errCrash asks for the instance to be replaced: the processor crashed on purpose, or its
// producer can no longer be used.
type errCrash struct{ reason string }

func (e errCrash) Error() string { return e.reason }

// RunProcessor runs a read-process-write processor as history process p until ctx ends.
func RunProcessor(ctx context.Context, env Env, p int, cfg ProcessorConfig) (ProcessorStats, error) {
	env, err := env.withDefaults()
	if err != nil {
		return ProcessorStats{}, err
	}
	if cfg, err = cfg.resolved(p); err != nil {
		return ProcessorStats{}, err
	}
	w := &processor{env: env, cfg: cfg, p: p, proc: history.Client(p), rng: NewRand(env.Seed, p), values: NewValues(p),
		log: env.Log.With("workload", "rpw", "process", p)}
	w.stats.Process = p
	client, err := sarama.NewClient(env.Brokers, env.Sarama(clientID(p, "rpw-meta")))
	if err != nil {
		return w.stats, fmt.Errorf("processor %d: connecting: %w", p, err)
	}
	parts, err := partitionCounts(client, []string{cfg.Output})
	_ = client.Close()
	if err != nil {
		return w.stats, fmt.Errorf("processor %d: %w", p, err)
	}
	w.outParts = parts[cfg.Output]
	w.scheduleCrash()
	for ctx.Err() == nil && (cfg.MaxSteps == 0 || w.steps < cfg.MaxSteps) {
		err := w.instance(ctx)
		var crash errCrash
		switch {
		case errors.As(err, &crash):
			if err := w.crash(crash.reason); err != nil {
				return w.stats, err
			}
			if ctx.Err() != nil {
				w.fence(ctx)
			}
		case ctx.Err() != nil:
		case err != nil:
			return w.stats, err
		}
	}
	w.log.Info("processor done", "committed", w.stats.Committed, "failed", w.stats.Failed, "unknown", w.stats.Unknown,
		"inputs", w.stats.InputsCommitted, "crashes", w.stats.Crashes, "sessions", w.stats.Sessions)
	return w.stats, nil
}

func (w *processor) scheduleCrash() {
	if w.cfg.CrashEvery > 0 {
		w.nextCrash = time.Now().Add(time.Duration((0.5 + w.rng.Float64()) * float64(w.cfg.CrashEvery)))
	}
}

// crash records the replacement of an instance. The old one is closed already; the new one is
// started by the next call of instance, so the op brackets the restart's decision, and the
// process's next op is the new instance's.
func (w *processor) crash(reason string) error {
	w.stats.Crashes++
	inv, err := w.env.Recorder.Invoke(w.proc, history.FCrash, raw(map[string]any{"reason": reason, "txn_id": w.cfg.TxnID}))
	if err != nil {
		return fmt.Errorf("processor %d: recording a crash: %w", w.p, err)
	}
	if _, err := w.env.Recorder.Complete(inv, history.OK, inv.Value, ""); err != nil {
		return fmt.Errorf("processor %d: recording a crash: %w", w.p, err)
	}
	return nil
}

// fence initialises the transactional.id once more when the run ends right after a crash: the
// crashed instance's transaction would otherwise stay open until the coordinator's timeout,
// and hold back every read_committed reader (the final read among them) until then.
func (w *processor) fence(ctx context.Context) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*w.cfg.Timeout)
	defer cancel()
	tc, err := openTxnClient(fctx, w.env, w.p, "rpw", w.cfg.TxnID, w.cfg.TxnClientConfig, w.log)
	if err != nil {
		w.log.Warn("could not abort the crashed instance's transaction; the coordinator will after its timeout", "err", err)
		return
	}
	tc.close()
}

// instance runs one instance (a group member and a transactional producer) until ctx ends or it
// must be replaced (errCrash).
func (w *processor) instance(ctx context.Context) (err error) {
	tc, err := openTxnClient(ctx, w.env, w.p, "rpw", w.cfg.TxnID, w.cfg.TxnClientConfig, w.log)
	if err != nil {
		return err
	}
	defer tc.close()
	ccfg := w.env.Sarama(clientID(w.p, "rpw-consumer"))
	ccfg.Consumer.IsolationLevel = sarama.ReadCommitted
	ccfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	// Offsets move only inside transactions (AddOffsetsToTxn): never by auto-commit.
	ccfg.Consumer.Offsets.AutoCommit.Enable = false
	ccfg.Consumer.Return.Errors = true
	group, err := sarama.NewConsumerGroup(w.env.Brokers, w.cfg.Group, ccfg)
	if err != nil {
		return errCrash{reason: "creating the consumer group member: " + err.Error()}
	}
	stop := make(chan struct{})
	defer func() {
		close(stop)
		if cerr := group.Close(); cerr != nil {
			w.log.Warn("closing the consumer group member", "err", cerr)
		}
	}()
	go func() {
		for gerr := range group.Errors() {
			w.log.Debug("consumer group", "err", gerr)
		}
	}()
	events := make(chan groupEvent)
	h := &groupHandler{events: events, stop: stop}
	for ctx.Err() == nil && !w.stepsDone() {
		err := w.session(ctx, group, h, events, tc)
		switch {
		case errors.Is(err, errSeekBack):
			// A new session: the group hands the partitions back from the committed offsets.
		case errors.Is(err, errStepsDone):
			return nil
		case err != nil:
			return err
		}
	}
	return nil
}

// errStepsDone ends a processor that has run MaxSteps steps.
var errStepsDone = errors.New("max steps reached")

func (w *processor) stepsDone() bool { return w.cfg.MaxSteps > 0 && w.steps >= w.cfg.MaxSteps }

// session runs one Consume call: one group generation. It returns nil to start another (a
// rebalance, or a seek back to the committed offsets after a transaction that did not commit),
// or an error to end the instance.
func (w *processor) session(ctx context.Context, group sarama.ConsumerGroup, h *groupHandler, events chan groupEvent, tc *txnClient) error {
	w.stats.Sessions++
	sctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- group.Consume(sctx, []string{w.cfg.Input}, h) }()
	// Before returning, end the session and read every event until Consume returns: its
	// claims must not outlive it, and none of its records may reach the next session.
	finished := false
	defer func() {
		cancel()
		for !finished {
			select {
			case <-events:
			case <-errc:
				finished = true
			}
		}
	}()

	var sess sarama.ConsumerGroupSession
	var batch []*sarama.ConsumerMessage
	var due <-chan time.Time
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		in := batch
		batch, due = nil, nil
		if err := w.step(sess, in, tc); err != nil {
			return err
		}
		if w.stepsDone() {
			return errStepsDone
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			finished = true
			if err != nil && !errors.Is(err, context.Canceled) {
				w.log.Warn("consumer group session ended with an error; joining again", "err", err)
				// Pace the rejoin: the coordinator may be unavailable for a while.
				_ = sleepCtx(ctx, time.Second)
			}
			return nil
		case <-due:
			if err := flush(); err != nil {
				return err
			}
		case ev := <-events:
			switch ev.kind {
			case evSetup:
				sess, batch, due = ev.sess, nil, nil
				if err := w.note(history.FAssign, claimsPayload(ev.sess, w.cfg.Group, history.ReadCommitted)); err != nil {
					return err
				}
			case evCleanup:
				// The generation ended (a rebalance): a batch not yet processed is read
				// again by the next session from the committed offsets.
				sess, batch, due = nil, nil, nil
			case evRecord:
				if ev.sess != sess || sess == nil {
					continue
				}
				if len(batch) == 0 {
					if timer == nil {
						timer = time.NewTimer(w.cfg.BatchWait)
					} else {
						timer.Reset(w.cfg.BatchWait)
					}
					due = timer.C
				}
				batch = append(batch, ev.msg)
				if len(batch) >= w.cfg.BatchRecords {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
	}
}

// errSeekBack ends the session so that the next one starts from the committed offsets: after a
// transaction that did not commit, the consumer's position is past inputs whose processing was
// rolled back, and sarama (like the Java consumer, KAFKA-17582) does not rewind by itself.
var errSeekBack = errors.New("seek back to the committed offsets")

// step processes one batch in one transaction and records it as an rpw op.
func (w *processor) step(sess sarama.ConsumerGroupSession, batch []*sarama.ConsumerMessage, tc *txnClient) error {
	w.steps++
	in := make([]history.Record, len(batch))
	out := make([]history.Record, len(batch))
	offsets := map[int32]int64{}
	for i, m := range batch {
		in[i] = history.Record{Topic: m.Topic, Partition: m.Partition, Value: string(m.Value)}.At(m.Offset)
		if len(m.Key) > 0 {
			in[i].Key = string(m.Key)
		}
		// The transformation: one output per input, keyed by the input's value so that a
		// reader can see which input it came from.
		out[i] = history.Record{Topic: w.cfg.Output, Partition: m.Partition % max(w.outParts, 1), Key: string(m.Value), Value: w.values.Next()}
		offsets[m.Partition] = max(offsets[m.Partition], m.Offset+1)
	}
	abort := w.rng.Float64() < w.cfg.AbortProbability
	crash := !w.nextCrash.IsZero() && !time.Now().Before(w.nextCrash)
	payload := func() history.Payload {
		return history.Payload{RPW: &history.RPW{Input: in, Output: out, TxnID: w.cfg.TxnID}}
	}
	inv, err := w.env.Recorder.Invoke(w.proc, history.FRPW, payload())
	if err != nil {
		return fmt.Errorf("processor %d: recording a step: %w", w.p, err)
	}
	complete := func(t history.Type, text string) error {
		switch {
		case t == history.OK:
			w.stats.Committed++
			w.stats.InputsCommitted += int64(len(in))
		case t == history.Fail:
			w.stats.Failed++
			if text == txnAborted {
				w.stats.Aborted++
			}
		default:
			w.stats.Unknown++
		}
		if _, err := w.env.Recorder.Complete(inv, t, payload(), text); err != nil {
			return fmt.Errorf("processor %d: recording a step's outcome: %w", w.p, err)
		}
		return nil
	}

	if err := tc.begin(); err != nil {
		if cerr := complete(history.Fail, txnNotSent+"begin: "+ErrorText(err)); cerr != nil {
			return cerr
		}
		return errCrash{reason: "begin transaction: " + ErrorText(err)}
	}
	if err := tc.send(out, time.Now().Add(w.cfg.DeliveryTimeout)); err != nil {
		aerr := tc.abort()
		if cerr := complete(history.Fail, txnNotSent+"an output failed: "+ErrorText(err)+abortNote(aerr)); cerr != nil {
			return cerr
		}
		return w.after(tc)
	}
	// KIP-447: the offsets go with the member's generation, so that a member fenced by a
	// rebalance cannot commit them (the plain AddOffsetsToTxn sends generation -1, which
	// fences nothing).
	po := map[string][]*sarama.PartitionOffsetMetadata{}
	for part, off := range offsets {
		po[w.cfg.Input] = append(po[w.cfg.Input], &sarama.PartitionOffsetMetadata{Partition: part, Offset: off})
	}
	if err := tc.prod.AddOffsetsToTxnWithGroupMetadata(po, sarama.NewConsumerGroupMetadataFromSession(sess, w.cfg.Group, nil)); err != nil {
		aerr := tc.abort()
		if cerr := complete(history.Fail, txnNotSent+"adding offsets: "+ErrorText(err)+abortNote(aerr)); cerr != nil {
			return cerr
		}
		return w.after(tc)
	}
	if crash {
		// Crash mid-transaction: the commit is never requested. The next instance's
		// InitProducerId aborts the open transaction.
		w.scheduleCrash()
		if err := complete(history.Fail, txnNotSent+"the instance crashed before committing"); err != nil {
			return err
		}
		return errCrash{reason: "crash mid-transaction (crash_every)"}
	}
	if abort {
		aerr := tc.abort()
		if err := complete(history.Fail, txnAborted); err != nil {
			return err
		}
		if aerr != nil {
			return errCrash{reason: "abort failed: " + ErrorText(aerr)}
		}
		return w.after(tc)
	}
	t, text := tc.commit()
	if err := complete(t, text); err != nil {
		return err
	}
	if t == history.OK {
		return nil
	}
	return w.after(tc)
}

// after a step that did not commit: seek back (a new session), or replace the instance when its
// producer can no longer be used.
func (w *processor) after(tc *txnClient) error {
	if !tc.ready() {
		return errCrash{reason: "the producer is not ready for another transaction (" + tc.prod.TxnStatus().String() + ")"}
	}
	return errSeekBack
}

// note records an op that only marks a moment (a rebalance's assignment).
func (w *processor) note(f string, v map[string]any) error {
	inv, err := w.env.Recorder.Invoke(w.proc, f, raw(v))
	if err != nil {
		return fmt.Errorf("processor %d: recording %s: %w", w.p, f, err)
	}
	if _, err := w.env.Recorder.Complete(inv, history.OK, inv.Value, ""); err != nil {
		return fmt.Errorf("processor %d: recording %s: %w", w.p, f, err)
	}
	return nil
}
