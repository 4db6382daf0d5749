package verify

import (
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

const (
	OK   = history.OK
	Fail = history.Fail
	Info = history.Info
	RC   = history.ReadCommitted
	RU   = history.ReadUncommitted
)

func TestLostWrite(t *testing.T) {
	var inv, done, fin int64
	runCases(t, []tcase{
		{
			name: "acked write missing from the final read",
			build: func(h *hb) {
				inv, done = h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.send(1, rec("t", 0, "1-2"), OK, 1)
				h.final("t", 0, RC, 0, 2, at(rec("t", 0, "1-2"), 1))
				fin = h.final("t", 0, RU, 0, 2, at(rec("t", 0, "1-2"), 1))
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1, permitted: false, ops: []int64{0, 1}}},
			verdict: results.Fail,
		},
		{
			name: "acked write truncated: its offset is past the final end",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.send(1, rec("t", 0, "1-2"), OK, 1)
				h.final("t", 0, RU, 0, 1, at(rec("t", 0, "1-1"), 0))
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "acked write without an offset, absent from a complete final read",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, -5)
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "acks=1 loss is permitted",
			cfg:  acks1,
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "acks=0 loss is permitted",
			cfg: func() history.Config {
				return withProducer(strict(), kafkaconf.Delivery{Acks: ptr(kafkaconf.AcksNone)})
			},
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, -1)
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "unclean election enabled: loss permitted",
			cfg:  unclean,
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "min ISR 1 with a disk loss: permitted",
			cfg: func() history.Config {
				c := strict()
				c.Topic.MinInsyncReplicas = ptr(1)
				return c
			},
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.nemesis("disk-loss", `{"nodes":[1]}`)
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "min ISR 2 with one disk lost: forbidden",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.nemesis("wipe", `{"nodes":[1]}`)
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "each producer judged by its own acks",
			cfg: func() history.Config {
				c := strict()
				c.Processes = map[int]kafkaconf.ProducerConfig{2: {Delivery: kafkaconf.Delivery{Acks: ptr(kafkaconf.AcksLeader), Idempotence: ptr(false)}}}
				return c
			},
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.send(2, rec("t", 0, "2-1"), OK, 1)
				h.send(2, rec("t", 0, "2-2"), OK, 2)
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 3}},
			verdict: results.Fail,
		},
		{
			name: "acks=1 producer alone loses: the acks=all producer's write survived",
			cfg: func() history.Config {
				c := strict()
				c.Processes = map[int]kafkaconf.ProducerConfig{2: {Delivery: kafkaconf.Delivery{Acks: ptr(kafkaconf.AcksLeader), Idempotence: ptr(false)}}}
				return c
			},
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.send(2, rec("t", 0, "2-1"), OK, 1)
				h.final("t", 0, RU, 0, 1, at(rec("t", 0, "1-1"), 0))
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "committed transaction record hidden from read_committed",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentCommit, OK, at(rec("t", 0, "5-1"), 0))
				h.final("t", 0, RU, 0, 2, at(rec("t", 0, "5-1"), 0))
				h.final("t", 0, RC, 0, 2)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1}},
			verdict: results.Fail,
		},
		// Near misses.
		{
			name: "an unknown send never seen is not lost",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Info, 0)
				h.final("t", 0, RU, 0, 0)
			},
			verdict: results.Pass,
		},
		{
			name: "a failed send absent is not lost",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), Fail, 0)
				h.final("t", 0, RU, 0, 0)
			},
			verdict: results.Pass,
		},
		{
			name: "aborted transaction's record hidden from read_committed is not lost",
			build: func(h *hb) {
				h.txn(5, "tx", history.IntentAbort, Fail, rec("t", 0, "5-1"))
				h.final("t", 0, RU, 0, 2, at(rec("t", 0, "5-1"), 0))
				h.final("t", 0, RC, 0, 2)
			},
			verdict: results.Pass,
		},
		{
			name: "acked offset below the final read's start is not judged",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.send(1, rec("t", 0, "1-2"), OK, 1)
				h.final("t", 0, RU, 1, 2, at(rec("t", 0, "1-2"), 1))
			},
			verdict: results.Pass,
		},
		{
			name: "acked past the read_committed end (LSO) is not judged by it",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
				h.send(1, rec("t", 0, "1-2"), OK, 5)
				h.final("t", 0, RC, 0, 3, at(rec("t", 0, "1-1"), 0))
			},
			verdict: results.Pass,
		},
		{
			name: "acked write with no final read: unknown, not lost",
			build: func(h *hb) {
				h.send(1, rec("t", 0, "1-1"), OK, 0)
			},
			verdict: results.Unknown,
		},
	})
	_, _, _ = inv, done, fin
}
