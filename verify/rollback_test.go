package verify

import (
	"testing"

	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// A log that rolls back past a record a consumer saw, and the producer writing that record again
// after it (a power cut on every replica while the send was in flight): the consumer's copy was
// lost with the log, and the final log holds the record once, in send order.
func TestRollbackAndRewrite(t *testing.T) {
	first, later := rec("t", 0, "1-1"), rec("t", 0, "1-2")
	other := rec("t", 0, "2-1")
	rewritten := func(powerCut bool) func(h *hb) {
		return func(h *hb) {
			h.replicas("t", 0, 1, 2, 3)
			inv := h.sendInvoke(1, first) // op 1
			h.poll(7, RC, at(first, 5))   // op 2: the copy the rollback loses
			if powerCut {
				h.nemesisEvent("power-loss", `{"nodes":[1,2,3]}`, OK)
			}
			h.sendDone(1, inv, first, OK, 0, true) // written again after the rollback
			h.send(1, later, OK, 1)
			h.send(2, other, OK, 5)
			h.finalBoth("t", 0, 0, 6, at(first, 0), at(later, 1), at(other, 5))
		}
	}
	runCases(t, []tcase{
		{
			name:  "power cut on every replica: the rewrite is a permitted duplicate, not a reordering",
			build: rewritten(true),
			want: map[guarantee.Anomaly]want{
				guarantee.Duplicate:          {count: 1, permitted: true},
				guarantee.InconsistentOffset: {count: 1, permitted: true},
			},
			verdict: results.Pass,
		},
		{
			// The same history without a fault that lets the log roll back: the record a
			// consumer saw changed at its offset, and it stands at two offsets.
			name:  "no fault: forbidden",
			build: rewritten(false),
			want: map[guarantee.Anomaly]want{
				guarantee.Duplicate:          {count: 1},
				guarantee.InconsistentOffset: {count: 1},
			},
			verdict: results.Fail,
		},
		{
			// A near miss for the reordering rule: a record sent earlier that the final log
			// really holds after a later one is still flagged.
			name: "a real reordering among the records the final log holds",
			build: func(h *hb) {
				h.replicas("t", 0, 1, 2, 3)
				asyncPair(h, first, later, 1, 0)
				h.finalBoth("t", 0, 0, 2, at(later, 0), at(first, 1))
			},
			want:    map[guarantee.Anomaly]want{guarantee.Reorder: {count: 1}},
			verdict: results.Fail,
		},
	})
}
