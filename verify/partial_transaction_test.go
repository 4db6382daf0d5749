package verify

import (
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func TestPartialTransaction(t *testing.T) {
	a, b := rec("t", 0, "5-1"), rec("u", 1, "5-2")
	runCases(t, []tcase{
		{
			name: "committed transaction visible in one partition only",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(a, 0), at(b, 0)) // ops 0, 1
				h.finalBoth("t", 0, 0, 2, at(a, 0))
				h.final("u", 1, RU, 0, 2, at(b, 0))
				h.final("u", 1, RC, 0, 2)
			},
			want: map[guarantee.Anomaly]want{
				guarantee.PartialTransaction: {count: 1, ops: []int64{0, 1}},
				guarantee.LostWrite:          {count: 1},
			},
			verdict: results.Fail,
		},
		{
			name: "transaction of unknown outcome split across partitions",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, Info, a, b)
				h.finalBoth("t", 0, 0, 2, at(a, 0))
				h.final("u", 1, RU, 0, 2, at(b, 0))
				h.final("u", 1, RC, 0, 2)
			},
			want:    map[guarantee.Anomaly]want{guarantee.PartialTransaction: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "aborted transaction partly visible",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentAbort, Fail, a, b)
				h.finalBoth("t", 0, 0, 2, at(a, 0))
				h.final("u", 1, RU, 0, 2, at(b, 0))
				h.final("u", 1, RC, 0, 2)
			},
			want: map[guarantee.Anomaly]want{
				guarantee.PartialTransaction: {count: 1},
				guarantee.AbortedRead:        {count: 1},
			},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "committed transaction visible everywhere",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(a, 0), at(b, 0))
				h.finalBoth("t", 0, 0, 2, at(a, 0))
				h.finalBoth("u", 1, 0, 2, at(b, 0))
			},
			verdict: results.Pass,
		},
		{
			name: "unknown transaction invisible everywhere",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, Info, a, b)
				h.final("t", 0, RU, 0, 2, at(a, 0))
				h.final("t", 0, RC, 0, 2)
				h.final("u", 1, RU, 0, 2, at(b, 0))
				h.final("u", 1, RC, 0, 2)
			},
			verdict: results.Pass,
		},
		{
			// Its visibility is unknown, so the verdict cannot pass (see TestLSOCoverage).
			name: "a record past the LSO of a stalled read_committed scan is not judged hidden",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(a, 0), at(b, 5))
				h.finalBoth("t", 0, 0, 2, at(a, 0))
				h.final("u", 1, RU, 0, 7, at(b, 5))
				h.final("u", 1, RC, 0, 3) // an open transaction holds the LSO at 3
			},
			verdict: results.Unknown,
		},
		{
			name: "transactions but no read_committed final read: unknown",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(a, 0))
				h.final("t", 0, RU, 0, 2, at(a, 0))
			},
			verdict: results.Unknown,
		},
	})
}
