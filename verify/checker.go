package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/metrics"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// Source yields a history's ops in file order, io.EOF at the end. *history.Reader is one; Next
// may reuse op's buffers, which the checker copies from as needed.
type Source interface {
	Next(op *history.Op) error
}

// Options tune a check.
type Options struct {
	// MaxExamples bounds the examples kept per anomaly (default 10).
	MaxExamples int
	// Logger receives progress and oddities of the history (default: discard).
	Logger *slog.Logger
	// Adjust, when set, changes the header's config before the check judges by it (CheckFile:
	// the command line's settings); Overrides names those settings for the results.
	Adjust    func(history.Config) (history.Config, error)
	Overrides []string
	// Metrics, when set, are the broker metrics sampled during the run (metrics.jsonl): their
	// alerts are checked against the history's ISR observations (results "broker_metrics").
	// MetricsFile names the file in the results.
	Metrics     *metrics.File
	MetricsFile string
}

// Checker accumulates one history. Feed every op with Add, in file order, then call Results.
// A Checker is not safe for concurrent use.
type Checker struct {
	cfg    history.Config
	opts   Options
	log    *slog.Logger
	faults faultState

	vals  values
	parts partitions
	procs map[int]*proc
	// byID holds the processes of procs with small ids (0 to maxDenseProc-1) by id: every
	// op looks its process up, and an index costs less than a map lookup.
	byID  []*proc
	async map[int64]*pending // invokes not matched yet, beyond each process's latest
	free  []*pending

	txns     []txn
	txnIDs   map[string]uint32
	txnOwner []txnOwner // by interned transactional.id
	txnUsed  map[txnUse]struct{}
	now      int64 // the time (t) of the op being added
	early    []earlyRead
	cycles   []cycleEvidence
	reads    []uint32 // what transactions read (rpw inputs, txn reads), sliced by txn.inStart/inLen
	ids      []uint32 // internAll's result, reused
	touched  uint16   // internAll's touch of the states, kept so that it is not optimised away
	eos      eosState
	views    []txnView      // computed once the history is in
	unjudged map[uint32]int // by partition: committed records beyond the read_committed scans
	strays   []stray        // transactional records written outside any transaction (stray-txn-produce)

	groups        []group // consumer groups their members' ops name (resume.go)
	resumes       []resume
	resumeCounts  []results.ResumeCount
	commitScratch []partCommit

	// txnWrites counts the records txn and rpw ops wrote (a record written twice, twice): at
	// least the number of transactional values, which txnRecords sizes its lists by.
	txnWrites int

	ord   uint32 // ordinal of the next op
	delta int64  // history index minus ordinal, as of the last jump
	jumps []jump

	findings  list[finding]
	conflicts map[conflictKey]struct{}
	skips     list[skipCand]
	isr       isrState
	live      liveState
	liveOn    bool                  // the op being added is before liveness's horizon
	observed  []metrics.Observation // the ISR observations, kept when Options.Metrics is set
	sinks     sinkState
	share     shareState
	meta      metaState
	stats     statsState
	torn      int
	ops       int64
	oversized bool // more ops than ordinals: the rest were ignored
	finished  bool
	malformed *MalformedError // the first op the checks could not take

	facts      []guarantee.Facts // the run's settings, for families with no finding (runFacts)
	sawRU      bool              // a read_uncommitted consumer read
	prodCache  map[int32]kafkaconf.Resolved
	topicCache map[string]kafkaconf.ResolvedTopic
}

type txnOwner struct {
	proc  int32
	since uint32 // ordinal of its first op with the id
}

type txnUse struct {
	id   uint32
	proc int32
}

// jump records that from ordinal ord on, the history's index is ord+delta. A history whose
// indices run 0, 1, 2, … (all of them) has no jumps.
type jump struct {
	ord   uint32
	delta int64
}

// MalformedError is an op that breaks the history's rules in a way no check can judge around:
// a completion whose "of" names no invoke of its process still awaiting its completion (none,
// another process's, or one already completed). Taken as a write of its own, it would make a
// record the producer wrote once look resent, and a forbidden duplicate a permitted one.
type MalformedError struct {
	Line  int   // 1-based line of the history file (the header is line 1); 0 if not known
	Index int64 // the op's "i"
	Msg   string
}

