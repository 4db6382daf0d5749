package verify

import (
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func recs(rs ...history.Record) []history.Record { return rs }

func TestEOS(t *testing.T) {
	in1, in2, in3 := at(rec("in", 0, "1-1"), 0), at(rec("in", 0, "1-2"), 1), at(rec("in", 0, "1-3"), 2)
	out1, out2, out3 := rec("out", 0, "8-1"), rec("out", 0, "8-2"), rec("out", 0, "8-3")
	inputs := func(h *hb) {
		h.send(1, in1, OK, 0)
		h.send(1, in2, OK, 1)
		h.send(1, in3, OK, 2)
	}
	inFinal := func(h *hb) { h.finalBoth("in", 0, 0, 3, in1, in2, in3) }
	runCases(t, []tcase{
		{
			name: "an input processed by two committed transactions",
			build: func(h *hb) {
				inputs(h)
				i1, d1 := h.rpw(8, "proc", OK, recs(in1), recs(at(out1, 0)))
				i2, d2 := h.rpw(8, "proc", OK, recs(in1), recs(at(out2, 2)))
				h.rpw(8, "proc", OK, recs(in2, in3), recs(at(out3, 4)))
				inFinal(h)
				h.finalBoth("out", 0, 0, 6, at(out1, 0), at(out2, 2), at(out3, 4))
				_, _, _, _ = i1, d1, i2, d2
			},
			want: map[guarantee.Anomaly]want{
				guarantee.EOSDuplicate: {count: 1, ops: []int64{6, 7, 8, 9}},
				// The processor's consumer read offset 0 twice without a seek: also true.
				guarantee.NonmonotonicPoll: {count: 1},
			},
			verdict: results.Fail,
		},
		{
			name: "an unknown rpw whose output committed, processed again",
			build: func(h *hb) {
				inputs(h)
				h.rpw(8, "proc", Info, recs(in1), recs(out1))
				h.rpw(8, "proc", OK, recs(in1, in2, in3), recs(at(out2, 2), at(out3, 3)))
				inFinal(h)
				h.finalBoth("out", 0, 0, 5, at(out1, 0), at(out2, 2), at(out3, 3))
			},
			want:    map[guarantee.Anomaly]want{guarantee.EOSDuplicate: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "a committed input skipped",
			build: func(h *hb) {
				inputs(h)
				h.rpw(8, "proc", OK, recs(in1), recs(at(out1, 0)))
				h.rpw(8, "proc", OK, recs(in3), recs(at(out3, 2)))
				inFinal(h)
				h.finalBoth("out", 0, 0, 4, at(out1, 0), at(out3, 2))
			},
			want: map[guarantee.Anomaly]want{
				guarantee.EOSMissing: {count: 1},
				// Its consumer jumped over 1-2: also true.
				guarantee.PollSkip: {count: 1},
			},
			verdict: results.Fail,
		},
		{
			name: "a committed rpw's output missing",
			build: func(h *hb) {
				inputs(h)
				h.rpw(8, "proc", OK, recs(in1, in2, in3), recs(at(out1, 0)))
				inFinal(h)
				h.finalBoth("out", 0, 0, 2)
			},
			want: map[guarantee.Anomaly]want{
				guarantee.EOSMissing: {count: 1},
				guarantee.LostWrite:  {count: 1},
			},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "aborted, then processed again and committed",
			build: func(h *hb) {
				inputs(h)
				h.rpw(8, "proc", Fail, recs(in1), recs(out1))
				h.rpw(8, "proc", OK, recs(in1, in2, in3), recs(at(out2, 2), at(out3, 3)))
				inFinal(h)
				h.final("out", 0, RU, 0, 5, at(out1, 0), at(out2, 2), at(out3, 3))
				h.final("out", 0, RC, 0, 5, at(out2, 2), at(out3, 3))
			},
			verdict: results.Pass,
		},
		{
			name: "unknown rpw that did not commit, processed again",
			build: func(h *hb) {
				inputs(h)
				h.rpw(8, "proc", Info, recs(in1), recs(out1))
				h.rpw(8, "proc", OK, recs(in1, in2, in3), recs(at(out2, 2), at(out3, 3)))
				inFinal(h)
				h.final("out", 0, RU, 0, 5, at(out1, 0), at(out2, 2), at(out3, 3))
				h.final("out", 0, RC, 0, 5, at(out2, 2), at(out3, 3))
			},
			verdict: results.Pass,
		},
		{
			name: "inputs before the group's first committed position",
			build: func(h *hb) {
				inputs(h)
				h.rpw(8, "proc", OK, recs(in2, in3), recs(at(out2, 0)))
				inFinal(h)
				h.finalBoth("out", 0, 0, 2, at(out2, 0))
			},
			verdict: results.Pass,
		},
		{
			name: "an aborted input record is not processed",
			build: func(h *hb) {
				h.send(1, in1, OK, 0)
				h.txn(2, "feeder", history.IntentAbort, Fail, rec("in", 0, "2-1"))
				h.send(1, in3, OK, 2)
				h.rpw(8, "proc", OK, recs(in1), recs(at(out1, 0)))
				h.rpw(8, "proc", OK, recs(in3), recs(at(out3, 2)))
				h.final("in", 0, RU, 0, 3, in1, at(rec("in", 0, "2-1"), 1), in3)
				h.final("in", 0, RC, 0, 3, in1, in3)
				h.finalBoth("out", 0, 0, 4, at(out1, 0), at(out3, 2))
			},
			verdict: results.Pass,
		},
	})
}
