package verify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// The dependency graph of transactions (txn and rpw ops), and the cycles in it.
//
// Vertices are transactions. Edges:
//   - wr: T1 wrote a record T2 read (T1 != T2, T1 not known to have aborted, the value written
//     by one op only, so that its writer is certain); a read_uncommitted read makes an edge of
//     its own kind;
//   - process: T1 and T2 are consecutive transactions of one process, T1 completed;
//   - realtime: T1 completed before T2 was invoked, kept as a transitive reduction (an edge
//     from each transaction completed and not yet followed by one invoked after it);
//   - ww: T1's record directly precedes T2's in a partition's log.
//
// Let a transaction's moment be when it asked to end (commit or abort), or when it completed if
// it never asked. It reads before that moment, and a read_committed reader sees a record only
// after its writer's end was decided, which comes after the writer asked; a transaction that
// completed, whatever its outcome (an unknown one too), reached its moment before it completed,
// so before any transaction invoked later reached its own. Each read_committed wr, process and
// realtime edge therefore leads to a later moment, and a cycle of them is impossible: G1c (wr
// edges only), G1c-process (wr and process), G1c-realtime (with realtime). A cycle needs a
// read_uncommitted edge to be possible, and is permitted then; the search looks for cycles of
// read_committed edges first. ww cycles (G0) are what Kafka's transactions allow, since they do
// not isolate writes; cycles that mix ww with wr are not reported, since they follow from a
// permitted ww order.

// Edge kinds, in the order a cycle's name is chosen by.
const (
	edgeWR   uint8 = iota // read at read_committed
	edgeWRRU              // read at read_uncommitted
	edgeProcess
	edgeRealtime
	edgeWW
)

func edgeMask(ks ...uint8) uint8 {
	var m uint8
	for _, k := range ks {
		m |= 1 << k
	}
	return m
}

type gedge struct {
	from, to uint32
	kind     uint8
	v        uint32 // wr: the value read; ww: the earlier value (v2 the later); 0 otherwise
	v2       uint32
}

// depGraph is the edges by their source (CSR).
type depGraph struct {
	start []uint32 // edges of vertex u: edges[start[u]:start[u+1]]
	edges []gedge
}

// newDepGraph groups the edges of lists (taken in order, as one list) by source with a
// counting sort: linear in the edges, which a history of a million transactions has millions
// of.
func newDepGraph(n int, lists ...[]gedge) depGraph {
	total := 0
	for _, es := range lists {
		total += len(es)
	}
	g := depGraph{start: make([]uint32, n+1), edges: make([]gedge, total)}
	for _, es := range lists {
		for _, e := range es {
			g.start[e.from+1]++
		}
	}
	for i := 1; i <= n; i++ {
		g.start[i] += g.start[i-1]
	}
	next := slices.Clone(g.start[:n])
	for _, es := range lists {
		for _, e := range es {
			g.edges[next[e.from]] = e
			next[e.from]++
		}
	}
	return g
}

func (g *depGraph) out(u uint32) []gedge { return g.edges[g.start[u]:g.start[u+1]] }

// acyclic reports whether the edges of lists, over vertices 0..n-1, make no cycle of two or
// more vertices (an edge from a vertex to itself is no such cycle, as it makes no strongly
// connected component of two or more): Kahn's algorithm, over a copy of the graph that keeps
// only each edge's target — a fifth of a gedge's bytes, which is what the answer for a passing
// history costs.
func acyclic(n int, lists ...[]gedge) bool {
	start, indeg := make([]uint32, n+1), make([]uint32, n)
	m := 0
	for _, es := range lists {
		for _, e := range es {
			if e.from != e.to {
				start[e.from+1]++
				indeg[e.to]++
				m++
			}
		}
	}
	for i := 1; i <= n; i++ {
		start[i] += start[i-1]
	}
	to, next := make([]uint32, m), slices.Clone(start[:n])
	for _, es := range lists {
		for _, e := range es {
			if e.from != e.to {
				to[next[e.from]] = e.to
				next[e.from]++
			}
		}
	}
	// Take vertices with no edge left into them, and their edges out, until none is left.
	ready := next[:0] // next is spent: its room holds the queue
	for v := range uint32(n) {
		if indeg[v] == 0 {
			ready = append(ready, v)
		}
	}
	for i := 0; i < len(ready); i++ {
		u := ready[i]
		for _, w := range to[start[u]:start[u+1]] {
			if indeg[w]--; indeg[w] == 0 {
				ready = append(ready, w)
			}
		}
	}
	return len(ready) == n
}

