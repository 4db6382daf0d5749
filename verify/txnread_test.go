package verify

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/history/histgen"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// begin writes the invoke of a transaction of process p that writes recs (their offsets come
// with its completion).
func (h *hb) begin(p int, recs ...history.Record) int64 {
	bare := make([]history.Record, len(recs))
	for i, r := range recs {
		r.Offset = nil
		bare[i] = r
	}
	return h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FTxn,
		Value: history.Payload{Txn: &history.Txn{TxnID: txnIDOf(p), Records: bare, Intent: history.IntentCommit}}})
}

// end writes the completion of p's open transaction: it wrote recs (with their offsets) and read
// reads at isolation iso; endT, when not 0, is when its commit was asked for.
func (h *hb) end(p int, t history.Type, iso string, endT int64, recs []history.Record, reads ...history.Record) int64 {
	op := history.Op{Process: history.Client(p), Type: t, F: history.FTxn,
		Value: history.Payload{Txn: &history.Txn{TxnID: txnIDOf(p), Records: recs, Intent: history.IntentCommit,
			Reads: reads, Isolation: iso, EndT: endT}}}
	if t == history.Fail {
		op.Error = "aborted"
	}
	return h.add(op)
}

func txnIDOf(p int) string { return "t-" + string(rune('0'+p)) }

// Two transactions that each read what the other wrote: both committed, so at read_committed
// each read came after the other's end was decided, and each ended after its own read.
func TestG1c(t *testing.T) {
	a, b := at(rec("t", 0, "1-1"), 0), at(rec("t", 1, "2-1"), 0)
	cycle := func(iso string) func(h *hb) {
		return func(h *hb) {
			h.begin(1, a)                    // 0
			h.begin(2, b)                    // 1
			h.end(1, OK, iso, 0, recs(a), b) // 2
			h.end(2, OK, iso, 0, recs(b), a) // 3
			h.finalBoth("t", 0, 0, 1, a)
			h.finalBoth("t", 1, 0, 1, b)
		}
	}
	runCases(t, []tcase{
		{name: "each read the other's write at read_committed: forbidden", build: cycle(RC),
			want:    map[guarantee.Anomaly]want{guarantee.G1c: {count: 1, ops: []int64{2, 3}}},
			verdict: results.Fail},
		{name: "the same at read_uncommitted: permitted", build: cycle(RU),
			want:    map[guarantee.Anomaly]want{guarantee.G1c: {count: 1, permitted: true}},
			verdict: results.Pass},
		{name: "one way only: no cycle", build: func(h *hb) {
			h.begin(1, a)
			h.end(1, OK, RC, 0, recs(a))
			h.begin(2, b)
			h.end(2, OK, RC, 0, recs(b), a)
			h.finalBoth("t", 0, 0, 1, a)
			h.finalBoth("t", 1, 0, 1, b)
		}, verdict: results.Pass},
		{name: "the other write's transaction aborted: an aborted read, no cycle", build: func(h *hb) {
			h.begin(1, a)
			h.begin(2, b)
			h.end(1, OK, RC, 0, recs(a), b)
			h.end(2, Fail, RC, 0, recs(b), a)
			h.finalBoth("t", 0, 0, 1, a)
			h.final("t", 1, RU, 0, 1, b)
			h.final("t", 1, RC, 0, 1)
		}, want: map[guarantee.Anomaly]want{guarantee.AbortedRead: {count: 1}}, verdict: results.Fail},
	})
}

