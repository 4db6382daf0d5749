package verify

import (
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func TestMergedTransaction(t *testing.T) {
	a1, a2 := rec("t", 0, "5-1"), rec("t", 0, "5-2")
	b1, b2 := rec("t", 0, "5-3"), rec("u", 0, "5-4")
	runCases(t, []tcase{
		{
			// Offset 2, where the first one's marker belongs, holds the next one's record: the
			// two ended with one marker, at 3.
			name: "the next transaction's record right after the unknown one's",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, Info, at(a1, 0), at(a2, 1)) // ops 0, 1
				h.txn(5, "tx", history.IntentCommit, OK, at(b1, 2), at(b2, 0))   // ops 2, 3
				h.finalBoth("t", 0, 0, 4, at(a1, 0), at(a2, 1), at(b1, 2))
				h.finalBoth("u", 0, 0, 2, at(b2, 0))
			},
			want:    map[guarantee.Anomaly]want{guarantee.MergedTransaction: {count: 1, ops: []int64{0, 1, 2, 3}}},
			verdict: results.Fail,
		},
		{
			name: "merged with an aborted transaction",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentAbort, Fail, at(a1, 0))
				h.txn(5, "tx", history.IntentAbort, Fail, at(b1, 1))
				h.final("t", 0, RU, 0, 3, at(a1, 0), at(b1, 1))
				h.final("t", 0, RC, 0, 3)
			},
			want:    map[guarantee.Anomaly]want{guarantee.MergedTransaction: {count: 1}},
			verdict: results.Fail,
		},
		{
			// The id's middle transaction wrote u only, so the first and the third follow each
			// other in t: offset 1 had to hold the first one's marker.
			name: "a transaction that skipped the partition in between",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(a1, 0)) // ops 0, 1
				h.txn(5, "tx", history.IntentCommit, OK, at(b2, 0)) // ops 2, 3
				h.txn(5, "tx", history.IntentCommit, OK, at(b1, 1)) // ops 4, 5
				h.finalBoth("t", 0, 0, 3, at(a1, 0), at(b1, 1))
				h.finalBoth("u", 0, 0, 2, at(b2, 0))
			},
			want:    map[guarantee.Anomaly]want{guarantee.MergedTransaction: {count: 1, ops: []int64{0, 1, 4, 5}}},
			verdict: results.Fail,
		},
		{
			name: "another producer's record fills the only free offset between them",
			build: func(h *hb) {
				o := rec("t", 0, "7-1")
				h.txn(5, "tx", history.IntentCommit, OK, at(a1, 0)) // ops 0, 1
				h.txn(5, "tx", history.IntentCommit, OK, at(b2, 0)) // ops 2, 3
				h.send(7, o, OK, 1)                                 // ops 4, 5
				h.txn(5, "tx", history.IntentCommit, OK, at(b1, 2)) // ops 6, 7
				h.finalBoth("t", 0, 0, 4, at(a1, 0), at(o, 1), at(b1, 2))
				h.finalBoth("u", 0, 0, 2, at(b2, 0))
			},
			want:    map[guarantee.Anomaly]want{guarantee.MergedTransaction: {count: 1, ops: []int64{0, 1, 6, 7}}},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "a transaction that skipped the partition in between, a free offset left",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(a1, 0))
				h.txn(5, "tx", history.IntentCommit, OK, at(b2, 0))
				h.txn(5, "tx", history.IntentCommit, OK, at(b1, 2))
				h.finalBoth("t", 0, 0, 4, at(a1, 0), at(b1, 2))
				h.finalBoth("u", 0, 0, 2, at(b2, 0))
			},
			verdict: results.Pass,
		},
		{
			name: "another producer's record between them, a free offset left",
			build: func(h *hb) {
				o := rec("t", 0, "7-1")
				h.txn(5, "tx", history.IntentCommit, OK, at(a1, 0))
				h.txn(5, "tx", history.IntentCommit, OK, at(b2, 0))
				h.send(7, o, OK, 2)
				h.txn(5, "tx", history.IntentCommit, OK, at(b1, 3))
				h.finalBoth("t", 0, 0, 5, at(a1, 0), at(o, 2), at(b1, 3))
				h.finalBoth("u", 0, 0, 2, at(b2, 0))
			},
			verdict: results.Pass,
		},
		{
			name: "a marker between them",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, Info, at(a1, 0), at(a2, 1))
				h.txn(5, "tx", history.IntentCommit, OK, at(b1, 3), at(b2, 0))
				h.finalBoth("t", 0, 0, 5, at(a1, 0), at(a2, 1), at(b1, 3))
				h.finalBoth("u", 0, 0, 2, at(b2, 0))
			},
			verdict: results.Pass,
		},
		{
			name: "another producer's records, then a marker, between them",
			build: func(h *hb) {
				o := rec("t", 0, "7-1")
				h.txn(5, "tx", history.IntentCommit, OK, at(a1, 0))
				h.send(7, o, OK, 1)
				h.txn(5, "tx", history.IntentCommit, OK, at(b1, 3))
				h.finalBoth("t", 0, 0, 5, at(a1, 0), at(o, 1), at(b1, 3))
			},
			verdict: results.Pass,
		},
		{
			name: "no partition in common",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(a1, 0))
				h.txn(5, "tx", history.IntentCommit, OK, at(b2, 0))
				h.finalBoth("t", 0, 0, 2, at(a1, 0))
				h.finalBoth("u", 0, 0, 2, at(b2, 0))
			},
			verdict: results.Pass,
		},
		{
			name: "different transactional.ids",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(a1, 0))
				h.txn(6, "ty", history.IntentCommit, OK, at(rec("t", 0, "6-1"), 1))
				h.finalBoth("t", 0, 0, 3, at(a1, 0), at(rec("t", 0, "6-1"), 1))
			},
			verdict: results.Pass,
		},
	})
}
