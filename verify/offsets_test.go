package verify

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// Offsets of any size are judged alike: a partition whose log starts at 2^40 (a long-lived
// topic), or one with offsets past any dense range.
func TestLargeOffsets(t *testing.T) {
	const base = int64(1) << 40
	// dense writes n acknowledged records at base.., returning them.
	dense := func(h *hb, topic string, n int, base int64) []history.Record {
		rs := make([]history.Record, n)
		for i := range rs {
			rs[i] = at(rec(topic, 0, "1-"+strconv.Itoa(i)), base+int64(i))
			h.send(1, rs[i], OK, base+int64(i))
		}
		return rs
	}
	without := func(rs []history.Record, i int) []history.Record {
		return append(append([]history.Record{}, rs[:i]...), rs[i+1:]...)
	}
	// eosMissing: inputs at base.. base+2, the middle one committed and unprocessed.
	eosMissing := func(h *hb, base int64) {
		rs := dense(h, "in", 3, base)
		h.rpw(8, "proc", OK, recs(rs[0]), recs(at(rec("out", 0, "8-1"), 0)))
		h.rpw(8, "proc", OK, recs(rs[2]), recs(at(rec("out", 0, "8-3"), 2)))
		h.finalBoth("in", 0, base, base+3, rs...)
		h.finalBoth("out", 0, 0, 4, at(rec("out", 0, "8-1"), 0), at(rec("out", 0, "8-3"), 2))
	}
	runCases(t, []tcase{
		{
			name: "a partition from 2^40, dense: clean",
			build: func(h *hb) {
				rs := dense(h, "t", 300, base)
				h.poll(7, RC, rs[:150]...)
				h.poll(7, RC, rs[150:]...)
				h.finalBoth("t", 0, base, base+300, rs...)
			},
			verdict: results.Pass,
		},
		{
			name: "a partition from 2^40, dense: a lost write, a skip, an inconsistent offset",
			build: func(h *hb) {
				rs := dense(h, "t", 300, base)
				h.poll(7, RC, rs[:10]...)
				h.poll(7, RC, rs[11:20]...) // skips rs[10]
				h.poll(8, RC, at(rec("t", 0, "9-9"), base+20))
				h.finalBoth("t", 0, base, base+300, without(rs, 200)...)
			},
			want: map[guarantee.Anomaly]want{
				guarantee.LostWrite:          {count: 1, ops: []int64{400, 401}},
				guarantee.PollSkip:           {count: 1, ops: []int64{601, 603}},
				guarantee.InconsistentOffset: {count: 1, ops: []int64{41, 605}},
				// The final read has another record where process 8 saw 9-9.
				guarantee.LostObserved: {count: 1, ops: []int64{605, 607}},
			},
			verdict: results.Fail,
		},
		{
			// A gap too wide to look at offset by offset: the visible-offset index answers.
			name: "a wide skip at 2^40",
			build: func(h *hb) {
				a, b, c := at(rec("t", 0, "1-1"), base), at(rec("t", 0, "1-2"), base+500), at(rec("t", 0, "1-3"), base+1000)
				h.send(1, a, OK, base)
				h.send(1, b, OK, base+500)
				h.send(1, c, OK, base+1000)
				h.poll(7, RC, a) // ops 6, 7
				h.poll(7, RC, c) // ops 8, 9
				h.finalBoth("t", 0, base, base+1001, a, b, c)
			},
			want:    map[guarantee.Anomaly]want{guarantee.PollSkip: {count: 1, ops: []int64{7, 9}}},
			verdict: results.Fail,
		},
		{
			name: "a wide gap with no record a reader saw: no skip",
			build: func(h *hb) {
				a, c := at(rec("t", 0, "1-1"), base), at(rec("t", 0, "1-3"), base+1000)
				h.send(1, a, OK, base)
				h.txn(5, "tx", history.IntentAbort, Fail, rec("t", 0, "5-1"))
				h.send(1, c, OK, base+1000)
				h.poll(7, RC, a)
				h.poll(7, RC, c)
				h.final("t", 0, RU, base, base+1001, a, at(rec("t", 0, "5-1"), base+500), c)
				h.final("t", 0, RC, base, base+1001, a, c)
			},
			verdict: results.Pass,
		},
		{
			name: "eos-missing at offset 70,000",
			build: func(h *hb) {
				eosMissing(h, 69_999)
			},
			want: map[guarantee.Anomaly]want{
				guarantee.EOSMissing: {count: 1, ops: []int64{2}},
				guarantee.PollSkip:   {count: 1},
			},
			verdict: results.Fail,
		},
		{
			name: "eos-missing at 2^40+1",
			build: func(h *hb) {
				eosMissing(h, base)
			},
			want: map[guarantee.Anomaly]want{
				guarantee.EOSMissing: {count: 1, ops: []int64{2}},
				guarantee.PollSkip:   {count: 1},
			},
			verdict: results.Fail,
		},
		{
			name: "every input processed at 70,000: clean",
			build: func(h *hb) {
				rs := dense(h, "in", 3, 69_999)
				h.rpw(8, "proc", OK, recs(rs...), recs(at(rec("out", 0, "8-1"), 0)))
				h.finalBoth("in", 0, 69_999, 70_002, rs...)
				h.finalBoth("out", 0, 0, 2, at(rec("out", 0, "8-1"), 0))
			},
			verdict: results.Pass,
		},
		{
			// 100,000 is first stored beyond the dense range; later offsets grow the partition's
			// storage past it. The value reported there must still be the one first reported.
			name: "an offset stored before the log grows past it keeps its value",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 100_000) // ops 0, 1
				filler := make([]history.Record, 0, 20_002)
				for o := int64(0); o <= 20_000; o++ {
					filler = append(filler, at(rec("t", 0, fmt.Sprintf("x%d", o)), o))
				}
				filler = append(filler, at(rec("t", 0, "x100001"), 100_001))
				h.poll(7, RU, filler...)
				h.send(2, rec("t", 0, "2-1"), OK, 100_000) // ops 4, 5
			},
			want: map[guarantee.Anomaly]want{
				guarantee.InconsistentOffset: {count: 1, ops: []int64{1, 5}},
			},
		},
	})
}

