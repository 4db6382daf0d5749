package verify

import (
	"testing"

	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func TestUnexpectedAck(t *testing.T) {
	r := rec("t", 0, "1-1")
	final := func(h *hb) { h.finalBoth("t", 0, 0, 1, at(r, 0)) }
	// below samples t-0's ISR at the leader alone, below min ISR 2; ackedBelow is such a sample,
	// then an acks=all send acknowledged (ops 0; 1, 2 in a fresh history).
	below := func(h *hb) int64 { return h.isr("t", 0, 2, 1) }
	ackedBelow := func(h *hb) {
		below(h)
		h.send(1, r, OK, 0)
	}
	runCases(t, []tcase{
		{
			name: "acks=all write acknowledged while the ISR is below min ISR",
			build: func(h *hb) {
				ackedBelow(h)
				h.wait(ISRCommitLag)
				below(h) // op 3
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
				ackedBelow(h)
				below(h) // op 3: too soon to tell
				h.wait(ISRCommitLag)
				below(h) // op 4
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
				below(h)
				inv := h.sendInvoke(1, r)
				h.isr("t", 0, 2, 1, 2)
				h.sendDone(1, inv, r, OK, 0, false)
				h.wait(ISRCommitLag)
				below(h)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			// The leader acknowledges against its maximal ISR, with the follower it asked the
			// controller to add; the metadata shows the expansion only later.
			name: "the metadata shows the ISR below min just after the ack, then its expansion",
			build: func(h *hb) {
				ackedBelow(h)
				h.wait(ISRCommitLag / 20)
				below(h)
				h.wait(ISRCommitLag / 20)
				h.isr("t", 0, 2, 1, 2)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "the last sample below min ISR comes too soon after the ack",
			build: func(h *hb) {
				ackedBelow(h)
				h.wait(ISRCommitLag / 2)
				below(h)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "no observation after the ack",
			build: func(h *hb) {
				ackedBelow(h)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "the ISR fell below min ISR only after the invoke",
			build: func(h *hb) {
				inv := h.sendInvoke(1, r)
				below(h)
				h.sendDone(1, inv, r, OK, 0, false)
				h.wait(ISRCommitLag)
				below(h)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "an acks=1 producer is acknowledged by the leader alone",
			cfg:  acks1,
			build: func(h *hb) {
				ackedBelow(h)
				h.wait(ISRCommitLag)
				below(h)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "rejected with NOT_ENOUGH_REPLICAS",
			build: func(h *hb) {
				below(h)
				h.send(1, r, Fail, 0)
				h.wait(ISRCommitLag)
				below(h)
				h.finalBoth("t", 0, 0, 0)
			},
			verdict: results.Pass,
		},
	})
}
