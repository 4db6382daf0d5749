package verify

import (
	"encoding/json"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func TestZombieWrite(t *testing.T) {
	old, fresh, late := rec("t", 0, "5-1"), rec("t", 0, "6-1"), rec("t", 0, "5-2")
	runCases(t, []tcase{
		{
			name: "fenced instance's later transaction becomes visible",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(old, 0))   // 0, 1: instance 5 holds tx
				h.txn(6, "tx", history.IntentCommit, OK, at(fresh, 2)) // 2, 3: instance 6 takes tx
				h.txn(5, "tx", history.IntentCommit, OK, at(late, 4))  // 4, 5: zombie commits
				h.finalBoth("t", 0, 0, 6, at(old, 0), at(fresh, 2), at(late, 4))
			},
			want:    map[guarantee.Anomaly]want{guarantee.ZombieWrite: {count: 1, ops: []int64{2, 4, 5}}},
			verdict: results.Fail,
		},
		{
			name: "zombie's transaction seen by a read_committed consumer only",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(old, 0))
				h.txn(6, "tx", history.IntentCommit, OK, at(fresh, 2))
				h.txn(5, "tx", history.IntentCommit, Info, late)
				h.poll(7, RC, at(late, 4))
			},
			want: map[guarantee.Anomaly]want{guarantee.ZombieWrite: {count: 1}},
		},
		{
			name: "an explicit init op takes the id before the new instance's first transaction",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(old, 0))
				h.add(history.Op{Process: history.Client(6), Type: history.Invoke, F: "init", Value: history.Payload{Raw: json.RawMessage(`{"txn_id":"tx"}`)}})
				h.add(history.Op{Process: history.Client(6), Type: OK, F: "init", Value: history.Payload{Raw: json.RawMessage(`{"txn_id":"tx"}`)}}) // op 3
				h.txn(5, "tx", history.IntentCommit, OK, at(late, 4))                                                                               // ops 4, 5
				h.finalBoth("t", 0, 0, 6, at(old, 0), at(late, 4))
			},
			want:    map[guarantee.Anomaly]want{guarantee.ZombieWrite: {count: 1, ops: []int64{3, 4, 5}}},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "fenced instance's later transaction fails and stays invisible",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(old, 0))
				h.txn(6, "tx", history.IntentCommit, OK, at(fresh, 2))
				h.txn(5, "tx", history.IntentCommit, Fail, late)
				h.final("t", 0, RU, 0, 6, at(old, 0), at(fresh, 2), at(late, 4))
				h.final("t", 0, RC, 0, 6, at(old, 0), at(fresh, 2))
			},
			verdict: results.Pass,
		},
		{
			name: "a crashed instance comes back and takes its id again",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(old, 0))
				h.txn(6, "tx", history.IntentCommit, OK, at(fresh, 2))
				h.op(5, history.FCrash)
				h.txn(5, "tx", history.IntentCommit, OK, at(late, 4))
				h.finalBoth("t", 0, 0, 6, at(old, 0), at(fresh, 2), at(late, 4))
			},
			verdict: results.Pass,
		},
		{
			name: "two instances with different transactional ids",
			build: func(h *hb) {
				h.txn(5, "tx-a", history.IntentCommit, OK, at(old, 0))
				h.txn(6, "tx-b", history.IntentCommit, OK, at(fresh, 2))
				h.txn(5, "tx-a", history.IntentCommit, OK, at(late, 4))
				h.finalBoth("t", 0, 0, 6, at(old, 0), at(fresh, 2), at(late, 4))
			},
			verdict: results.Pass,
		},
	})
}
