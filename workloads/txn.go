package workloads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// TxnConfig is one transactional producer workload: transactions of 1..MaxRecords records spread
// over at least two topics, each committed or aborted as the seed says.
type TxnConfig struct {
	// Topics the transactions write (at least 2; give each at least 2 partitions).
	Topics []string `json:"topics"`
	// TxnID is the stable transactional.id; default "verity-txn-<process>". Every instance
	// of the workload (after a crash, a zombie's usurper) uses it.
	TxnID string `json:"txn_id,omitempty"`
	// MaxRecords is k: each transaction has 1..k records (uniform from the seed); default 4.
	// Transactions of two or more records write at least two topics.
	MaxRecords int `json:"max_records,omitempty"`
	// AbortProbability is the chance that a transaction's intent is abort.
	AbortProbability float64 `json:"abort_probability,omitempty"`
	// ZombieProbability is the chance, per transaction, of zombie mode: after some of its
	// records are sent, a second instance (a new history process) initialises the same
	// transactional.id and carries on the workload; the first instance, now fenced, still
	// sends the rest of its records, tries to commit, and tries one more transaction before
	// it is closed. Kafka must refuse all of that.
	ZombieProbability float64 `json:"zombie_probability,omitempty"`
	// MaxZombies bounds the zombie episodes of the run (0: no bound).
	MaxZombies int `json:"max_zombies,omitempty"`
	// Gap pauses between transactions (pacing; 0: none).
	Gap time.Duration `json:"gap,omitempty"`
	// MaxTxns stops the workload after this many transactions (0: until its context ends).
	MaxTxns int `json:"max_txns,omitempty"`
	// HoldOpen keeps one transaction open this long after its records are sent, before it
	// commits or aborts, while the other workloads go on (read_committed readers stall at the
	// LSO meanwhile). The held transaction is the first one begun HoldAfter into the run. The
	// hold ends early when the run ends. Timeout must exceed HoldOpen, or the coordinator aborts
	// the transaction itself.
	HoldOpen  time.Duration `json:"hold_open,omitempty"`
	HoldAfter time.Duration `json:"hold_after,omitempty"`
	TxnClientConfig
}

func (c TxnConfig) resolved(p int) (TxnConfig, error) {
	if len(c.Topics) < 2 {
		return c, fmt.Errorf("transactional producer: %d topics; transactions must span at least 2", len(c.Topics))
	}
	if c.TxnID == "" {
		c.TxnID = fmt.Sprintf("verity-txn-%d", p)
	}
	if c.MaxRecords <= 0 {
		c.MaxRecords = 4
	}
	if c.AbortProbability < 0 || c.AbortProbability > 1 || c.ZombieProbability < 0 || c.ZombieProbability > 1 {
		return c, errors.New("transactional producer: probabilities must lie in [0, 1]")
	}
	c.TxnClientConfig = c.TxnClientConfig.withDefaults()
	if c.HoldOpen < 0 || c.HoldAfter < 0 {
		return c, errors.New("transactional producer: hold_open and hold_after must not be negative")
	}
	if c.HoldOpen > 0 && c.HoldOpen >= c.Timeout {
		return c, fmt.Errorf("transactional producer: hold_open %s must be shorter than the transaction timeout %s, or the coordinator aborts the held transaction", c.HoldOpen, c.Timeout)
	}
	return c, nil
}

// txnPlan is one transaction as the seed draws it.
type txnPlan struct {
	targets []target
	abort   bool
	// fenceAt >= 0: zombie mode; the usurper initialises after targets[:fenceAt] were sent.
	fenceAt int
	// hold keeps the transaction open for this long before it ends (TxnConfig.HoldOpen).
	hold time.Duration
}

// planTxn draws one transaction. It always draws the same number of values from rng for a
// given size, so that the plans of one seed do not depend on earlier outcomes.
func planTxn(rng *rand.Rand, topics []string, parts map[string]int32, maxRecords int, abortP, zombieP float64) txnPlan {
	n := 1 + rng.IntN(maxRecords)
	pl := txnPlan{targets: make([]target, n), fenceAt: -1}
	// The first two records go to two different topics, so that every transaction of two
	// or more records is atomic across topics, not only across partitions.
	first := rng.IntN(len(topics))
	second := (first + 1 + rng.IntN(len(topics)-1)) % len(topics)
	for i := range pl.targets {
		t := topics[rng.IntN(len(topics))]
		switch i {
		case 0:
			t = topics[first]
		case 1:
			t = topics[second]
		}
		pl.targets[i] = target{topic: t, partition: int32(rng.IntN(int(max(parts[t], 1))))}
	}
	pl.abort = rng.Float64() < abortP
	zombie, at := rng.Float64() < zombieP, rng.IntN(n)
	if zombie {
		pl.fenceAt = at
	}
	return pl
}

