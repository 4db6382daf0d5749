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

// A transaction meant to abort never sends a commit, so whatever its completion says (info, or
// none at all) it cannot have committed: a read_committed reader must not see its records.
func TestAbortIntentOfUnknownOutcome(t *testing.T) {
	r := rec("t", 0, "5-1")
	inv := func(h *hb, recs ...history.Record) int64 {
		return h.add(history.Op{Process: history.Client(5), Type: history.Invoke, F: history.FTxn,
			Value: history.Payload{Txn: &history.Txn{TxnID: "tx", Records: recs, Intent: history.IntentAbort}}})
	}
	in1, in3 := at(rec("in", 0, "1-1"), 0), at(rec("in", 0, "1-3"), 2)
	out1, out3 := at(rec("out", 0, "8-1"), 0), at(rec("out", 0, "8-3"), 2)
	runCases(t, []tcase{
		{
			name: "completed info, a read_committed consumer sees it",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentAbort, Info, r) // ops 0, 1
				h.poll(7, RC, at(r, 0))                      // ops 2, 3
				h.final("t", 0, RU, 0, 2, at(r, 0))
				h.final("t", 0, RC, 0, 2)
			},
			want:    map[guarantee.Anomaly]want{guarantee.AbortedRead: {count: 1, ops: []int64{0, 1, 3}}},
			verdict: results.Fail,
		},
		{
			name: "never completed, the read_committed final read shows it",
			build: func(h *hb) {
				inv(h, r)                           // op 0
				h.finalBoth("t", 0, 0, 2, at(r, 0)) // RC final: ops 3, 4
			},
			want:    map[guarantee.Anomaly]want{guarantee.AbortedRead: {count: 1, ops: []int64{0, 4}}},
			verdict: results.Fail,
		},
		{
			name: "completed info, an rpw reads it as input",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentAbort, Info, rec("in", 0, "5-1"))     // ops 0, 1
				h.rpw(8, "proc", OK, recs(at(rec("in", 0, "5-1"), 0)), recs(out1)) // ops 2, 3
				h.final("in", 0, RU, 0, 2, at(rec("in", 0, "5-1"), 0))
				h.final("in", 0, RC, 0, 2)
				h.finalBoth("out", 0, 0, 1, out1)
			},
			want:    map[guarantee.Anomaly]want{guarantee.AbortedRead: {count: 1, ops: []int64{0, 1, 2}}},
			verdict: results.Fail,
		},
		{
			name: "completed info, partly visible: partial-transaction too, as for a failed one",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentAbort, Info, r, rec("u", 1, "5-2"))
				h.finalBoth("t", 0, 0, 2, at(r, 0))
				h.final("u", 1, RU, 0, 2, at(rec("u", 1, "5-2"), 0))
				h.final("u", 1, RC, 0, 2)
			},
			want: map[guarantee.Anomaly]want{
				guarantee.AbortedRead:        {count: 1},
				guarantee.PartialTransaction: {count: 1},
			},
			verdict: results.Fail,
		},
		{
			// The record is an aborted read, not an input the processors owed: no eos-missing,
			// and no poll-skip for the processor that rightly stepped over it.
			name: "completed info, shown in the read_committed input log between processed inputs",
			build: func(h *hb) {
				h.send(1, in1, OK, 0)
				h.txn(2, "feeder", history.IntentAbort, Info, rec("in", 0, "2-1")) // ops 2, 3
				h.send(1, in3, OK, 2)
				h.rpw(8, "proc", OK, recs(in1), recs(out1))
				h.rpw(8, "proc", OK, recs(in3), recs(out3))
				h.finalBoth("in", 0, 0, 3, in1, at(rec("in", 0, "2-1"), 1), in3)
				h.finalBoth("out", 0, 0, 4, out1, out3)
			},
			want:    map[guarantee.Anomaly]want{guarantee.AbortedRead: {count: 1, ops: []int64{2, 3}}},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "completed info, only the read_uncommitted final read has it",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentAbort, Info, r)
				h.final("t", 0, RU, 0, 2, at(r, 0))
				h.final("t", 0, RC, 0, 2)
			},
			verdict: results.Pass,
		},
		{
			name: "never completed, only a read_uncommitted consumer sees it: permitted",
			build: func(h *hb) {
				inv(h, r)               // op 0
				h.poll(7, RU, at(r, 0)) // ops 1, 2
				h.final("t", 0, RU, 0, 2, at(r, 0))
				h.final("t", 0, RC, 0, 2)
			},
			want:    map[guarantee.Anomaly]want{guarantee.AbortedRead: {count: 1, permitted: true, ops: []int64{0, 2}}},
			verdict: results.Pass,
		},
	})
}
