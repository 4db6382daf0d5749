package verify

import (
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// A read_committed final scan stops at the last stable offset: what lies beyond its end is
// judged from the read_uncommitted scan (which runs to the high watermark), or is unknown —
// never lost, never hidden. The transactional workload records no offsets on commit, so only
// scans place its records.
func TestLSOCoverage(t *testing.T) {
	a, b, b2 := rec("t", 0, "5-1"), rec("u", 1, "5-2"), rec("u", 1, "5-3")
	tOK := func(h *hb) { h.finalBoth("t", 0, 0, 2, at(a, 0)) }
	in := at(rec("in", 0, "1-1"), 0)
	runCases(t, []tcase{
		{
			name: "committed record never placed, only a read_committed scan: unknown, not lost",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, a, b)
				tOK(h)
				h.final("u", 1, RC, 0, 3) // an open transaction holds the LSO at 3
			},
			verdict: results.Unknown,
		},
		{
			name: "committed record the read_uncommitted scan places past the read_committed end: unknown",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, a, b, b2)
				tOK(h)
				h.final("u", 1, RU, 0, 9, at(b, 5), at(b2, 7))
				h.final("u", 1, RC, 0, 3)
			},
			verdict: results.Unknown,
		},
		{
			name: "committed rpw output past the read_committed end: no eos-missing",
			build: func(h *hb) {
				h.send(1, in, OK, 0)
				h.rpw(8, "proc", OK, recs(in), recs(rec("out", 0, "8-1")))
				h.finalBoth("in", 0, 0, 1, in)
				h.final("out", 0, RC, 0, 0)
			},
			verdict: results.Unknown,
		},
		// Must still be flagged.
		{
			name: "committed record absent from a complete read_uncommitted scan: lost and partial",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, a, b) // ops 0, 1
				tOK(h)
				h.final("u", 1, RU, 0, 9)
				h.final("u", 1, RC, 0, 3)
			},
			want: map[guarantee.Anomaly]want{
				guarantee.LostWrite:          {count: 1, ops: []int64{0, 1}},
				guarantee.PartialTransaction: {count: 1, ops: []int64{0, 1}},
			},
			verdict: results.Fail,
		},
		{
			name: "committed record within the read_committed range, hidden: lost and partial",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, a, b)
				tOK(h)
				h.final("u", 1, RU, 0, 9, at(b, 1))
				h.final("u", 1, RC, 0, 3)
			},
			want: map[guarantee.Anomaly]want{
				guarantee.LostWrite:          {count: 1},
				guarantee.PartialTransaction: {count: 1},
			},
			verdict: results.Fail,
		},
		{
			name: "committed rpw output absent from a complete read_uncommitted scan: eos-missing",
			build: func(h *hb) {
				h.send(1, in, OK, 0)
				h.rpw(8, "proc", OK, recs(in), recs(rec("out", 0, "8-1")))
				h.finalBoth("in", 0, 0, 1, in)
				h.final("out", 0, RU, 0, 2)
				h.final("out", 0, RC, 0, 0)
			},
			want: map[guarantee.Anomaly]want{
				guarantee.EOSMissing: {count: 1, ops: []int64{2, 3}},
				guarantee.LostWrite:  {count: 1},
			},
			verdict: results.Fail,
		},
		{
			name: "committed records past the LSO, then in a later read_committed scan: pass",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, a, b)
				tOK(h)
				h.final("u", 1, RU, 0, 9, at(b, 5))
				h.final("u", 1, RC, 0, 9, at(b, 5))
			},
			verdict: results.Pass,
		},
	})
}

// The unknown reason names the partition and how many records it could not judge.
func TestLSOUnknownReason(t *testing.T) {
	a, b, b2 := rec("t", 0, "5-1"), rec("u", 1, "5-2"), rec("u", 1, "5-3")
	h := newHB()
	h.txn(5, "tx", history.IntentCommit, OK, a, b, b2)
	h.finalBoth("t", 0, 0, 2, at(a, 0))
	h.final("u", 1, RU, 0, 9, at(b, 5), at(b2, 7))
	h.final("u", 1, RC, 0, 3)
	r := h.check(strict())
	if r.Verdict != results.Unknown {
		t.Fatalf("verdict %s, reasons %v", r.Verdict, r.UnknownReasons)
	}
	found := false
	for _, s := range r.UnknownReasons {
		if strings.Contains(s, "u-1 (2 ") && strings.Contains(s, "read_committed") {
			found = true
		}
		if strings.Contains(s, "t-0") {
			t.Errorf("t-0 was judged in full: %q", s)
		}
	}
	if !found {
		t.Errorf("no reason names u-1 and its 2 records: %q", r.UnknownReasons)
	}
}