// sccs finds the strongly connected components of more than one vertex over the edges whose
// kind is in mask (Tarjan's algorithm, iteratively, so that a long chain of a million
// transactions needs no deep stack). comp[u] is u's component, -1 for none.
func (g *depGraph) sccs(mask uint8) (comp []int32, comps [][]uint32) {
	n := len(g.start) - 1
	index := make([]int32, n)
	low := make([]int32, n)
	onStack := make([]bool, n)
	comp = make([]int32, n)
	for i := range index {
		index[i], comp[i] = -1, -1
	}
	var stack []uint32
	type frame struct {
		u    uint32
		next uint32 // position in u's edges
	}
	var call []frame
	next := int32(0)
	for root := range uint32(n) {
		if index[root] >= 0 || g.start[root] == g.start[root+1] {
			continue
		}
		call = append(call[:0], frame{u: root, next: g.start[root]})
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			u := f.u
			if f.next < g.start[u+1] {
				e := g.edges[f.next]
				f.next++
				if mask&(1<<e.kind) == 0 {
					continue
				}
				switch w := e.to; {
				case index[w] < 0:
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{u: w, next: g.start[w]})
				case onStack[w]:
					low[u] = min(low[u], index[w])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].u
				low[p] = min(low[p], low[u])
			}
			if low[u] != index[u] {
				continue
			}
			i := len(stack) - 1
			for stack[i] != u {
				i--
			}
			members := stack[i:]
			for _, w := range members {
				onStack[w] = false
			}
			if len(members) > 1 {
				id := int32(len(comps))
				c := slices.Clone(members)
				for _, w := range c {
					comp[w] = id
				}
				comps = append(comps, c)
			}
			stack = stack[:i]
		}
	}
	return comp, comps
}

// path finds a shortest path from s to t over edges of mask that stay in component id, by
// breadth-first search; nil when there is none.
func (g *depGraph) path(s, t uint32, mask uint8, comp []int32, id int32, prev map[uint32]uint32) []gedge {
	clear(prev)
	prev[s] = ^uint32(0)
	queue := []uint32{s}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for i := g.start[u]; i < g.start[u+1]; i++ {
			e := g.edges[i]
			if mask&(1<<e.kind) == 0 || comp[e.to] != id {
				continue
			}
			if _, seen := prev[e.to]; seen {
				continue
			}
			prev[e.to] = i
			if e.to == t {
				var out []gedge
				for w := t; w != s; {
					ed := g.edges[prev[w]]
					out = append(out, ed)
					w = ed.from
				}
				slices.Reverse(out)
				return out
			}
			queue = append(queue, e.to)
		}
	}
	return nil
}

// witness is a short cycle in component id over the edges of mask that takes at least one
// edge of kind need (need = edgeWR takes any cycle): for up to maxTries edges u → v of that
// kind, a shortest path v ⇝ u closes it; the shortest cycle found is kept.
func (g *depGraph) witness(members []uint32, mask uint8, need uint8, comp []int32, id int32) []gedge {
	const maxTries = 32
	prev := map[uint32]uint32{}
	var best []gedge
	tries := 0
	for _, u := range members {
		for i := g.start[u]; i < g.start[u+1] && tries < maxTries; i++ {
			e := g.edges[i]
			if e.kind != need || comp[e.to] != id {
				continue
			}
			tries++
			back := g.path(e.to, u, mask, comp, id, prev)
			if back == nil {
				continue
			}
			if c := append([]gedge{e}, back...); best == nil || len(c) < len(best) {
				best = c
			}
		}
	}
	return best
}

// cycleEvidence is one witness cycle: its edges in order, each from the previous one's target.
type cycleEvidence struct {
	steps []gedge
}

// cycleSearch is the part of the cycle search that needs no finding made before it: the edges,
// the two graphs and their components. startCycles runs it on goroutines of its own while the
// checks before checkCycles run, and checkCycles waits for it. Its goroutines read only what no
// check changes once the history is in — the transactions, what they read, and a snapshot of
// the values taken before any check runs (some checks set flags of values: reading those
// concurrently would be a data race).
type cycleSearch struct {
	wg       sync.WaitGroup
	hasWR    bool     // wr edges exist: the families' graph g was built
	g        depGraph // wr, wr-RU, process and realtime edges
	cyclic   bool     // g has a component of two or more
	hasWW    bool
	gww      depGraph // ww edges
	wwComp   []int32
	wwComps  [][]uint32
	wwMask   uint8
	depsMask uint8
}

