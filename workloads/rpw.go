package workloads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/kclient"
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
	// seed), in the middle of a transaction: outputs sent, offsets added (franz-go adds them
	// only as it commits: there, outputs only), no commit. A new instance (same process, same
	// transactional.id) takes over and resumes from the committed offsets.
	CrashEvery time.Duration `json:"crash_every,omitempty"`
	// CrashAfterCommit moves those crashes to right after a committed transaction: the
	// instance leaves the group while its offsets may still wait for their commit markers, and
	// the member that takes its partitions fetches their offsets (KIP-447's stable offsets).
	CrashAfterCommit bool `json:"crash_after_commit,omitempty"`
	// MaxSteps stops the processor after this many transactions (0: until its context ends).
	MaxSteps int `json:"max_steps,omitempty"`
	// Writes, when set, makes each transaction one that reads and writes: with what it polled
	// before it began, it sends Writes new records to random partitions of Output (which may
	// be Input, so that what one member writes another reads) instead of one output per input,
	// polls once more inside the transaction (for at most BatchWait), puts the offsets of both
	// polls into it, and is recorded as a txn op with every record it read. With nothing to
	// read for BatchWait it still begins one, so that members sharing one topic start each
	// other.
	Writes int `json:"writes,omitempty"`
	// Isolation is the member's consumer's: read_committed (default), or read_uncommitted for
	// a Writes processor that shows what that level permits.
	Isolation kafkaconf.Isolation `json:"isolation,omitempty"`
	// SkipRewind leaves the member where it was after an aborted transaction (not after an
	// unknown outcome), as an application that forgets KAFKA-17582 does: a control of
	// resume-skipped-ahead, for clients whose member keeps its position.
	SkipRewind bool `json:"skip_rewind,omitempty"`
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
	if c.Writes < 0 {
		return c, errors.New("processor: writes must not be negative")
	}
	if c.Isolation == kafkaconf.ReadUncommitted && c.Writes == 0 {
		return c, errors.New("processor: read_uncommitted needs writes: a read-process-write step is exactly-once only at read_committed")
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
	Crashes                    int64
	// Sessions counts the assignments the processor's members were given: with sarama,
	// every group session (every generation, and every rewind, which starts a new session);
	// with franz-go, the generations joined.
	Sessions int64
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
	parts, err := topicPartitions(ctx, env, clientID(p, "rpw-meta"), []string{cfg.Output})
	if err != nil {
		return w.stats, fmt.Errorf("processor %d: %w", p, err)
	}
	w.outParts = parts[cfg.Output]
	w.scheduleCrash()
	for ctx.Err() == nil && (cfg.MaxSteps == 0 || w.steps < cfg.MaxSteps) {
		err := w.instance(ctx)
		var crash *kclient.ReplaceError
		switch {
		case errors.As(err, &crash):
			if err := w.crash(crash.Reason); err != nil {
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
	inv, err := w.env.Recorder.Invoke(w.proc, history.FCrash, raw(history.Crash{Reason: reason, TxnID: w.cfg.TxnID}))
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
	tc, err := openTxnProducer(fctx, w.env, w.p, "rpw", w.cfg.TxnID, w.cfg.TxnClientConfig, w.log)
	if err != nil {
		w.log.Warn("could not abort the crashed instance's transaction; the coordinator will after its timeout", "err", err)
		return
	}
	tc.Close()
}

// open starts an instance of the run's client, retrying its initialisation until ctx ends (as
// openTxnProducer).
func (w *processor) open(ctx context.Context) (kclient.Member, error) {
	cl, err := w.env.client()
	if err != nil {
		return nil, fmt.Errorf("processor %d: %w", w.p, err)
	}
	spec := kclient.MemberSpec{Txn: txnSpec(w.env, w.p, "rpw", w.cfg.TxnID, w.cfg.TxnClientConfig, w.log),
		ConsumerClientID: clientID(w.p, "rpw-consumer"), Group: w.cfg.Group, Input: w.cfg.Input, GroupProtocol: w.env.GroupProtocol,
		Isolation: w.cfg.Isolation}
	m, err := initWithRetry(ctx, w.log, w.cfg.TxnID, func() (kclient.Member, error) { return cl.OpenMember(ctx, spec) })
	if err != nil {
		return nil, fmt.Errorf("processor %d: %w", w.p, err)
	}
	return m, nil
}

// instance runs one instance until ctx ends, MaxSteps are done, or it must be replaced (a
// *kclient.ReplaceError). It gathers a batch of inputs (at most BatchRecords, for at most
// BatchWait from its first record) and processes it in one step. A rebalance (an assignment or
// a revocation) drops the batch: its inputs are read again, by this member or another, from the
// committed offsets.
func (w *processor) instance(ctx context.Context) error {
	m, err := w.open(ctx)
	if err != nil {
		return err
	}
	defer m.Close()
	var batch []history.Record
	var due time.Time
	idle := time.Now().Add(w.cfg.BatchWait) // a Writes processor's transaction with nothing read
	for ctx.Err() == nil && !w.stepsDone() {
		n := len(batch)
		if (n > 0 && (n >= w.cfg.BatchRecords || !time.Now().Before(due))) || (n == 0 && w.cfg.Writes > 0 && !time.Now().Before(idle)) {
			idle = time.Now().Add(w.cfg.BatchWait)
			in := batch
			batch = nil
			if err := w.step(ctx, m, in); err != nil {
				return err
			}
			continue
		}
		var until time.Time
		switch {
		case len(batch) > 0:
			until = due
		case w.cfg.Writes > 0:
			until = idle
		}
		// At most what the batch lacks: a client that commits the offsets of everything it
		// polled (franz-go's End) then commits exactly the offsets after the batch.
		evs, err := m.Poll(ctx, w.cfg.BatchRecords-len(batch), until)
		for _, ev := range evs {
			switch ev.Kind {
			case kclient.EventAssigned:
				batch = nil
				w.stats.Sessions++
				if err := w.note(history.FAssign, claimsPayload(ev.Claims, w.cfg.Group, string(w.member()))); err != nil {
					return err
				}
			case kclient.EventRevoked:
				batch = nil
			case kclient.EventRecord:
				if len(batch) == 0 {
					due = time.Now().Add(w.cfg.BatchWait)
				}
				batch = append(batch, ev.Record)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *processor) stepsDone() bool { return w.cfg.MaxSteps > 0 && w.steps >= w.cfg.MaxSteps }

// outputs are what a step writes for its inputs in: one output per input, keyed by the input's
// value so that a reader can see which input it came from; or, for a Writes processor, Writes
// new records to random partitions.
func (w *processor) outputs(in []history.Record) []history.Record {
	if w.cfg.Writes > 0 {
		out := make([]history.Record, w.cfg.Writes)
		for i := range out {
			out[i] = history.Record{Topic: w.cfg.Output, Partition: w.rng.Int32N(max(w.outParts, 1)), Value: w.values.Next()}
		}
		return out
	}
	out := make([]history.Record, len(in))
	for i, r := range in {
		out[i] = history.Record{Topic: w.cfg.Output, Partition: r.Partition % max(w.outParts, 1), Key: r.Value, Value: w.values.Next()}
	}
	return out
}

// step processes one batch in one transaction and records it: as an rpw op, or for a Writes
// processor as a txn op with what it read.
func (w *processor) step(ctx context.Context, m kclient.Member, in []history.Record) error {
	w.steps++
	out := w.outputs(in)
	abort := w.rng.Float64() < w.cfg.AbortProbability
	crash := !w.nextCrash.IsZero() && !time.Now().Before(w.nextCrash)
	var endT int64             // when the commit or abort was asked for
	var reads []history.Record // a Writes transaction's reads, in its completion: known as it polls
	f, payload := history.FRPW, func() history.Payload {
		return history.Payload{RPW: &history.RPW{Input: in, Output: out, TxnID: w.cfg.TxnID, EndT: endT}}
	}
	if w.cfg.Writes > 0 {
		intent := history.IntentCommit
		if abort {
			intent = history.IntentAbort
		}
		f, payload = history.FTxn, func() history.Payload {
			return history.Payload{Txn: &history.Txn{TxnID: w.cfg.TxnID, Records: out, Intent: intent,
				Reads: reads, Isolation: string(w.member()), EndT: endT}}
		}
	}
	inv, err := w.env.Recorder.Invoke(w.proc, f, payload())
	reads = slices.Concat([]history.Record{}, in)
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
			if text == kclient.TxnAborted {
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

	if err := m.Begin(); err != nil {
		if cerr := complete(history.Fail, kclient.TxnNotSent+"begin: "+ErrorText(err)); cerr != nil {
			return cerr
		}
		return &kclient.ReplaceError{Reason: "begin transaction: " + ErrorText(err)}
	}
	if err := m.Send(out, time.Now().Add(w.cfg.DeliveryTimeout)); err != nil {
		aerr := m.Abort()
		if cerr := complete(history.Fail, kclient.TxnNotSent+"an output failed: "+ErrorText(err)+kclient.AbortNote(ErrorText(aerr))); cerr != nil {
			return cerr
		}
		return w.after(m, history.Fail)
	}
	if w.cfg.Writes > 0 {
		more, rebalance, err := w.pollInside(ctx, m)
		reads = slices.Concat(reads, more)
		if err != nil || rebalance != nil {
			// The offsets of what was polled before the rebalance no longer belong to this
			// member's generation: the transaction cannot commit them.
			why := "the group rebalanced inside the transaction"
			if err != nil {
				why = "polling inside the transaction: " + ErrorText(err)
			}
			aerr := m.Abort()
			if cerr := complete(history.Fail, kclient.TxnNotSent+why+kclient.AbortNote(ErrorText(aerr))); cerr != nil {
				return cerr
			}
			if err != nil {
				return err
			}
			// The new assignment is recorded once the transaction's op is complete: a process's
			// ops follow one another, and an op between a transaction's invoke and its
			// completion would leave the completion without its invoke.
			if rebalance.Kind == kclient.EventAssigned {
				w.stats.Sessions++
				if err := w.note(history.FAssign, claimsPayload(rebalance.Claims, w.cfg.Group, string(w.member()))); err != nil {
					return err
				}
			}
			return w.after(m, history.Fail)
		}
		in = append(in, more...)
	}
	if err := w.addOffsets(m, in); err != nil {
		aerr := m.Abort()
		if cerr := complete(history.Fail, kclient.TxnNotSent+"adding offsets: "+ErrorText(err)+kclient.AbortNote(ErrorText(aerr))); cerr != nil {
			return cerr
		}
		return w.after(m, history.Fail)
	}
	if crash && !w.cfg.CrashAfterCommit {
		// Crash mid-transaction: the commit is never requested. The next instance's
		// initialisation of the transactional.id aborts the open transaction.
		w.scheduleCrash()
		if err := complete(history.Fail, kclient.TxnNotSent+"the instance crashed before committing"); err != nil {
			return err
		}
		return &kclient.ReplaceError{Reason: "crash mid-transaction (crash_every)"}
	}
	endT = int64(w.env.Recorder.Since())
	if abort {
		aerr := m.Abort()
		if err := complete(history.Fail, kclient.TxnAborted); err != nil {
			return err
		}
		if aerr != nil {
			return &kclient.ReplaceError{Reason: "abort failed: " + ErrorText(aerr)}
		}
		return w.after(m, history.Fail)
	}
	t, text := m.Commit()
	if err := complete(t, text); err != nil {
		return err
	}
	if t == history.OK && crash {
		w.scheduleCrash()
		return &kclient.ReplaceError{Reason: "crash right after a commit (crash_every, crash_after_commit)"}
	}
	if t == history.OK {
		return nil
	}
	return w.after(m, t)
}

// pollInside polls once inside a Writes processor's transaction, for at most BatchWait. A
// rebalance (the records polled before it are to be read again) comes back as its last event,
// the assignment when there is one, for the caller to record once the transaction is over.
func (w *processor) pollInside(ctx context.Context, m kclient.Member) (more []history.Record, rebalance *kclient.Event, err error) {
	evs, err := m.Poll(ctx, w.cfg.BatchRecords, time.Now().Add(w.cfg.BatchWait))
	for i := range evs {
		switch ev := &evs[i]; ev.Kind {
		case kclient.EventAssigned, kclient.EventRevoked:
			if rebalance == nil || ev.Kind == kclient.EventAssigned {
				rebalance = ev
			}
		case kclient.EventRecord:
			if rebalance == nil {
				more = append(more, ev.Record)
			}
		}
	}
	return more, rebalance, err
}

// member is the isolation level the member reads at.
func (w *processor) member() kafkaconf.Isolation {
	return kclient.MemberSpec{Isolation: w.cfg.Isolation}.ReadIsolation()
}

// addOffsets puts the offsets after in into the transaction; a transaction that read nothing
// has none to add.
func (w *processor) addOffsets(m kclient.Member, in []history.Record) error {
	if len(in) == 0 {
		return nil
	}
	return m.AddOffsets(in)
}

// after a step that did not commit (outcome t): rewind to the committed offsets, or replace the
// instance when its producer can no longer be used.
func (w *processor) after(m kclient.Member, t history.Type) error {
	if ok, why := m.Ready(); !ok {
		return &kclient.ReplaceError{Reason: "the producer is not ready for another transaction (" + why + ")"}
	}
	if w.cfg.SkipRewind && t == history.Fail {
		return nil
	}
	return m.Rewind(t)
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