// TxnStats counts a transactional workload's outcomes.
type TxnStats struct {
	Process                                    int // the first instance's process
	Committed, Aborted, Failed, Unknown        int64
	Crashes, Zombies                           int64
	ZombieCommitsRefused, ZombieCommitsUnknown int64
	Processes                                  []int // every process that ran the workload
}

type txnRun struct {
	env    Env
	cfg    TxnConfig
	rng    *rand.Rand
	parts  map[string]int32
	log    *slog.Logger
	mu     sync.Mutex // guards stats: zombies finish in their own goroutines
	stats  TxnStats
	values map[int]*Values
}

// txnInstance is one process running the workload: its history process, and its client.
type txnInstance struct {
	p      int
	tc     kclient.Txn
	values *Values
	// firstOp, when set, is closed once the instance has recorded its first op (a usurper
	// signalling its zombie, see transaction).
	firstOp chan struct{}
}

// signal closes firstOp, once.
func (in *txnInstance) signal() {
	if in.firstOp != nil {
		close(in.firstOp)
		in.firstOp = nil
	}
}

// RunTxnProducer runs the transactional workload with process p as its first instance until ctx
// ends (finishing the transaction under way) or MaxTxns transactions were run.
func RunTxnProducer(ctx context.Context, env Env, p int, cfg TxnConfig) (TxnStats, error) {
	env, err := env.withDefaults()
	if err != nil {
		return TxnStats{}, err
	}
	if cfg, err = cfg.resolved(p); err != nil {
		return TxnStats{}, err
	}
	w := &txnRun{env: env, cfg: cfg, rng: NewRand(env.Seed, p), values: map[int]*Values{},
		log: env.Log.With("workload", "txn", "txn_id", cfg.TxnID)}
	w.stats.Process = p
	if w.parts, err = topicPartitions(ctx, env, clientID(p, "txn-meta"), cfg.Topics); err != nil {
		return w.stats, fmt.Errorf("transactional producer %d: %w", p, err)
	}
	for t, n := range w.parts {
		if n < 2 {
			w.log.Warn("topic has fewer than 2 partitions: transactions will span topics but not partitions of it", "topic", t)
		}
	}
	var zombies sync.WaitGroup
	err = w.loop(ctx, p, &zombies)
	// Zombies finish on their own goroutines; their outcomes belong to the stats.
	zombies.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log.Info("transactional producer done", "committed", w.stats.Committed, "aborted", w.stats.Aborted,
		"failed", w.stats.Failed, "unknown", w.stats.Unknown, "crashes", w.stats.Crashes, "zombies", w.stats.Zombies)
	return w.stats, err
}

// loop runs transactions until ctx ends or MaxTxns, replacing instances that break.
func (w *txnRun) loop(ctx context.Context, p int, zombies *sync.WaitGroup) error {
	cfg := w.cfg
	inst, err := w.open(ctx, p)
	if err != nil {
		return err
	}
	// Whatever happens, the current instance signals its zombie (if any) and closes.
	defer func() {
		if inst != nil {
			inst.signal()
			inst.tc.Close()
		}
	}()
	began, held := time.Now(), false
	for n := 0; ctx.Err() == nil && (cfg.MaxTxns == 0 || n < cfg.MaxTxns); n++ {
		pl := planTxn(w.rng, cfg.Topics, w.parts, cfg.MaxRecords, cfg.AbortProbability, cfg.ZombieProbability)
		if cfg.MaxZombies > 0 && w.zombiesSoFar() >= int64(cfg.MaxZombies) {
			pl.fenceAt = -1
		}
		if cfg.HoldOpen > 0 && !held && time.Since(began) >= cfg.HoldAfter && pl.fenceAt < 0 {
			pl.hold, held = cfg.HoldOpen, true
		}
		next, err := w.transaction(ctx, inst, pl, zombies)
		inst = next
		if err != nil {
			return err
		}
		if ok, why := inst.tc.Ready(); !ok {
			inst.signal()
			old := inst
			inst = nil // restart closes it
			if inst, err = w.restart(ctx, old, "the producer is not ready for another transaction ("+why+")"); err != nil {
				return err
			}
		}
		if kit.Sleep(ctx, cfg.Gap) != nil {
			break
		}
	}
	return nil
}

