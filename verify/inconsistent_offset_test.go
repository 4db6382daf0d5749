package verify

import (
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func TestInconsistentOffset(t *testing.T) {
	runCases(t, []tcase{
		{
			name: "two polls disagree on one offset",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Info, 0)
				h.send(2, rec("t", 0, "2-1"), Info, 0)
				h.poll(7, RC, at(rec("t", 0, "1-1"), 0)) // ops 4, 5
				h.poll(8, RC, at(rec("t", 0, "2-1"), 0)) // ops 6, 7
				h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "2-1"), 1))
			},
			want: map[guarantee.Anomaly]want{
				guarantee.InconsistentOffset: {count: 1, ops: []int64{5, 7}},
				guarantee.Duplicate:          {count: 1}, // 2-1 also appears at offset 1
			},
			verdict: results.Fail,
		},
		{
			name: "an ack and the final read disagree",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.send(2, rec("t", 0, "2-1"), OK, 1)
				h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "2-1"), 0), at(rec("t", 0, "1-1"), 1))
			},
			want: map[guarantee.Anomaly]want{
				guarantee.InconsistentOffset: {count: 2},
				guarantee.Duplicate:          {count: 2},
			},
			verdict: results.Fail,
		},
		{
			name: "acks=1 write truncated and its offset reused: permitted",
			cfg:  acks1,
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.send(1, rec("t", 0, "1-2"), OK, 0)
				h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-2"), 0))
			},
			want: map[guarantee.Anomaly]want{
				guarantee.InconsistentOffset: {count: 1, permitted: true},
				guarantee.LostWrite:          {count: 1, permitted: true},
			},
			verdict: results.Pass,
		},
		{
			name: "unclean election forced by the nemesis: permitted",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Info, 0)
				h.poll(7, RC, at(rec("t", 0, "1-1"), 0))
				h.nemesis("unclean-election", `{"nodes":[3]}`)
				h.send(1, rec("t", 0, "1-2"), Info, 0)
				h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-2"), 0))
			},
			want: map[guarantee.Anomaly]want{
				guarantee.InconsistentOffset: {count: 1, permitted: true},
				guarantee.LostObserved:       {count: 1, permitted: true},
			},
			verdict: results.Pass,
		},
		// Near misses.
		{
			name: "transaction markers leave offsets no read reports",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(rec("t", 0, "5-1"), 0))
				h.txn(5, "tx", history.IntentCommit, OK, at(rec("t", 0, "5-2"), 2))
				h.finalBoth("t", 0, 0, 4, at(rec("t", 0, "5-1"), 0), at(rec("t", 0, "5-2"), 2))
			},
			verdict: results.Pass,
		},
		{
			name: "read_committed and read_uncommitted agree on every offset they share",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentAbort, Fail, rec("t", 0, "5-1"))
				h.send(1, rec("t", 0, "1-1"), OK, 2)
				h.poll(7, RU, at(rec("t", 0, "5-1"), 0), at(rec("t", 0, "1-1"), 2))
				h.poll(8, RC, at(rec("t", 0, "1-1"), 2))
				h.final("t", 0, RU, 0, 3, at(rec("t", 0, "5-1"), 0), at(rec("t", 0, "1-1"), 2))
				h.final("t", 0, RC, 0, 3, at(rec("t", 0, "1-1"), 2))
			},
			want:    map[guarantee.Anomaly]want{guarantee.AbortedRead: {count: 1, permitted: true}}, // the RU poll
			verdict: results.Pass,
		},
	})
}
