package verify

import (
	"testing"

	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func TestUnexpectedAck(t *testing.T) {
	r := rec("t", 0, "1-1")
	final := func(h *hb) { h.finalBoth("t", 0, 0, 1, at(r, 0)) }
	runCases(t, []tcase{
		{
			name: "acks=all write acknowledged while the ISR is below min ISR",
			build: func(h *hb) {
				h.isr("t", 0, 2, 1) // op 0
				h.send(1, r, OK, 0) // ops 1, 2
				h.wait(ISRCommitLag)
				h.isr("t", 0, 2, 1) // op 3
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.UnexpectedAck: {count: 1, ops: []int64{0, 1, 2, 3}}},
			verdict: results.Fail,
		},
		{
			name: "min ISR taken from the topic config when the event has none",
			build: func(h *hb) {
				h.add(isrOp("t", 0, nil, 1))
				h.send(1, r, OK, 0)
				h.wait(ISRCommitLag)
				h.add(isrOp("t", 0, nil, 1))
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.UnexpectedAck: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "samples still below min ISR just after the ack, and long after it",
			build: func(h *hb) {
				h.isr("t", 0, 2, 1) // op 0
				h.send(1, r, OK, 0) // ops 1, 2
				h.isr("t", 0, 2, 1) // op 3: too soon to tell
				h.wait(ISRCommitLag)
				h.isr("t", 0, 2, 1) // op 4
				h.isr("t", 0, 2, 1, 2)
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.UnexpectedAck: {count: 1, ops: []int64{0, 1, 2, 4}}},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "the ISR recovered between invoke and ack",
			build: func(h *hb) {
				h.isr("t", 0, 2, 1)
				inv := h.sendInvoke(1, r)
				h.isr("t", 0, 2, 1, 2)
				h.sendDone(1, inv, r, OK, 0, false)
				h.isr("t", 0, 2, 1)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			// The leader acknowledges against its maximal ISR, with the follower it asked the
			// controller to add; the metadata shows the expansion only later.
			name: "the metadata shows the ISR below min just after the ack, then its expansion",
			build: func(h *hb) {
				h.isr("t", 0, 2, 1)
				h.send(1, r, OK, 0)
				h.wait(ISRCommitLag / 20)
				h.isr("t", 0, 2, 1)
				h.wait(ISRCommitLag / 20)
				h.isr("t", 0, 2, 1, 2)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "the last sample below min ISR comes too soon after the ack",
			build: func(h *hb) {
				h.isr("t", 0, 2, 1)
				h.send(1, r, OK, 0)
				h.wait(ISRCommitLag / 2)
				h.isr("t", 0, 2, 1)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "no observation after the ack",
			build: func(h *hb) {
				h.isr("t", 0, 2, 1)
				h.send(1, r, OK, 0)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "the ISR fell below min ISR only after the invoke",
			build: func(h *hb) {
				inv := h.sendInvoke(1, r)
				h.isr("t", 0, 2, 1)
				h.sendDone(1, inv, r, OK, 0, false)
				h.isr("t", 0, 2, 1)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "an acks=1 producer is acknowledged by the leader alone",
			cfg:  acks1,
			build: func(h *hb) {
				h.isr("t", 0, 2, 1)
				h.send(1, r, OK, 0)
				h.isr("t", 0, 2, 1)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "rejected with NOT_ENOUGH_REPLICAS",
			build: func(h *hb) {
				h.isr("t", 0, 2, 1)
				h.send(1, r, Fail, 0)
				h.isr("t", 0, 2, 1)
				h.finalBoth("t", 0, 0, 0)
			},
			verdict: results.Pass,
		},
	})
}
