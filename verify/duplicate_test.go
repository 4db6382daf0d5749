package verify

import (
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func TestDuplicate(t *testing.T) {
	runCases(t, []tcase{
		{
			name: "idempotent producer's record at two offsets",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0) // ops 0, 1
				h.poll(7, RC, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-1"), 1))
				h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-1"), 1))
			},
			want:    map[guarantee.Anomaly]want{guarantee.Duplicate: {count: 1, ops: []int64{1, 3}}},
			verdict: results.Fail,
		},
		{
			name: "non-idempotent producer with retries: permitted",
			cfg:  func() history.Config { return plainRetries(1) },
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 1)
				h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-1"), 1))
			},
			want:    map[guarantee.Anomaly]want{guarantee.Duplicate: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "non-idempotent producer without retries: forbidden",
			cfg: func() history.Config {
				return withProducer(strict(), kafkaconf.Delivery{Acks: ptr(kafkaconf.AcksAll), Idempotence: ptr(false), Retries: ptr(0), MaxInFlight: ptr(1)})
			},
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-1"), 1))
			},
			want:    map[guarantee.Anomaly]want{guarantee.Duplicate: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "application resend after an unknown outcome: permitted even when idempotent",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Info, 0)
				h.send(1, rec("t", 0, "1-1"), OK, 1)
				h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-1"), 1))
			},
			want:    map[guarantee.Anomaly]want{guarantee.Duplicate: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "a value in two partitions",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-1"), 0))
				h.finalBoth("t", 1, 0, 1, at(rec("t", 1, "1-1"), 0))
			},
			want:    map[guarantee.Anomaly]want{guarantee.Duplicate: {count: 1}},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "the same record read many times at one offset",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.poll(7, RC, at(rec("t", 0, "1-1"), 0))
				h.poll(8, RU, at(rec("t", 0, "1-1"), 0))
				h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-1"), 0))
			},
			verdict: results.Pass,
		},
		{
			name: "a transaction retried with the same values after an abort",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, Fail, rec("t", 0, "5-1"))
				h.txn(5, "tx", history.IntentCommit, OK, at(rec("t", 0, "5-1"), 2))
				h.final("t", 0, RU, 0, 4, at(rec("t", 0, "5-1"), 0), at(rec("t", 0, "5-1"), 2))
				h.final("t", 0, RC, 0, 4, at(rec("t", 0, "5-1"), 2))
			},
			want:    map[guarantee.Anomaly]want{guarantee.Duplicate: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
	})
}
