package verify

import (
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func TestHangingTransaction(t *testing.T) {
	a, b := rec("t", 0, "5-1"), rec("t", 0, "5-2")
	s := rec("t", 0, "stray-t-0")
	const strayAt1 = `{"records":[{"topic":"t","partition":0,"offset":1,"value":"stray-t-0"}]}`
	runCases(t, []tcase{
		{
			name: "the read_committed scan stops at the stray record",
			build: func(h *hb) {
				h.send(5, a, OK, 0)
				h.nemesis(history.FStrayTxnProduce, strayAt1) // ops 2, 3
				h.send(5, b, OK, 2)
				h.final("t", 0, RU, 0, 3, at(a, 0), at(s, 1), at(b, 2))
				h.final("t", 0, RC, 0, 1, at(a, 0)) // ops 8, 9
			},
			want:    map[guarantee.Anomaly]want{guarantee.HangingTransaction: {count: 1, ops: []int64{3, 9}}},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "a marker ended it: the read_committed scan went past it",
			build: func(h *hb) {
				h.send(5, a, OK, 0)
				h.nemesis(history.FStrayTxnProduce, strayAt1)
				h.send(5, b, OK, 3)
				h.final("t", 0, RU, 0, 4, at(a, 0), at(s, 1), at(b, 3))
				h.final("t", 0, RC, 0, 4, at(a, 0), at(b, 3))
			},
			verdict: results.Pass,
		},
		{
			name: "refused: the event did not complete ok",
			build: func(h *hb) {
				h.send(5, a, OK, 0)
				h.nemesisEvent(history.FStrayTxnProduce, `{"note":"refused"}`, history.Info)
				h.final("t", 0, RU, 0, 1, at(a, 0))
				h.final("t", 0, RC, 0, 1, at(a, 0))
			},
			verdict: results.Pass,
		},
	})
}