// startCycles starts the search's goroutines on the snapshot recs (txnRecords), with two
// transactions or more.
func (c *Checker) startCycles(recs *txnRecords) *cycleSearch {
	n := len(c.txns)
	cs := &cycleSearch{wwMask: edgeMask(edgeWW), depsMask: edgeMask(edgeWR, edgeWRRU, edgeProcess, edgeRealtime)}
	cs.wg.Go(func() {
		// Building the edges and finding each graph's components do not depend on one
		// another either: they run side by side.
		var wr, order, ww []gedge
		var wg sync.WaitGroup
		wg.Go(func() { wr = c.wrEdges(recs.writers) })
		wg.Go(func() { order = c.orderEdges() })
		wg.Go(func() { ww = wwEdges(recs.wwLog) })
		wg.Wait()
		cs.hasWR, cs.hasWW = len(wr) > 0, len(ww) > 0
		if cs.hasWR {
			wg.Go(func() {
				// Every family's cycles are cycles of the graph of all these edges (its edges
				// are a subset of them): when that graph has none, no family's search could
				// find anything, and the graph the searches need is not even built.
				if cs.cyclic = !acyclic(n, wr, order); cs.cyclic {
					cs.g = newDepGraph(n, wr, order)
				}
			})
		}
		if cs.hasWW {
			wg.Go(func() {
				// Likewise: an acyclic ww graph has no component for the G0 search.
				if !acyclic(n, ww) {
					cs.gww = newDepGraph(n, ww)
					cs.wwComp, cs.wwComps = cs.gww.sccs(cs.wwMask)
				}
			})
		}
		wg.Wait()
	})
	return cs
}

// checkCycles waits for the search that startCycles started and reports the witnesses, in a
// fixed order: the families' (when there are wr edges), then G0's.
func (c *Checker) checkCycles(cs *cycleSearch) {
	if cs == nil {
		return
	}
	cs.wg.Wait()
	if cs.cyclic {
		for _, f := range []struct {
			a     guarantee.Anomaly
			order []uint8 // the order edges the family takes
			need  uint8
		}{
			{guarantee.G1c, nil, edgeWR},
			{guarantee.G1cProcess, []uint8{edgeProcess}, edgeProcess},
			{guarantee.G1cRealtime, []uint8{edgeProcess, edgeRealtime}, edgeRealtime},
		} {
			// Cycles of read_committed reads first (forbidden); then, where none was found,
			// cycles that take a read_uncommitted read (permitted).
			found := c.findCycles(&cs.g, f.a, edgeMask(append(f.order, edgeWR)...), f.need, nil)
			needRU := f.need
			if needRU == edgeWR {
				needRU = edgeWRRU
			}
			c.findCycles(&cs.g, f.a, edgeMask(append(f.order, edgeWR, edgeWRRU)...), needRU, found)
		}
	}
	if cs.hasWW {
		c.witnesses(&cs.gww, cs.wwComp, cs.wwComps, guarantee.G0, cs.wwMask, edgeWW, nil)
	}
}

// findCycles reports a witness cycle for each strongly connected component of the edges of
// mask that has a cycle through an edge of kind need, but for the components that hold a
// transaction of skip (the witnesses found before); it returns the transactions on its own
// witnesses. A witness that takes a read_uncommitted read is judged at that level.
func (c *Checker) findCycles(g *depGraph, a guarantee.Anomaly, mask, need uint8, skip map[uint32]bool) map[uint32]bool {
	comp, comps := g.sccs(mask)
	return c.witnesses(g, comp, comps, a, mask, need, skip)
}

// witnesses is findCycles on the components g.sccs(mask) returned.
func (c *Checker) witnesses(g *depGraph, comp []int32, comps [][]uint32, a guarantee.Anomaly, mask, need uint8, skip map[uint32]bool) map[uint32]bool {
	on := map[uint32]bool{}
	for id, members := range comps {
		if slices.ContainsFunc(members, func(t uint32) bool { return skip[t] }) {
			continue
		}
		steps := g.witness(members, mask, need, comp, int32(id))
		if steps == nil {
			continue
		}
		iso := int8(isoRC)
		for _, e := range steps {
			on[e.from] = true
			if e.kind == edgeWRRU {
				iso = isoRU
			}
		}
		c.cycles = append(c.cycles, cycleEvidence{steps: steps})
		first := &c.txns[steps[0].from]
		c.find(finding{a: a, v: steps[0].v, tp: 0, off: -1, off2: -1, proc: first.proc, iso: iso, txn: steps[0].from,
			ops: [4]uint32{none, none, none, none}, cycle: uint32(len(c.cycles))})
	}
	return on
}