// A cycle that needs a process's order, or real time, besides what was read.
func TestG1cWithOrder(t *testing.T) {
	a, b, c := at(rec("t", 0, "1-1"), 0), at(rec("t", 1, "2-1"), 0), at(rec("t", 2, "3-1"), 0)
	finals := func(h *hb) {
		h.finalBoth("t", 0, 0, 1, a)
		h.finalBoth("t", 1, 0, 1, b)
		h.finalBoth("t", 2, 0, 1, c)
	}
	// T1 read T3's write and completed before T2 began; T2 wrote b, which T3 read.
	chain := func(p2 int) func(h *hb) {
		return func(h *hb) {
			h.begin(3, c)                   // 0: T3
			h.begin(1, a)                   // 1: T1
			h.end(1, OK, RC, 0, recs(a), c) // 2
			h.begin(p2, b)                  // 3: T2
			h.end(p2, OK, RC, 0, recs(b))   // 4
			h.end(3, OK, RC, 0, recs(c), b) // 5
			finals(h)
		}
	}
	runCases(t, []tcase{
		{name: "T2 is T1's process's next transaction: G1c-process", build: chain(1),
			want:    map[guarantee.Anomaly]want{guarantee.G1cProcess: {count: 1, ops: []int64{2, 4, 5}}},
			verdict: results.Fail},
		{name: "T2 is another process's, begun after T1 completed: G1c-realtime", build: chain(2),
			want:    map[guarantee.Anomaly]want{guarantee.G1cRealtime: {count: 1, ops: []int64{2, 4, 5}}},
			verdict: results.Fail},
		{name: "T2 began before T1 completed: no order, no cycle", build: func(h *hb) {
			h.begin(3, c)
			h.begin(1, a)
			h.begin(2, b)
			h.end(1, OK, RC, 0, recs(a), c)
			h.end(2, OK, RC, 0, recs(b))
			h.end(3, OK, RC, 0, recs(c), b)
			finals(h)
		}, verdict: results.Pass},
		{name: "T1's outcome unknown: it asked to end, if ever, before it completed: G1c-realtime all the same", build: func(h *hb) {
			h.begin(3, c)                     // 0
			h.begin(1, a)                     // 1
			h.end(1, Info, RC, 0, recs(a), c) // 2
			h.begin(2, b)                     // 3
			h.end(2, OK, RC, 0, recs(b))      // 4
			h.end(3, OK, RC, 0, recs(c), b)   // 5
			finals(h)
		}, want: map[guarantee.Anomaly]want{guarantee.G1cRealtime: {count: 1, ops: []int64{2, 4, 5}}}, verdict: results.Fail},
		{name: "a process's next transaction after an unknown one carries the order on: G1c-process", build: func(h *hb) {
			h.begin(3, c)                   // 0: T3
			h.begin(1, a)                   // 1: T1
			h.end(1, OK, RC, 0, recs(a), c) // 2
			h.begin(1)                      // 3: an unknown transaction between
			h.end(1, Info, RC, 0, nil)      // 4
			h.begin(1, b)                   // 5: T2
			h.end(1, OK, RC, 0, recs(b))    // 6
			h.end(3, OK, RC, 0, recs(c), b) // 7
			finals(h)
		}, want: map[guarantee.Anomaly]want{guarantee.G1cProcess: {count: 1, ops: []int64{2, 4, 6, 7}}}, verdict: results.Fail},
	})
}

// A component that holds a cycle of read_committed reads and one through a read_uncommitted
// read is judged by the first: the search looks for read_committed cycles before the others.
func TestG1cReadCommittedCycleFirst(t *testing.T) {
	a, b, c, d := at(rec("t", 0, "1-1"), 0), at(rec("t", 1, "2-1"), 0), at(rec("t", 2, "3-1"), 0), at(rec("t", 3, "4-1"), 0)
	h := newHB()
	for p, r := range []history.Record{a, b, c, d} {
		h.begin(p+1, r)
	}
	h.end(1, OK, RC, 0, recs(a), b, d) // T1 read T2's b and T4's d
	h.end(2, OK, RU, 0, recs(b), a)    // T2 read T1's a at read_uncommitted: T1 ⇄ T2, the shortest cycle, takes it
	h.end(3, OK, RC, 0, recs(c), a)    // T1 → T3 → T4 → T1: longer, all read_committed
	h.end(4, OK, RC, 0, recs(d), c)
	for _, r := range []history.Record{a, b, c, d} {
		h.finalBoth("t", r.Partition, 0, 1, r)
	}
	res := h.check(strict())
	g := res.Anomalies[guarantee.G1c]
	if g.Count != 1 || g.ForbiddenCount() != 1 || !strings.Contains(g.Examples[0].Note, "4-1") {
		t.Fatalf("G1c %+v: want one finding, the read_committed cycle through T3 and T4, forbidden", g)
	}
}

