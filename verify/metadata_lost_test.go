package verify

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// leader writes an ISR observation of t-0 with its leader and leader epoch, as the nemesis's
// watcher records them.
func (h *hb) leader(leader, epoch int32) int64 {
	b, _ := json.Marshal(ISREvent{Topic: "t", Partition: 0, ISR: []int{1, 2, 3}, Replicas: []int{1, 2, 3},
		Leader: &leader, LeaderEpoch: &epoch})
	h.add(history.Op{Process: history.NemesisP(), Type: history.Invoke, F: "isr"})
	return h.add(history.Op{Process: history.NemesisP(), Type: history.OK, F: "isr", Value: history.Payload{Raw: b}})
}

// withControllers is strict() on a cluster whose KRaft voters are ids.
func withControllers(ids ...int) func() history.Config {
	return func() history.Config {
		c := strict()
		c.Controllers = ids
		return c
	}
}

func TestMetadataLost(t *testing.T) {
	r := rec("t", 0, "1-1")
	final := func(h *hb) { h.finalBoth("t", 0, 0, 1, at(r, 0)) }
	runCases(t, []tcase{
		{
			name: "one leader epoch names two leaders",
			cfg:  withControllers(1, 2, 3),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(1, 4) // op 3
				h.leader(2, 5) // op 5
				h.leader(3, 5) // op 7
				h.leader(3, 5) // the same evidence again: still one finding
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.MetadataLost: {count: 1, ops: []int64{5, 7}}},
			verdict: results.Fail,
		},
		{
			name: "the leader epoch goes back and stays back",
			cfg:  withControllers(1, 2, 3),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(1, 4) // op 3
				h.leader(2, 6) // op 5
				h.leader(1, 4) // op 7
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.MetadataLost: {count: 1, ops: []int64{5, 7}}},
			verdict: results.Fail,
		},
		{
			// The metadata's epoch went back whatever the leader: no broker answers an epoch
			// below the one its image holds, leader known or not.
			name: "no leader known at a lower epoch, and it stays back",
			cfg:  withControllers(1, 2, 3),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(1, 5)  // op 3
				h.leader(-1, 4) // op 5
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.MetadataLost: {count: 1, ops: []int64{3, 5}}},
			verdict: results.Fail,
		},
		{
			// A sample without a leader is not the epoch's first leader: the two after it are.
			name: "no leader known, then two leaders at that epoch",
			cfg:  withControllers(1, 2, 3),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(-1, 5) // op 3
				h.leader(2, 5)  // op 5
				h.leader(3, 5)  // op 7
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.MetadataLost: {count: 1, ops: []int64{5, 7}}},
			verdict: results.Fail,
		},
		{
			name: "power loss on one of three controllers: still forbidden",
			cfg:  withControllers(101, 102, 103),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(1, 6)
				h.nemesis("power-loss", `{"nodes":[101]}`)
				h.leader(1, 3)
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.MetadataLost: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "power loss on every controller: no document covers it",
			cfg:  withControllers(101, 102, 103),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(1, 6)
				h.nemesis("power-loss", `{"nodes":[101,102,103]}`)
				h.leader(1, 3)
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.MetadataLost: {count: 1, permitted: true}},
			verdict: results.Unknown,
		},
		{
			name: "power loss on every broker but no controller: forbidden",
			cfg:  withControllers(101, 102, 103),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(1, 6)
				h.nemesis("power-loss", `{"nodes":[1,2,3]}`)
				h.leader(1, 3)
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.MetadataLost: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "disk loss on two of three controllers: beyond any guarantee",
			cfg:  withControllers(1, 2, 3),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(1, 6)
				h.nemesis("disk-loss", `{"nodes":[2,3]}`)
				h.leader(2, 6)
				final(h)
			},
			want:    map[guarantee.Anomaly]want{guarantee.MetadataLost: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		// Near misses.
		{
			name: "epochs rise, the same leader re-elected",
			cfg:  withControllers(1, 2, 3),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(1, 4)
				h.leader(2, 5)
				h.leader(2, 5)
				h.leader(2, 6)
				h.leader(-1, 7)
				h.leader(1, 8)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			// LEADER_NOT_AVAILABLE answers leader -1 with the current epoch.
			name: "no leader known at the same epoch, then a new leader at a higher one",
			cfg:  withControllers(1, 2, 3),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(1, 5)
				h.leader(-1, 5)
				h.leader(2, 6)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "no leader known at the same epoch, to the end",
			cfg:  withControllers(1, 2, 3),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(1, 5)
				h.leader(-1, 5)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "no leader known at a lower epoch from a broker that trails, then the current epoch",
			cfg:  withControllers(1, 2, 3),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(1, 5)
				h.leader(-1, 4)
				h.leader(1, 5)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			// No answer carried an epoch: nothing is known of it.
			name: "no leader and no epoch known",
			cfg:  withControllers(1, 2, 3),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(1, 5)
				h.leader(-1, -1)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "one sample from a broker that trails, then the current epoch again",
			cfg:  withControllers(1, 2, 3),
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.leader(1, 4)
				h.leader(2, 5)
				h.leader(1, 4)
				h.leader(2, 5)
				final(h)
			},
			verdict: results.Pass,
		},
		{
			name: "observations without a leader epoch are not checked",
			build: func(h *hb) {
				h.send(1, r, OK, 0)
				h.replicas("t", 0, 1, 2, 3)
				final(h)
			},
			verdict: results.Pass,
		},
	})
}

func TestMetadataLostNotes(t *testing.T) {
	h := newHB()
	r := rec("t", 0, "1-1")
	h.send(1, r, OK, 0)
	h.leader(1, 6)
	h.leader(3, 6)
	h.leader(2, 9)
	h.leader(1, 7)
	h.finalBoth("t", 0, 0, 1, at(r, 0))
	res := h.check(withControllers(1, 2, 3)())
	a := res.Anomalies[guarantee.MetadataLost]
	require.Equal(t, 2, a.Count)
	notes := exampleNotes(a)
	require.Contains(t, notes, "t-0 leader epoch 6 named leader 1 (op 3) and leader 3 (op 5)")
	require.Contains(t, notes, "t-0 was observed at leader epoch 9 (op 7), then at 7 (op 9)")
	require.True(t, strings.Contains(a.Why, "never goes back"), a.Why)

	none := newHB()
	none.send(1, r, OK, 0)
	none.finalBoth("t", 0, 0, 1, at(r, 0))
	require.Equal(t, "no isr observations with a leader epoch in the history",
		none.check(strict()).Anomalies[guarantee.MetadataLost].Unchecked)
}