// open starts an instance as process p.
func (w *txnRun) open(ctx context.Context, p int) (*txnInstance, error) {
	tc, err := openTxnProducer(ctx, w.env, p, "txn", w.cfg.TxnID, w.cfg.TxnClientConfig, w.log.With("process", p))
	if err != nil {
		return nil, fmt.Errorf("transactional producer %d: %w", p, err)
	}
	v := w.values[p]
	if v == nil {
		v = NewValues(p)
		w.values[p] = v
		w.mu.Lock()
		w.stats.Processes = append(w.stats.Processes, p)
		w.mu.Unlock()
	}
	return &txnInstance{p: p, tc: tc, values: v}, nil
}

// restart replaces a broken instance by a new one in the same process, recording the crash: the
// checker treats the process's next op as a new instance's.
func (w *txnRun) restart(ctx context.Context, inst *txnInstance, reason string) (*txnInstance, error) {
	w.count(func(s *TxnStats) { s.Crashes++ })
	w.log.Warn("restarting the transactional producer", "process", inst.p, "reason", reason)
	inv, err := w.env.Recorder.Invoke(history.Client(inst.p), history.FCrash, raw(history.Crash{Reason: reason, TxnID: w.cfg.TxnID}))
	if err != nil {
		inst.tc.Close()
		return nil, fmt.Errorf("transactional producer %d: recording a crash: %w", inst.p, err)
	}
	inst.tc.Close()
	// The restart is not interrupted by the end of the run: an instance must be up to
	// finish the workload cleanly, and openTxnProducer gives up only when its context ends.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*w.cfg.Timeout)
	defer cancel()
	next, err := w.open(rctx, inst.p)
	if err != nil {
		_, _ = w.env.Recorder.Complete(inv, history.Fail, inv.Value, err.Error())
		return nil, err
	}
	if _, err := w.env.Recorder.Complete(inv, history.OK, inv.Value, ""); err != nil {
		next.tc.Close()
		return nil, fmt.Errorf("transactional producer %d: recording a crash: %w", inst.p, err)
	}
	return next, nil
}

func (w *txnRun) zombiesSoFar() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats.Zombies
}

func (w *txnRun) count(f func(*TxnStats)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(&w.stats)
}