// A "P-N" value first stored outside the per-process array keeps its id once the array grows
// past N.
func TestInternFarValueKeepsItsID(t *testing.T) {
	vs := newValues()
	far := vs.intern("1-100000")
	for n := range 20_001 {
		vs.intern("1-" + strconv.Itoa(n))
	}
	vs.intern("1-100001") // grows the array past 100,000
	if again := vs.intern("1-100000"); again != far {
		t.Fatalf("1-100000 was id %d, now %d", far, again)
	}
	if got := vs.name(far); got != "1-100000" {
		t.Errorf("name %q", got)
	}
}

// Through the checker: the acknowledged value must be found in the final read.
func TestInternFarValueInAHistory(t *testing.T) {
	h := newHB()
	h.send(1, rec("t", 0, "1-100000"), OK, 0)
	filler := make([]history.Record, 0, 20_002)
	for n := range 20_001 {
		filler = append(filler, at(rec("u", 0, "1-"+strconv.Itoa(n)), int64(n)))
	}
	filler = append(filler, at(rec("u", 0, "1-100001"), 20_001))
	h.poll(7, RU, filler...)
	h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-100000"), 0))
	h.finalBoth("u", 0, 0, 20_002, filler...)
	r := h.check(strict())
	for name, a := range r.Anomalies {
		if a.Count > 0 {
			t.Errorf("%s: %s", name, exampleNotes(a))
		}
	}
	if r.Verdict != results.Pass {
		t.Errorf("verdict %s (%v)", r.Verdict, r.UnknownReasons)
	}
}

// The offset store gives back what was put, wherever it was put, and walks it in order.
func TestOffsetStore(t *testing.T) {
	var l offsetLog
	offs := []int64{1 << 62, 5, 100_000, 0, 70_000, 1 << 40, 1<<40 + 1, 65_535, 65_536, 3, 1<<62 - 1}
	for i, o := range offs {
		l.set(o, slot{val: uint32(i + 1), ord: uint32(10 * i)})
	}
	for i := 0; i < 30_000; i++ { // grow whatever dense part there is
		if o := int64(200 + i); l.get(o).val == 0 {
			l.set(o, slot{val: 1_000_000, ord: 1})
		}
	}
	for i, o := range offs {
		if s := l.get(o); s.val != uint32(i+1) || s.ord != uint32(10*i) {
			t.Errorf("offset %d: %+v, want value %d", o, s, i+1)
		}
	}
	for _, o := range []int64{-1, 1, 99_999, 1<<40 - 1, 1<<62 + 1} {
		if s := l.get(o); s.val != 0 {
			t.Errorf("offset %d: %+v, want empty", o, s)
		}
	}
	last, n := int64(-1), 0
	l.each(0, 1<<62, func(o int64, s slot) bool {
		if o <= last {
			t.Fatalf("offset %d after %d", o, last)
		}
		last = o
		n++
		return true
	})
	if want := len(offs) + 30_000; n != want {
		t.Errorf("walked %d offsets, want %d", n, want)
	}
	var inRange []int64
	l.each(65_000, 1<<40, func(o int64, s slot) bool {
		if s.val != 1_000_000 {
			inRange = append(inRange, o)
		}
		return true
	})
	if fmt.Sprint(inRange) != "[65535 65536 70000 100000 1099511627776]" {
		t.Errorf("in [65000, 2^40]: %v", inRange)
	}
}