func (e *MalformedError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("history line %d (op %d): %s", e.Line, e.Index, e.Msg)
	}
	return fmt.Sprintf("op %d: %s", e.Index, e.Msg)
}

// Err returns the first malformed op Add met (a *MalformedError), or nil. Add leaves such an
// op out of every check; Results then cannot pass the history.
func (c *Checker) Err() error {
	if c.malformed == nil {
		return nil
	}
	return c.malformed
}

// New returns a Checker that judges by the settings of header config cfg.
func New(cfg history.Config, opts Options) *Checker {
	if opts.MaxExamples <= 0 {
		opts.MaxExamples = 10
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Checker{
		cfg:       cfg,
		opts:      opts,
		log:       log,
		faults:    newFaultState(cfg.Controllers),
		vals:      newValues(),
		parts:     newPartitions(),
		procs:     map[int]*proc{},
		async:     map[int64]*pending{},
		txnIDs:    map[string]uint32{},
		txnUsed:   map[txnUse]struct{}{},
		conflicts: map[conflictKey]struct{}{},
		eos:       newEOSState(),
	}
	c.stats.init()
	c.live.init()
	c.liveSinks()
	c.share.init(cfg.Share)
	return c
}

// SetTorn notes that the history's last line was torn (1-based line number), for the report.
func (c *Checker) SetTorn(line int) { c.torn = line }

// Check feeds every op of src to a new Checker for cfg and returns the results. A src that
// reports a torn last line (as *history.Reader does, with Torn) has it noted. Reading errors
// are returned with what was being done; ctx cancels a long check.
func Check(ctx context.Context, src Source, cfg history.Config, opts Options) (*results.Results, error) {
	c := New(cfg, opts)
	if err := c.Feed(ctx, src); err != nil {
		return nil, err
	}
	if t, ok := src.(interface{ Torn() int }); ok {
		c.SetTorn(t.Torn())
	}
	return c.Results(), nil
}

// Feed adds every op of src, until io.EOF. It stops at the first malformed op with a
// *MalformedError, which names the op's line when src reports lines (Line() int, as
// *history.Reader does).
func (c *Checker) Feed(ctx context.Context, src Source) error {
	var op history.Op
	lines, _ := src.(interface{ Line() int })
	for n := 0; ; n++ {
		if n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("checking the history: %w", err)
			}
		}
		err := src.Next(&op)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading op %d of the history: %w", n+1, err)
		}
		c.Add(&op)
		if c.malformed != nil {
			if lines != nil && c.malformed.Line == 0 && c.malformed.Index == op.Index {
				c.malformed.Line = lines.Line()
			}
			return fmt.Errorf("checking the history: %w", c.malformed)
		}
	}
}

