package verify

import (
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// three plain records at offsets 0..2, in the final log.
func threeRecords(h *hb) (a, b, c history.Record) {
	a, b, c = at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-2"), 1), at(rec("t", 0, "1-3"), 2)
	h.send(1, a, OK, 0)
	h.send(1, b, OK, 1)
	h.send(1, c, OK, 2)
	return a, b, c
}

func TestNonmonotonicPoll(t *testing.T) {
	var a, b, c history.Record
	runCases(t, []tcase{
		{
			name: "a consumer reads an offset again in its next poll",
			build: func(h *hb) {
				a, b, c = threeRecords(h)
				h.poll(7, RC, a, b) // ops 6, 7
				h.poll(7, RC, b, c) // ops 8, 9
				h.finalBoth("t", 0, 0, 3, a, b, c)
			},
			want:    map[guarantee.Anomaly]want{guarantee.NonmonotonicPoll: {count: 1, ops: []int64{7, 9}}},
			verdict: results.Fail,
		},
		{
			name: "a poll goes back within itself",
			build: func(h *hb) {
				a, b, c = threeRecords(h)
				h.poll(7, RU, a, c, b)
				h.finalBoth("t", 0, 0, 3, a, b, c)
			},
			want: map[guarantee.Anomaly]want{
				guarantee.NonmonotonicPoll: {count: 1},
				guarantee.PollSkip:         {count: 1},
			},
			verdict: results.Fail,
		},
		{
			name: "unclean election enabled: permitted",
			cfg:  unclean,
			build: func(h *hb) {
				a, b, c = threeRecords(h)
				h.poll(7, RC, a, b)
				h.poll(7, RC, a)
				h.finalBoth("t", 0, 0, 3, a, b, c)
			},
			want:    map[guarantee.Anomaly]want{guarantee.NonmonotonicPoll: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		// Near misses.
		{
			name: "an assign between the polls",
			build: func(h *hb) {
				a, b, c = threeRecords(h)
				h.poll(7, RC, a, b)
				h.op(7, history.FAssign)
				h.poll(7, RC, a, b, c)
				h.finalBoth("t", 0, 0, 3, a, b, c)
			},
			verdict: results.Pass,
		},
		{
			name: "a crash and restart from the committed offset",
			build: func(h *hb) {
				a, b, c = threeRecords(h)
				h.poll(7, RC, a, b)
				h.op(7, history.FCrash)
				h.poll(7, RC, b, c)
				h.finalBoth("t", 0, 0, 3, a, b, c)
			},
			verdict: results.Pass,
		},
		{
			name: "two consumers read the same records",
			build: func(h *hb) {
				a, b, c = threeRecords(h)
				h.poll(7, RC, a, b)
				h.poll(8, RC, a, b, c)
				h.finalBoth("t", 0, 0, 3, a, b, c)
			},
			verdict: results.Pass,
		},
	})
}

func TestPollSkip(t *testing.T) {
	var a, b, c history.Record
	runCases(t, []tcase{
		{
			name: "a consumer jumps over a record it should have read",
			build: func(h *hb) {
				a, b, c = threeRecords(h)
				h.poll(7, RC, a) // ops 6, 7
				h.poll(7, RC, c) // ops 8, 9
				h.finalBoth("t", 0, 0, 3, a, b, c)
			},
			want:    map[guarantee.Anomaly]want{guarantee.PollSkip: {count: 1, ops: []int64{7, 9}}},
			verdict: results.Fail,
		},
		{
			name: "read_uncommitted consumer skips an aborted record",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.txn(5, "tx", history.IntentAbort, Fail, rec("t", 0, "5-1"))
				h.send(1, rec("t", 0, "1-2"), OK, 3)
				h.poll(7, RU, at(rec("t", 0, "1-1"), 0))
				h.poll(7, RU, at(rec("t", 0, "1-2"), 3))
				h.final("t", 0, RU, 0, 4, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "5-1"), 1), at(rec("t", 0, "1-2"), 3))
				h.final("t", 0, RC, 0, 4, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-2"), 3))
			},
			want:    map[guarantee.Anomaly]want{guarantee.PollSkip: {count: 1}},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "offset gaps left by transaction markers",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(rec("t", 0, "5-1"), 0))
				h.txn(5, "tx", history.IntentCommit, OK, at(rec("t", 0, "5-2"), 2))
				h.txn(5, "tx", history.IntentCommit, OK, at(rec("t", 0, "5-3"), 4))
				h.poll(7, RC, at(rec("t", 0, "5-1"), 0), at(rec("t", 0, "5-2"), 2))
				h.poll(7, RC, at(rec("t", 0, "5-3"), 4))
				h.finalBoth("t", 0, 0, 6, at(rec("t", 0, "5-1"), 0), at(rec("t", 0, "5-2"), 2), at(rec("t", 0, "5-3"), 4))
			},
			verdict: results.Pass,
		},
		{
			name: "read_committed consumer passes over an aborted record",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.txn(5, "tx", history.IntentAbort, Fail, rec("t", 0, "5-1"))
				h.send(1, rec("t", 0, "1-2"), OK, 3)
				h.poll(7, RC, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-2"), 3))
				h.final("t", 0, RU, 0, 4, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "5-1"), 1), at(rec("t", 0, "1-2"), 3))
				h.final("t", 0, RC, 0, 4, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-2"), 3))
			},
			verdict: results.Pass,
		},
		{
			name: "a rebalance between the polls",
			build: func(h *hb) {
				a, b, c = threeRecords(h)
				h.poll(7, RC, a)
				h.op(7, "rebalance")
				h.poll(7, RC, c)
				h.finalBoth("t", 0, 0, 3, a, b, c)
			},
			verdict: results.Pass,
		},
		{
			name: "the gap's record is known from an ack only (it was lost, not skipped)",
			build: func(h *hb) {
				a, b, c = threeRecords(h)
				h.poll(7, RC, a)
				h.poll(7, RC, c)
				h.finalBoth("t", 0, 0, 3, a, c)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "a failed poll does not move the position",
			build: func(h *hb) {
				a, b, c = threeRecords(h)
				h.poll(7, RC, a)
				h.add(history.Op{Process: history.Client(7), Type: history.Invoke, F: history.FPoll, Value: history.Payload{Poll: &history.Poll{Isolation: RC}}})
				h.add(history.Op{Process: history.Client(7), Type: history.Info, F: history.FPoll, Value: history.Payload{Poll: &history.Poll{Isolation: RC, Records: recs(c)}}})
				h.poll(7, RC, b, c)
				h.finalBoth("t", 0, 0, 3, a, b, c)
			},
			verdict: results.Pass,
		},
	})
}

