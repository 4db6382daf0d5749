package verify

import (
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func TestLostObserved(t *testing.T) {
	runCases(t, []tcase{
		{
			name: "a record a consumer saw is gone from the final log",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Info, 0)
				h.poll(7, RC, at(rec("t", 0, "1-1"), 0)) // ops 2, 3
				h.final("t", 0, RU, 0, 1)                // ops 4, 5
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostObserved: {count: 1, ops: []int64{3, 5}}},
			verdict: results.Fail,
		},
		{
			name: "a record a consumer saw changed at its offset",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Info, 0)
				h.send(1, rec("t", 0, "1-2"), Info, 0)
				h.poll(7, RC, at(rec("t", 0, "1-1"), 0))
				h.final("t", 0, RU, 0, 1, at(rec("t", 0, "1-2"), 0))
			},
			want: map[guarantee.Anomaly]want{
				guarantee.LostObserved:       {count: 1},
				guarantee.InconsistentOffset: {count: 1},
			},
			verdict: results.Fail,
		},
		{
			name: "unclean election enabled: permitted",
			cfg:  unclean,
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Info, 0)
				h.poll(7, RC, at(rec("t", 0, "1-1"), 0))
				h.final("t", 0, RU, 0, 1)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostObserved: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "acks=1 writer and a disk loss: permitted",
			cfg:  acks1,
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Info, 0)
				h.poll(7, RC, at(rec("t", 0, "1-1"), 0))
				h.nemesis("disk-loss", `{"nodes":[2]}`)
				h.final("t", 0, RU, 0, 1)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostObserved: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "read_committed final read lacks a plain record a read_uncommitted consumer saw",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Info, 0)
				h.poll(7, RU, at(rec("t", 0, "1-1"), 0))
				h.final("t", 0, RC, 0, 1)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostObserved: {count: 1}},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "an aborted record a read_uncommitted consumer saw is absent from read_committed",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentAbort, Fail, rec("t", 0, "5-1"))
				h.poll(7, RU, at(rec("t", 0, "5-1"), 0))
				h.final("t", 0, RC, 0, 2)
			},
			// Not lost-observed; the read_uncommitted read is reported as a permitted aborted-read.
			want:    map[guarantee.Anomaly]want{guarantee.AbortedRead: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "the observed record is in the final log",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.poll(7, RC, at(rec("t", 0, "1-1"), 0))
				h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-1"), 0))
			},
			verdict: results.Pass,
		},
		{
			name: "observed past the read_committed end: not covered",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Info, 0)
				h.poll(7, RU, at(rec("t", 0, "1-1"), 4))
				h.final("t", 0, RC, 0, 3)
			},
			verdict: results.Pass,
		},
	})
}
