package histmodel

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// Started is every header's start time: fixed, so that a history depends on its seed alone.
const Started = "2026-01-01T00:00:00Z"

// History is a rendered history: its header and its ops, indices 0, 1, 2, …
type History struct {
	Header history.Header
	Ops    []history.Op
}

// WriteTo writes h as history.jsonl.
func (h *History) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	line, err := json.Marshal(h.Header)
	if err != nil {
		return 0, fmt.Errorf("histmodel: header: %w", err)
	}
	n := int64(0)
	for i := -1; i < len(h.Ops); i++ {
		if i >= 0 {
			if line, err = history.AppendOp(line[:0], h.Ops[i]); err != nil {
				return n, fmt.Errorf("histmodel: op %d: %w", i, err)
			}
		}
		line = append(line, '\n')
		k, err := bw.Write(line)
		n += int64(k)
		if err != nil {
			return n, fmt.Errorf("histmodel: write: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("histmodel: write: %w", err)
	}
	return n, nil
}

// Finish ends the run: the nemesis heals, the relay publishes what is left (but rows a
// mutator had it mark sent without publishing), every partition is read in full in both
// isolation levels in ranges of at most Chunk records, and the sink's store is read back.
func (m *Model) Finish() {
	if m.finished {
		return
	}
	m.finished = true
	if m.killed != 0 {
		m.restart()
	}
	for m.sink.published < len(m.sink.events) {
		m.relayStep()
	}
	if m.share != nil && !m.share.drained {
		m.shareDrain(nil)
	}
	logs := slices.Clone(m.logs)
	slices.SortFunc(logs, func(a, b *plog) int {
		return cmp.Or(cmp.Compare(a.at.topic, b.at.topic), cmp.Compare(a.at.part, b.at.part))
	})
	for _, l := range logs {
		for _, iso := range []string{history.ReadUncommitted, history.ReadCommitted} {
			m.finalReads(l, iso)
		}
	}
	if m.opts.Sink != "" {
		m.finalState()
	}
}

// finalReads scans l at isolation iso from offset 0: read_uncommitted to the high watermark,
// read_committed to the last stable offset (the first record no marker ended), in ranges.
func (m *Model) finalReads(l *plog, iso string) {
	end := m.highWatermark(l)
	var shown []*entry
	for _, e := range l.entries[:end] {
		if iso == history.ReadCommitted && e.kind == kindStray {
			end = e.off
			break
		}
		if iso == history.ReadCommitted && e.rcSees != nil {
			e = e.rcSees
		}
		if e.lost || !e.visible(iso) {
			continue
		}
		shown = append(shown, e)
	}
	from := int64(0)
	for k := 0; k == 0 || k < len(shown); k += m.opts.Chunk {
		chunk := shown[k:min(k+m.opts.Chunk, len(shown))]
		to := end
		if k+m.opts.Chunk < len(shown) {
			to = shown[k+m.opts.Chunk].off
		}
		s := &scanRange{at: l.at, iso: iso, from: from, end: to, shown: chunk}
		a := m.add(&action{proc: history.Client(procFinal), f: history.FFinalRead, out: history.OK, scan: s})
		m.scans = append(m.scans, a)
		from = to
	}
}

// highWatermark is the end of l once the records cut from its end are gone.
func (m *Model) highWatermark(l *plog) int64 {
	end := int64(len(l.entries))
	for end > 0 && l.entries[end-1].lost {
		end--
	}
	return end
}

// finalState reads the sink's store back: the times each event was applied, the position it
// committed and, for an outbox, the rows left unsent (none: Finish drained the relay).
func (m *Model) finalState() {
	info, _ := m.opts.Sink.Info()
	store := mustJSON(map[string]any{"sink": sinkName})
	v := map[string]any{"sink": sinkName, "mode": m.opts.Sink, "store": info.Store, "effects": m.sink.applied,
		"committed": map[string]int64{tp{topicSinkIn, 0}.key(): m.sink.committed}}
	if info.Relays {
		v["unsent"] = 0
	}
	m.sinkRead = m.add(&action{proc: history.Client(procSinkReader), f: history.FSinkRead, out: history.OK,
		raw: store, rawDone: mustJSON(v)})
}

// Render writes the model's timeline as ops, finishing the run first.
func (m *Model) Render() *History {
	m.Finish()
	h := &History{Header: history.Header{Version: history.Version, Started: Started, Seed: int64(m.seed), Config: m.cfg}}
	h.Ops = make([]history.Op, 0, len(m.steps))
	var now int64
	for i, s := range m.steps {
		op := m.renderStep(s)
		now += int64(time.Millisecond + s.after)
		op.Index, op.Time = int64(i), now
		if s.done && op.Value.Txn != nil && s.a.txn.endT {
			op.Value.Txn.EndT = now - int64(time.Millisecond/2)
		}
		if s.done {
			s.a.done = op.Index
			if s.a.async {
				of := s.a.inv
				op.Of = &of
			}
		} else {
			s.a.inv = op.Index
		}
		h.Ops = append(h.Ops, op)
	}
	return h
}

// renderStep is the op of one step, without index and time.
func (m *Model) renderStep(s step) history.Op {
	a := s.a
	op := history.Op{Process: a.proc, Type: history.Invoke, F: a.f}
	if s.done {
		op.Type, op.Error = a.out, a.err
	}
	switch a.f {
	case history.FSend:
		r := a.rec.bare()
		if s.done && a.out == history.OK {
			r = a.rec.record()
		}
		op.Value.Send = &r
	case history.FTxn:
		// A committed transaction reports its records' offsets; any other its records alone.
		recs := records(a.txn.recs, s.done && a.out == history.OK && a.txn.intent == history.IntentCommit)
		op.Value.Txn = &history.Txn{TxnID: a.txn.id, Records: recs, Intent: a.txn.intent}
		if a.txn.reads != nil && s.done { // what a transaction read is known once it polled
			op.Value.Txn.Reads, op.Value.Txn.Isolation = records(a.txn.reads, true), a.txn.readIso
		}
	case history.FRPW:
		out := records(a.txn.recs, s.done && a.out == history.OK)
		op.Value.RPW = &history.RPW{Input: records(a.txn.inputs, true), Output: out, TxnID: a.txn.id}
	case history.FPoll:
		p := &history.Poll{Isolation: a.iso, Group: a.group}
		if s.done {
			p.Records = records(a.reads, true)
		}
		op.Value.Poll = p
	case history.FFinalRead:
		fr := &history.FinalRead{Topic: a.scan.at.topic, Partition: a.scan.at.part, Isolation: a.scan.iso, From: a.scan.from, End: a.scan.from}
		if s.done {
			fr.End, fr.Records = a.scan.end, records(a.scan.shown, true)
		}
		op.Value.FinalRead = fr
	default:
		op.Value.Raw = a.raw
		if s.done && a.rawDone != nil {
			op.Value.Raw = a.rawDone
		}
	}
	return op
}

// facts are the circumstances a finding about a record of process writer (0: none) in topic,
// read at isolation iso, is judged by under the model's header: what guarantee.Judge needs to
// say what the table expects of it.
func (m *Model) facts(writer int, kind, topic string, iso kafkaconf.Isolation) guarantee.Facts {
	f := guarantee.Facts{Topic: kafkaconf.ResolveTopic(m.cfg.TopicOf(topic)), Isolation: iso,
		Faults: guarantee.Faults{Controllers: len(m.cfg.Controllers)}}
	if writer != 0 {
		pc := m.cfg.ProducerOf(writer)
		if kind != guarantee.WriterSend && pc.Transactional == nil {
			pc.Transactional = new(true)
		}
		f.HasWriter, f.Producer, f.WriterKind = true, kafkaconf.ResolveProducer(pc, kafkaconf.JavaClient()), kind
	}
	return f
}
