package verify

import (
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func TestAbortedRead(t *testing.T) {
	r := rec("t", 0, "5-1")
	runCases(t, []tcase{
		{
			name: "read_committed consumer sees an aborted record",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentAbort, Fail, r) // ops 0, 1
				h.poll(7, RC, at(r, 0))                      // ops 2, 3
				h.final("t", 0, RU, 0, 2, at(r, 0))
				h.final("t", 0, RC, 0, 2)
			},
			want:    map[guarantee.Anomaly]want{guarantee.AbortedRead: {count: 1, ops: []int64{0, 1, 3}}},
			verdict: results.Fail,
		},
		{
			name: "read_committed final read shows an aborted record",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, Fail, r)
				h.finalBoth("t", 0, 0, 2, at(r, 0))
			},
			want:    map[guarantee.Anomaly]want{guarantee.AbortedRead: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "an intended abort that completed ok is still an abort",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentAbort, OK, r)
				h.poll(7, RC, at(r, 0))
				h.final("t", 0, RU, 0, 2, at(r, 0))
				h.final("t", 0, RC, 0, 2)
			},
			want:    map[guarantee.Anomaly]want{guarantee.AbortedRead: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "any reader sees a plain send that failed",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Fail, 0)
				h.poll(7, RU, at(rec("t", 0, "1-1"), 0))
				h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-1"), 0))
			},
			want:    map[guarantee.Anomaly]want{guarantee.AbortedRead: {count: 1}},
			verdict: results.Fail,
		},
		{
			// What read_uncommitted promises: reported, as permitted, so that a run shows it
			// (the lab check "read_uncommitted sees aborted data") with the ops that prove it.
			name: "read_uncommitted consumer sees an aborted record: permitted",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentAbort, Fail, r)
				h.poll(7, RU, at(r, 0))
				h.final("t", 0, RU, 0, 2, at(r, 0))
				h.final("t", 0, RC, 0, 2)
			},
			want:    map[guarantee.Anomaly]want{guarantee.AbortedRead: {count: 1, permitted: true, ops: []int64{0, 1, 3}}},
			verdict: results.Pass,
		},
		// Near misses.
		{
			name: "only a read_uncommitted final read has the aborted record",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentAbort, Fail, r)
				h.final("t", 0, RU, 0, 2, at(r, 0))
				h.final("t", 0, RC, 0, 2)
			},
			verdict: results.Pass,
		},
		{
			name: "read_committed sees a transaction whose outcome was unknown",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, Info, r)
				h.poll(7, RC, at(r, 0))
				h.finalBoth("t", 0, 0, 2, at(r, 0))
			},
			verdict: results.Pass,
		},
		{
			name: "a failed send that nobody read",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Fail, 0)
				h.finalBoth("t", 0, 0, 0)
			},
			verdict: results.Pass,
		},
	})
}