// Write cycles are Kafka's to allow: its transactions do not isolate their writes.
func TestG0(t *testing.T) {
	runCases(t, []tcase{
		{name: "two transactions append to two partitions in opposite orders: permitted", build: func(h *hb) {
			h.begin(1, rec("t", 0, "1-1"), rec("t", 1, "1-2"))
			h.begin(2, rec("t", 0, "2-1"), rec("t", 1, "2-2"))
			h.end(1, OK, "", 0, recs(at(rec("t", 0, "1-1"), 0), at(rec("t", 1, "1-2"), 1)))
			h.end(2, OK, "", 0, recs(at(rec("t", 0, "2-1"), 1), at(rec("t", 1, "2-2"), 0)))
			h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "2-1"), 1))
			h.finalBoth("t", 1, 0, 2, at(rec("t", 1, "2-2"), 0), at(rec("t", 1, "1-2"), 1))
		}, want: map[guarantee.Anomaly]want{guarantee.G0: {count: 1, permitted: true}}, verdict: results.Pass},
		{name: "in the same order on both: no cycle", build: func(h *hb) {
			h.begin(1, rec("t", 0, "1-1"), rec("t", 1, "1-2"))
			h.begin(2, rec("t", 0, "2-1"), rec("t", 1, "2-2"))
			h.end(1, OK, "", 0, recs(at(rec("t", 0, "1-1"), 0), at(rec("t", 1, "1-2"), 0)))
			h.end(2, OK, "", 0, recs(at(rec("t", 0, "2-1"), 1), at(rec("t", 1, "2-2"), 1)))
			h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "2-1"), 1))
			h.finalBoth("t", 1, 0, 2, at(rec("t", 1, "1-2"), 0), at(rec("t", 1, "2-2"), 1))
		}, verdict: results.Pass},
	})
}

func TestPrecommittedRead(t *testing.T) {
	a := at(rec("t", 0, "1-1"), 0)
	own := func(iso string) func(h *hb) {
		return func(h *hb) {
			h.begin(1, a)
			h.end(1, OK, iso, 0, recs(a), a)
			h.finalBoth("t", 0, 0, 1, a)
		}
	}
	runCases(t, []tcase{
		{name: "a transaction read its own record at read_committed: forbidden", build: own(RC),
			want: map[guarantee.Anomaly]want{guarantee.PrecommittedRead: {count: 1, ops: []int64{0, 1}}}, verdict: results.Fail},
		{name: "at read_uncommitted: permitted", build: own(RU),
			want: map[guarantee.Anomaly]want{guarantee.PrecommittedRead: {count: 1, permitted: true}}, verdict: results.Pass},
		{name: "its process's next transaction reads it: no finding", build: func(h *hb) {
			h.begin(1, a)
			h.end(1, OK, RC, 0, recs(a))
			h.begin(1)
			h.end(1, OK, RC, 0, nil, a)
			h.finalBoth("t", 0, 0, 1, a)
		}, verdict: results.Pass},
	})
}

func TestUncommittedRead(t *testing.T) {
	a := at(rec("t", 0, "1-1"), 0)
	read := func(iso string, endAfter bool) func(h *hb) {
		return func(h *hb) {
			h.begin(1, a)              // 0, at 1 ms
			asked := h.now + 1_000_000 // 2 ms: asked before the poll
			h.poll(2, iso, a)          // 1, 2 at 2 and 3 ms
			if endAfter {
				asked = h.now + 5_000_000
			}
			h.end(1, OK, "", asked, recs(a)) // 3
			h.finalBoth("t", 0, 0, 1, a)
		}
	}
	runCases(t, []tcase{
		{name: "a read_committed poll returned the record before the commit was asked for: forbidden", build: read(RC, true),
			want: map[guarantee.Anomaly]want{guarantee.UncommittedRead: {count: 1, ops: []int64{0, 2, 3}}}, verdict: results.Fail},
		{name: "at read_uncommitted: permitted (that level reads open transactions)", build: read(RU, true),
			want: map[guarantee.Anomaly]want{guarantee.UncommittedRead: {count: 1, permitted: true}}, verdict: results.Pass},
		{name: "the commit was asked for before the poll completed: none", build: read(RC, false), verdict: results.Pass},
	})
}