// logAt is a value at its offset in a partition, with the transaction that wrote it.
type logAt struct {
	tp  uint32
	off int64
	v   uint32
	txn uint32
}

// txnRecords is what the cycle and merged-transaction searches need of the values' states:
// a snapshot taken at the start of finish, since their goroutines must not read the states
// while checks set flags of them (see cycleSearch, mergedSearch).
type txnRecords struct {
	// writers is, for each value, the transaction that certainly wrote it, or none: the value
	// was written by a txn or rpw, by that op only (so that its writer is certain), and the
	// transaction is not known to have aborted.
	writers []uint32
	// wwLog is the values with a writer and a known offset, by id: for the ww edges.
	wwLog []logAt
	// spans is the transactional records at the offset first reported for each, when that
	// offset still holds them, by id: for txnSpans.
	spans []logAt
}

// txnRecords takes the snapshot, in one pass over the values.
func (c *Checker) txnRecords() *txnRecords {
	// The lists hold transactional values only, of which there are at most txnWrites.
	n := c.txnWrites
	recs := &txnRecords{writers: make([]uint32, c.vals.len()), wwLog: make([]logAt, 0, n), spans: make([]logAt, 0, n)}
	recs.writers[0] = none
	for id := uint32(1); id < c.vals.len(); id++ {
		st := c.vals.at(id)
		recs.writers[id] = none
		if k := st.kind(); (k != kindTxn && k != kindRPW) || st.txn == none {
			continue
		}
		if st.tp != 0 && st.off >= 0 && c.parts.ps[st.tp].log.get(st.off).val == id {
			recs.spans = append(recs.spans, logAt{st.tp, st.off, id, st.txn})
		}
		if st.flags&fResent != 0 || c.txns[st.txn].neverCommitted() {
			continue
		}
		recs.writers[id] = st.txn
		if st.off >= 0 && st.tp != 0 {
			recs.wwLog = append(recs.wwLog, logAt{st.tp, st.off, id, st.txn})
		}
	}
	return recs
}

// wrEdges are the write → read edges, one per pair of transactions, of the kind of the
// reader's isolation; writers is txnRecords'.
func (c *Checker) wrEdges(writers []uint32) []gedge {
	es := make([]gedge, 0, len(c.reads)) // at most one per read: no growing and copying
	for ti := range c.txns {
		t := &c.txns[ti]
		mine := len(es) // this reader's edges so far: es[mine:], a handful, searched for a pair seen
		for _, v := range c.reads[t.inStart : t.inStart+t.inLen] {
			w := writers[v]
			if w == none || w == uint32(ti) {
				continue
			}
			if slices.ContainsFunc(es[mine:], func(e gedge) bool { return e.from == w }) {
				continue
			}
			kind := edgeWR
			if t.readIso == isoRU {
				kind = edgeWRRU
			}
			es = append(es, gedge{from: w, to: uint32(ti), kind: kind, v: v})
		}
	}
	return slices.Clip(es)
}

// orderEdges are the process and realtime edges, from every transaction that completed: even
// one whose outcome is unknown asked to end, if it ever did, before it completed (see above).
func (c *Checker) orderEdges() []gedge {
	ended := func(t *txn) bool { return t.doneOrd != none }
	// About one process edge and a few realtime edges (one per process with a transaction
	// in flight) per transaction: room for them up front saves growing and copying.
	es := make([]gedge, 0, 4*len(c.txns))
	last := map[int32]uint32{}
	for ti := range c.txns {
		t := &c.txns[ti]
		if p, ok := last[t.proc]; ok && ended(&c.txns[p]) && c.txns[p].doneOrd < t.invokeOrd {
			es = append(es, gedge{from: p, to: uint32(ti), kind: edgeProcess})
		}
		last[t.proc] = uint32(ti)
	}
	// Realtime: walk invokes and completions in history order. The frontier holds the
	// transactions completed and not yet followed by a completed one invoked after them.
	type event struct {
		ord    uint32
		t      uint32
		invoke bool
	}
	evs := make([]event, 0, 2*len(c.txns))
	for ti := range c.txns {
		t := &c.txns[ti]
		evs = append(evs, event{ord: t.invokeOrd, t: uint32(ti), invoke: true})
		if ended(t) {
			evs = append(evs, event{ord: t.doneOrd, t: uint32(ti)})
		}
	}
	slices.SortFunc(evs, func(a, b event) int { return cmp.Compare(a.ord, b.ord) })
	// preds[predStart[t]:predStart[t]+predLen[t]] is the frontier when t was invoked: at t's
	// completion they have a successor that follows them all.
	var frontier, preds []uint32
	predStart, predLen := make([]uint32, len(c.txns)), make([]uint16, len(c.txns))
	for _, e := range evs {
		if e.invoke {
			predStart[e.t], predLen[e.t] = uint32(len(preds)), uint16(min(len(frontier), 1<<16-1))
			preds = append(preds, frontier[:predLen[e.t]]...)
			for _, f := range frontier {
				if c.txns[f].proc != c.txns[e.t].proc {
					es = append(es, gedge{from: f, to: e.t, kind: edgeRealtime})
				}
			}
			continue
		}
		p := preds[predStart[e.t] : predStart[e.t]+uint32(predLen[e.t])]
		frontier = slices.DeleteFunc(frontier, func(f uint32) bool { return slices.Contains(p, f) })
		frontier = append(frontier, e.t)
	}
	return es
}