func TestPollUnowned(t *testing.T) {
	var a, b, c history.Record
	x := at(rec("t", 1, "2-1"), 0)
	records := func(h *hb) {
		a, b, c = threeRecords(h)
		h.send(2, x, OK, 0)
	}
	final := func(h *hb) {
		h.finalBoth("t", 0, 0, 3, a, b, c)
		h.finalBoth("t", 1, 0, 1, x)
	}
	runCases(t, []tcase{
		{
			name: "a poll returns a partition the last rebalance took away",
			build: func(h *hb) {
				records(h)
				h.op(7, history.FSubscribe)
				h.assigned(7, map[string][]int32{"t": {0, 1}})
				h.poll(7, RC, a)
				h.assigned(7, map[string][]int32{"t": {0}}) // ops 14, 15
				h.poll(7, RC, b, x, c)                      // ops 16, 17
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.PollUnowned: {count: 1, ops: []int64{15, 17}}},
			verdict: results.Fail,
		},
		{
			name: "every partition lost: a poll still returns records",
			build: func(h *hb) {
				records(h)
				h.assigned(7, map[string][]int32{"t": {0, 1}})
				h.assigned(7, map[string][]int32{}) // ops 10, 11
				h.poll(7, RC, a, b, x)              // ops 12, 13: one finding per partition
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.PollUnowned: {count: 2, ops: []int64{11, 13}}},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "the partition assigned again before the poll",
			build: func(h *hb) {
				records(h)
				h.assigned(7, map[string][]int32{"t": {0}})
				h.assigned(7, map[string][]int32{"t": {0, 1}})
				h.poll(7, RC, a, x)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "a new instance polls before its first assignment is recorded",
			build: func(h *hb) {
				records(h)
				h.assigned(7, map[string][]int32{"t": {0}})
				h.op(7, history.FCrash)
				h.op(7, history.FSubscribe)
				h.poll(7, RC, x)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "another process owns it",
			build: func(h *hb) {
				records(h)
				h.assigned(7, map[string][]int32{"t": {0}})
				h.assigned(8, map[string][]int32{"t": {1}})
				h.poll(8, RC, x)
				h.poll(7, RC, a)
				final(h)
			},
			verdict: results.Pass,
		},
	})
}