func TestFutureAndPhantomReads(t *testing.T) {
	verityRun := func() history.Config { c := strict(); c.Scenario = "default"; return c }
	runCases(t, []tcase{
		{name: "a poll returned a record before its send began: future-read", build: func(h *hb) {
			h.poll(2, RC, at(rec("t", 0, "1-1"), 0)) // 0, 1
			h.send(1, rec("t", 0, "1-1"), OK, 0)     // 2, 3
			h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-1"), 0))
		}, want: map[guarantee.Anomaly]want{guarantee.FutureRead: {count: 1, ops: []int64{1, 2}}}, verdict: results.Fail},
		{name: "a poll returned it while its send was under way: none", build: func(h *hb) {
			inv := h.sendInvoke(1, rec("t", 0, "1-1"))
			h.poll(2, RC, at(rec("t", 0, "1-1"), 0))
			h.sendDone(1, inv, rec("t", 0, "1-1"), OK, 0, false)
			h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-1"), 0))
		}, verdict: results.Pass},
		{name: "a record no op wrote, in a Verity run: phantom-read", cfg: verityRun, build: func(h *hb) {
			h.send(1, rec("t", 0, "1-1"), OK, 0)
			h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "9-9"), 1))
		}, want: map[guarantee.Anomaly]want{guarantee.PhantomRead: {count: 1}}, verdict: results.Fail},
		{name: "a stray transactional record whose fault's answer was lost: its event names it, no phantom", cfg: verityRun, build: func(h *hb) {
			h.send(1, rec("t", 0, "1-1"), OK, 0)
			h.nemesisEvent(history.FStrayTxnProduce, `{"records":[{"topic":"t","partition":0,"value":"stray-t-0"}]}`, Info)
			h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "stray-t-0"), 1))
		}, verdict: results.Pass},
		{name: "the same in a history another tool wrote: not judged", build: func(h *hb) {
			h.send(1, rec("t", 0, "1-1"), OK, 0)
			h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "9-9"), 1))
		}, verdict: results.Pass},
	})
}

// A witness cycle names every transaction on it with its op, and says what each edge rests on.
func TestCycleWitnessReads(t *testing.T) {
	h := newHB()
	a, b := at(rec("t", 0, "1-1"), 0), at(rec("t", 1, "2-1"), 0)
	h.begin(1, a)
	h.begin(2, b)
	h.end(1, OK, RC, 0, recs(a), b)
	h.end(2, OK, RC, 0, recs(b), a)
	h.finalBoth("t", 0, 0, 1, a)
	h.finalBoth("t", 1, 0, 1, b)
	r := h.check(strict())
	ex := r.Anomalies[guarantee.G1c].Examples[0]
	want := []results.CycleStep{{From: 2, To: 3, Kind: results.EdgeWR, Value: "1-1", Isolation: "read_committed"},
		{From: 3, To: 2, Kind: results.EdgeWR, Value: "2-1", Isolation: "read_committed"}}
	if !slices.Equal(ex.Cycle, want) {
		t.Errorf("cycle %+v, want %+v", ex.Cycle, want)
	}
	note := ex.Note
	for _, want := range []string{"T1 (op 2) wrote 1-1 at t-0 offset 0, which T2 (op 3) read (read_committed)",
		"T2 (op 3) wrote 2-1 at t-1 offset 0, which T1 (op 2) read (read_committed)", "a cycle"} {
		if !strings.Contains(note, want) {
			t.Errorf("witness %q lacks %q", note, want)
		}
	}
}

// A generated history of transactions that read passes, with the graph's edges all there: what
// the benchmark times is the whole search, not a short cut around it.
func TestGeneratedTxnReadsPass(t *testing.T) {
	var buf bytes.Buffer
	if err := histgen.GenerateTxnReads(&buf, 60_000, 3); err != nil {
		t.Fatal(err)
	}
	r, err := history.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	c := New(r.Header().Config, Options{})
	var op history.Op
	for r.Next(&op) == nil {
		c.Add(&op)
	}
	res := c.Results()
	if res.Verdict != results.Pass {
		t.Fatalf("verdict %s: %v %s", res.Verdict, res.UnknownReasons, forbiddenNotes(res))
	}
	for _, a := range []guarantee.Anomaly{guarantee.G1c, guarantee.G1cProcess, guarantee.G1cRealtime, guarantee.PrecommittedRead,
		guarantee.UncommittedRead, guarantee.PhantomRead} {
		if u := res.Anomalies[a].Unchecked; u != "" {
			t.Errorf("%s unchecked: %s", a, u)
		}
	}
	wr := c.wrEdges(c.txnRecords().writers)
	if len(wr) < 1000 || len(c.orderEdges()) < 1000 {
		t.Errorf("%d wr edges, %d order edges: the graph is too thin to time", len(wr), len(c.orderEdges()))
	}
}

func forbiddenNotes(r *results.Results) string {
	var s []string
	for a, an := range r.Anomalies {
		if an.ForbiddenCount() > 0 {
			s = append(s, fmt.Sprintf("%s: %s", a, exampleNotes(an)))
		}
	}
	return strings.Join(s, "; ")
}