// transaction runs one planned transaction on inst and returns the instance that carries on
// (inst, or in zombie mode the usurper).
func (w *txnRun) transaction(ctx context.Context, inst *txnInstance, pl txnPlan, zombies *sync.WaitGroup) (*txnInstance, error) {
	recs := make([]history.Record, len(pl.targets))
	for i, t := range pl.targets {
		recs[i] = history.Record{Topic: t.topic, Partition: t.partition, Value: inst.values.Next()}
	}
	intent := history.IntentCommit
	if pl.abort {
		intent = history.IntentAbort
	}
	proc := history.Client(inst.p)
	var endT int64 // when the commit or abort was asked for: a read_committed read before it is early
	payload := func() history.Payload {
		return history.Payload{Txn: &history.Txn{TxnID: w.cfg.TxnID, Records: recs, Intent: intent, EndT: endT}}
	}
	inv, err := w.env.Recorder.Invoke(proc, history.FTxn, payload())
	inst.signal()
	if err != nil {
		return inst, fmt.Errorf("transactional producer %d: recording a transaction: %w", inst.p, err)
	}
	done := func(t history.Type, text string) error {
		w.count(func(s *TxnStats) {
			switch {
			case t == history.OK:
				s.Committed++
			case text == kclient.TxnAborted:
				s.Aborted++
			case t == history.Fail:
				s.Failed++
			default:
				s.Unknown++
			}
		})
		if _, err := w.env.Recorder.Complete(inv, t, payload(), text); err != nil {
			return fmt.Errorf("transactional producer %d: recording a transaction's outcome: %w", inst.p, err)
		}
		return nil
	}

	if err := inst.tc.Begin(); err != nil {
		// Nothing was sent: the transaction cannot have committed.
		return inst, done(history.Fail, kclient.TxnNotSent+"begin: "+ErrorText(err))
	}
	fenceAt := len(recs)
	if pl.fenceAt >= 0 {
		fenceAt = pl.fenceAt
	}
	deadline := time.Now().Add(w.cfg.DeliveryTimeout)
	sendErr := inst.tc.Send(recs[:fenceAt], deadline)
	if pl.hold > 0 && sendErr == nil {
		// Pacing, not synchronisation: the transaction is meant to stay open this long.
		w.log.Info("holding a transaction open", "process", inst.p, "for", pl.hold)
		_ = kit.Sleep(ctx, pl.hold)
	}

	carryOn := inst
	var usurped chan struct{}
	if pl.fenceAt >= 0 {
		// Zombie mode: a new instance takes the transactional.id now, mid-transaction.
		usurper, err := w.open(ctx, w.env.Processes.Next())
		if err != nil {
			w.log.Warn("zombie mode: the usurper could not start; the transaction goes on as usual", "err", err)
		} else {
			w.count(func(s *TxnStats) { s.Zombies++ })
			w.log.Info("zombie mode: a new instance took the transactional.id mid-transaction",
				"zombie", inst.p, "usurper", usurper.p)
			usurped = make(chan struct{})
			usurper.firstOp = usurped
			carryOn = usurper
		}
	}
	finish := func() error {
		if sendErr == nil && fenceAt < len(recs) {
			sendErr = inst.tc.Send(recs[fenceAt:], deadline)
		}
		endT = int64(w.env.Recorder.Since())
		switch {
		case sendErr != nil:
			// A record failed: the commit is not requested (sarama would not send it from its
			// error state; franz-go would commit the records that succeeded), so the
			// transaction is certainly not committed; abort it.
			aerr := inst.tc.Abort()
			return done(history.Fail, kclient.TxnNotSent+"a record failed: "+ErrorText(sendErr)+kclient.AbortNote(ErrorText(aerr)))
		case pl.abort:
			if aerr := inst.tc.Abort(); aerr != nil {
				w.log.Warn("aborting failed; the instance will be replaced", "process", inst.p, "err", aerr)
			}
			return done(history.Fail, kclient.TxnAborted)
		}
		t, text := inst.tc.Commit()
		return done(t, text)
	}
	if usurped == nil {
		return carryOn, finish()
	}
	// The zombie finishes in its own goroutine, once the usurper has recorded its first op:
	// the checker dates the fence from that op, and judges only what the zombie began after it.
	zombies.Add(1)
	go func() {
		defer zombies.Done()
		defer inst.tc.Close()
		select {
		case <-usurped:
		case <-ctx.Done():
		}
		if err := finish(); err != nil {
			w.log.Error("zombie", "err", err)
			return
		}
		w.zombieEpilogue(inst)
	}()
	return carryOn, nil
}

// zombieEpilogue: the fenced instance tries one more transaction, which must not commit; then it
// is retired (no crash op: the process does not come back).
func (w *txnRun) zombieEpilogue(inst *txnInstance) {
	rng := NewRand(w.env.Seed, inst.p)
	pl := planTxn(rng, w.cfg.Topics, w.parts, w.cfg.MaxRecords, 0, 0)
	recs := make([]history.Record, len(pl.targets))
	for i, t := range pl.targets {
		recs[i] = history.Record{Topic: t.topic, Partition: t.partition, Value: inst.values.Next()}
	}
	payload := func() history.Payload {
		return history.Payload{Txn: &history.Txn{TxnID: w.cfg.TxnID, Records: recs, Intent: history.IntentCommit}}
	}
	inv, err := w.env.Recorder.Invoke(history.Client(inst.p), history.FTxn, payload())
	if err != nil {
		w.log.Error("zombie: recording", "err", err)
		return
	}
	var t history.Type
	var text string
	if err := inst.tc.Begin(); err != nil {
		t, text = history.Fail, kclient.TxnNotSent+"begin: "+ErrorText(err)
	} else if err := inst.tc.Send(recs, time.Now().Add(w.cfg.DeliveryTimeout)); err != nil {
		aerr := inst.tc.Abort()
		t, text = history.Fail, kclient.TxnNotSent+"a record failed: "+ErrorText(err)+kclient.AbortNote(ErrorText(aerr))
	} else {
		t, text = inst.tc.Commit()
	}
	w.count(func(s *TxnStats) {
		switch t {
		case history.OK:
			s.Committed++
		case history.Fail:
			s.Failed++
			s.ZombieCommitsRefused++
		default:
			s.Unknown++
			s.ZombieCommitsUnknown++
		}
	})
	if t == history.OK {
		w.log.Error("zombie: a fenced instance committed a transaction", "process", inst.p)
	}
	if _, err := w.env.Recorder.Complete(inv, t, payload(), text); err != nil {
		w.log.Error("zombie: recording", "err", err)
	}
}
