package verify

import (
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// asyncPair sends a then b with both in flight, completing b first; offsets as given.
func asyncPair(h *hb, a, b history.Record, offA, offB int64) {
	ia := h.sendInvoke(4, a)
	ib := h.sendInvoke(4, b)
	h.sendDone(4, ib, b, OK, offB, true)
	h.sendDone(4, ia, a, OK, offA, true)
}

func TestReorder(t *testing.T) {
	a, b := rec("t", 0, "4-1"), rec("t", 0, "4-2")
	final := func(h *hb) { h.finalBoth("t", 0, 0, 2, at(b, 0), at(a, 1)) }
	runCases(t, []tcase{
		{
			name: "idempotent producer's later send lands first",
			build: func(h *hb) {
				asyncPair(h, a, b, 1, 0)
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.Reorder: {count: 1, ops: []int64{0, 1}}},
			verdict: results.Fail,
		},
		{
			name: "not idempotent, retries, five in flight: permitted",
			cfg:  func() history.Config { return plainRetries(5) },
			build: func(h *hb) {
				asyncPair(h, a, b, 1, 0)
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.Reorder: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "not idempotent, one in flight: forbidden",
			cfg:  func() history.Config { return plainRetries(1) },
			build: func(h *hb) {
				asyncPair(h, a, b, 1, 0)
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.Reorder: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "a transaction's records out of order in one partition",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(rec("t", 0, "5-1"), 1), at(rec("t", 0, "5-2"), 0))
				h.finalBoth("t", 0, 0, 3, at(rec("t", 0, "5-2"), 0), at(rec("t", 0, "5-1"), 1))
			},
			want:    map[guarantee.Anomaly]want{guarantee.Reorder: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "order learned from the final read when acks report no offsets",
			build: func(h *hb) {
				ia := h.sendInvoke(4, a)
				ib := h.sendInvoke(4, b)
				h.sendDone(4, ia, a, OK, -5, true)
				h.sendDone(4, ib, b, OK, -5, true)
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.Reorder: {count: 1}},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "completions out of order, offsets in send order",
			build: func(h *hb) {
				asyncPair(h, a, b, 0, 1)
				h.finalBoth("t", 0, 0, 2, at(a, 0), at(b, 1))
			},
			verdict: results.Pass,
		},
		{
			name: "two producers interleave",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 1)
				h.send(2, rec("t", 0, "2-1"), OK, 0)
				h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "2-1"), 0), at(rec("t", 0, "1-1"), 1))
			},
			verdict: results.Pass,
		},
		{
			name: "one producer, two partitions",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 5)
				h.send(1, rec("t", 1, "1-2"), OK, 0)
				h.finalBoth("t", 0, 0, 6, at(rec("t", 0, "1-1"), 5))
				h.finalBoth("t", 1, 0, 1, at(rec("t", 1, "1-2"), 0))
			},
			verdict: results.Pass,
		},
		{
			// After an unclean election the log is truncated and offsets are reused: a record
			// acknowledged at offset 5 by the old leader is gone (lost-write), and a later send
			// lands at offset 2 of the new leader's log. That is a loss, not a reordering: the
			// lost record has no position in the final log to compare.
			name: "a truncated record's acknowledged offset is not a position in the final log",
			cfg:  unclean,
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 5)
				h.send(1, rec("t", 0, "1-2"), OK, 2)
				h.finalBoth("t", 0, 0, 3, at(rec("t", 0, "0-1"), 0), at(rec("t", 0, "0-2"), 1), at(rec("t", 0, "1-2"), 2))
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "an application resend lands after later sends",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Info, 0)
				h.send(1, rec("t", 0, "1-2"), OK, 0)
				h.send(1, rec("t", 0, "1-1"), OK, 1)
				h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-2"), 0), at(rec("t", 0, "1-1"), 1))
			},
			verdict: results.Pass,
		},
	})
}