// wwEdges link each transactional record to the next one in its partition's log written by
// another transaction; log is txnRecords' wwLog, which wwEdges sorts.
func wwEdges(log []logAt) []gedge {
	slices.SortFunc(log, func(a, b logAt) int {
		if c := cmp.Compare(a.tp, b.tp); c != 0 {
			return c
		}
		return cmp.Compare(a.off, b.off)
	})
	es := make([]gedge, 0, len(log))
	for i := 1; i < len(log); i++ {
		a, b := log[i-1], log[i]
		ta, tb := a.txn, b.txn
		if a.tp != b.tp || ta == tb {
			continue
		}
		// The same pair again (the two interleaved further on) adds nothing: the search only
		// needs one edge per pair, and a repeated one costs no correctness.
		if n := len(es); n > 0 && es[n-1].from == ta && es[n-1].to == tb {
			continue
		}
		es = append(es, gedge{from: ta, to: tb, kind: edgeWW, v: a.v, v2: b.v})
	}
	return es
}

// txnOp is the op that speaks for a transaction: its completion, else its invoke.
func (c *Checker) txnOp(t uint32) uint32 {
	if d := c.txns[t].doneOrd; d != none {
		return d
	}
	return c.txns[t].invokeOrd
}

// describeCycle says what each edge of a witness cycle rests on, naming the transactions T1…Tk
// in the cycle's order, each with its op.
func (c *Checker) describeCycle(ev cycleEvidence) string {
	names := map[uint32]string{}
	name := func(t uint32) string {
		n, ok := names[t]
		if !ok {
			n = fmt.Sprintf("T%d (op %d)", len(names)+1, c.opIndex(c.txnOp(t)))
			names[t] = n
		}
		return n
	}
	at := func(v uint32) string {
		st := c.vals.at(v)
		if st.tp == 0 {
			return c.name(v)
		}
		p := c.parts.ps[st.tp]
		if st.off < 0 {
			return fmt.Sprintf("%s to %s-%d", c.name(v), p.topic, p.part)
		}
		return fmt.Sprintf("%s at %s-%d offset %d", c.name(v), p.topic, p.part, st.off)
	}
	parts := make([]string, 0, len(ev.steps))
	for _, s := range ev.steps {
		from, to := name(s.from), name(s.to)
		switch s.kind {
		case edgeWR, edgeWRRU:
			iso := "read_committed"
			if c.txns[s.to].readIso == isoRU {
				iso = "read_uncommitted"
			}
			parts = append(parts, fmt.Sprintf("%s wrote %s, which %s read (%s)", from, at(s.v), to, iso))
		case edgeProcess:
			parts = append(parts, fmt.Sprintf("%s completed before %s, its process's next transaction, began", from, to))
		case edgeRealtime:
			parts = append(parts, fmt.Sprintf("%s completed before %s began", from, to))
		case edgeWW:
			parts = append(parts, fmt.Sprintf("%s wrote %s just before %s wrote %s", from, at(s.v), to, at(s.v2)))
		}
	}
	return strings.Join(parts, "; ") + ": a cycle"
}

// cycleStep is one edge of a witness as results.json writes it.
func (c *Checker) cycleStep(s gedge) results.CycleStep {
	st := results.CycleStep{From: c.opIndex(c.txnOp(s.from)), To: c.opIndex(c.txnOp(s.to))}
	switch s.kind {
	case edgeWR, edgeWRRU:
		st.Kind, st.Value, st.Isolation = results.EdgeWR, c.name(s.v), string(isoName(c.txns[s.to].readIso))
	case edgeWW:
		st.Kind, st.Value = results.EdgeWW, c.name(s.v)
	case edgeProcess:
		st.Kind = results.EdgeProcess
	case edgeRealtime:
		st.Kind = results.EdgeRealtime
	}
	return st
}