// opIndex turns an ordinal back into the history's "i".
func (c *Checker) opIndex(ord uint32) int64 {
	lo, hi := 0, len(c.jumps)
	for lo < hi {
		m := (lo + hi) / 2
		if c.jumps[m].ord <= ord {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return int64(ord)
	}
	return int64(ord) + c.jumps[lo-1].delta
}

func (c *Checker) proc(id int) *proc {
	dense := id >= 0 && id < maxDenseProc
	if dense && id < len(c.byID) && c.byID[id] != nil {
		return c.byID[id]
	}
	p := c.procs[id]
	if p == nil {
		p = &proc{id: id, gen: 1, causeOrd: none, sink: c.sinkProcess(id)}
		c.procs[id] = p
	}
	if dense {
		if id >= len(c.byID) {
			c.byID = append(c.byID, make([]*proc, id+1-len(c.byID))...)
		}
		c.byID[id] = p
	}
	return p
}

func (c *Checker) newPending() *pending {
	if n := len(c.free); n > 0 {
		p := c.free[n-1]
		c.free = c.free[:n-1]
		return p
	}
	return &pending{}
}

func (c *Checker) release(p *pending) {
	vals := p.vals[:0]
	*p = pending{vals: vals}
	c.free = append(c.free, p)
}

// Add takes the next op of the history. It copies what it keeps, so op may be reused.
func (c *Checker) Add(op *history.Op) {
	if c.finished {
		c.log.Warn("op added after the results were taken; ignored", "i", op.Index)
		return
	}
	if c.ord == none {
		c.oversized = true
		return
	}
	ord := c.ord
	c.ord++
	c.ops++
	c.now = op.Time
	if d := op.Index - int64(ord); d != c.delta {
		c.delta = d
		c.jumps = append(c.jumps, jump{ord: ord, delta: d})
	}
	k := kindOf(op.F)
	c.liveOn = c.live.clock(op.Time)
	if k == fISR {
		c.isr.observe(c, op, ord)
	}
	if op.Process.Nemesis {
		if c.liveOn {
			c.live.nemesis(op, ord)
		}
		c.faults.observe(op)
		c.stats.nemesis(op)
		if c.share.on {
			c.share.nemesis(op)
		}
		if op.F == history.FStrayTxnProduce {
			c.observeStray(op, ord)
		}
		return
	}
	p := c.proc(op.Process.ID)
	switch op.Type {
	case history.Invoke:
		c.invoke(p, k, op, ord)
	case history.OK, history.Fail, history.Info:
		c.complete(p, k, op, ord)
	default:
		c.log.Debug("op of unknown type ignored", "i", op.Index, "type", op.Type)
	}
}

func (c *Checker) invoke(p *proc, k fkind, op *history.Op, ord uint32) {
	if k == fOther {
		p.reset()
		if isCrash(op.F) {
			c.forgetTxnIDs(p)
		}
		if op.F == history.FSinkRead {
			c.live.end(op.Time)
		}
		if op.F == history.FShareAck {
			c.shareInvoke(op, ord)
		}
	}
	p.prevInv, p.inv = p.inv, ord
	pd := c.newPending()
	pd.index, pd.ord, pd.time, pd.f, pd.proc = op.Index, ord, op.Time, k, p
	pd.tp, pd.txn = 0, none
	if p.sync != nil {
		// An async producer has many ops in flight; its completions name their invoke.
		c.async[p.sync.index] = p.sync
	}
	p.sync = pd
	switch k {
	case fSend:
		if r := op.Value.Send; r != nil {
			v := c.vals.intern(r.Value)
			c.write(v, ord, p, kindSend, none, 0)
			pd.vals = append(pd.vals, v)
			pd.tp = c.parts.id(r.Topic, r.Partition)
			pd.isrEpoch = c.isr.epochAt(pd.tp)
			if c.liveOn && c.parts.known(pd.tp) {
				c.live.writeInvoke(p.id, pd.tp, op.Time, ord)
			}
		}
	case fTxn:
		if t := op.Value.Txn; t != nil {
			pd.txn = c.newTxn(p, t.TxnID, ord, t.Intent == history.IntentAbort, false)
			c.writeTxnRecords(pd, p, t.Records, ord)
			c.txnReads(pd, t.Reads, c.readIsolation(t.Isolation), ord)
		}
	case fRPW:
		if r := op.Value.RPW; r != nil {
			pd.txn = c.newTxn(p, r.TxnID, ord, false, true)
			c.writeTxnRecords(pd, p, r.Output, ord)
			c.txnReads(pd, r.Input, c.readIsolation(""), ord)
		}
	case fFinal:
		c.live.end(op.Time)
		if fr := op.Value.FinalRead; fr != nil {
			pd.tp = c.parts.id(fr.Topic, fr.Partition)
			pd.iso = isoOf(fr.Isolation, isoRU)
		}
	}
}

// take finds the invoke that op completes: the one its "of" names, else p's latest. It
// reports false when "of" names no invoke of p awaiting its completion.
func (c *Checker) take(p *proc, op *history.Op) (*pending, bool) {
	if op.Of != nil {
		if p.sync != nil && p.sync.index == *op.Of {
			pd := p.sync
			p.sync = nil
			return pd, true
		}
		if pd, ok := c.async[*op.Of]; ok && pd.proc == p {
			delete(c.async, *op.Of)
			return pd, true
		}
		return nil, false
	}
	pd := p.sync
	p.sync = nil
	return pd, true
}

// openOf is an invoke of p with f k still awaiting its completion after another invoke of p
// came (so that it waits among the async ones), if there is one.
func (c *Checker) openOf(p *proc, k fkind) *pending {
	var open *pending
	for _, pd := range c.async {
		if pd.proc == p && pd.f == k && (open == nil || pd.index < open.index) {
			open = pd
		}
	}
	return open
}

// missingOf records op as malformed: a completion without "of" while p has no invoke open but
// one of the same f that another of p's invokes overtook — its ops overlapped, so its completions
// must name their invokes; taken alone, the completion would be a second write of its records.
func (c *Checker) missingOf(p *proc, op *history.Op, open *pending) {
	c.log.Debug("completion without its invoke", "i", op.Index, "open", open.index)
	if c.malformed == nil {
		c.malformed = &MalformedError{Index: op.Index, Msg: fmt.Sprintf(
			`the %s completion of process %d has no "of", and the process's latest invoke is completed; its %s invoke %d is still open, `+
				`overtaken by a later invoke of the same process: a process whose ops overlap must name the invoke each completion completes`,
			op.F, p.id, op.F, open.index)}
	}
}

// badOf records op, whose "of" names no invoke of p awaiting its completion, as malformed.
func (c *Checker) badOf(p *proc, op *history.Op) {
	of := *op.Of
	msg := fmt.Sprintf(`the %s completion of process %d has "of" %d, which `, op.F, p.id, of)
	other := -1
	if pd, ok := c.async[of]; ok {
		other = pd.proc.id
	}
	for id, q := range c.procs {
		if q.sync != nil && q.sync.index == of {
			other = id
		}
	}
	if other >= 0 {
		msg += fmt.Sprintf("is an invoke of process %d", other)
	} else {
		msg += fmt.Sprintf("names no invoke of process %d awaiting its completion (none has that i, or it completed already)", p.id)
	}
	c.log.Debug("malformed completion ignored", "i", op.Index, "of", of)
	if c.malformed == nil {
		c.malformed = &MalformedError{Index: op.Index, Msg: msg}
	}
}

func (c *Checker) complete(p *proc, k fkind, op *history.Op, ord uint32) {
	pd, ok := c.take(p, op)
	if !ok {
		c.badOf(p, op)
		return
	}
	if pd == nil && op.Of == nil && k != fOther {
		if open := c.openOf(p, k); open != nil {
			c.missingOf(p, op, open)
			return
		}
	}
	if pd != nil && pd.f != k {
		// A completion of another f than the invoke it would close: the history is not
		// well formed here. Keep the invoke open (it will count as never completed) and
		// take the completion on its own.
		c.log.Debug("completion does not match its invoke", "i", op.Index, "f", op.F)
		c.async[pd.index] = pd
		pd = nil
	}
	var sendTP uint32
	if k == fSend {
		sendTP = c.sendPartition(pd, op.Value.Send)
	}
	c.stats.complete(op, k, pd, sendTP)
	if k == fOther {
		p.reset()
		if isCrash(op.F) {
			c.forgetTxnIDs(p)
		}
		c.claimFromOp(p, op, ord)
		c.sinkOp(op, ord)
		c.ownership(p, op, ord)
		c.noteReset(p, op, ord)
		if history.IsShare(op.F) || isCrash(op.F) {
			c.shareOp(p, pd, op, ord)
		}
	}
	switch k {
	case fSend:
		c.completeSend(p, pd, op, ord, sendTP)
	case fTxn, fRPW:
		c.completeTxn(p, pd, k, op, ord)
	case fPoll:
		c.completePoll(p, op, ord)
	case fFinal:
		c.completeFinal(pd, op, ord)
	}
	if pd != nil {
		c.release(pd)
	}
}

// reset forgets a consumer's positions: any op of a process other than the data ops (assign,
// subscribe, a rebalance note, a seek, a crash) may move them legitimately.
func (p *proc) reset() { p.gen++ }

func isCrash(f string) bool { return f == history.FCrash }

func outcomeOf(t history.Type) uint16 {
	switch t {
	case history.OK:
		return outOK
	case history.Fail:
		return outFail
	case history.Info:
		return outInfo
	}
	return outPending
}

func isoOf(s string, def int) int {
	switch s {
	case history.ReadCommitted:
		return isoRC
	case history.ReadUncommitted:
		return isoRU
	}
	return def
}
