package verify

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// sharePoll writes a share-poll of process p that acquired the records at offsets offs of q-0,
// each with the delivery count in counts; it returns the ok's index.
func (h *hb) sharePoll(p int, offs []int64, counts []int32) int64 {
	h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FSharePoll, Value: history.Payload{Raw: []byte(`{"group":"g"}`)}})
	sp := history.SharePoll{Group: "g"}
	for i, o := range offs {
		sp.Records = append(sp.Records, history.SharedRecord(at(rec("q", 0, "1-"+itoa(o)), o), counts[i]))
	}
	return h.add(history.Op{Process: history.Client(p), Type: history.OK, F: history.FSharePoll, Value: history.Payload{Raw: []byte(mustJSON(sp))}})
}

// shareAck writes a share-ack of process p acknowledging offs of q-0 with typ, completing t.
func (h *hb) shareAck(p int, typ history.AckType, t history.Type, offs ...int64) int64 {
	a := history.ShareAck{Group: "g", Topic: "q", Partition: 0}
	for _, o := range offs {
		a.Acks = append(a.Acks, history.ShareAckEntry{Offset: o, Type: typ})
	}
	v := history.Payload{Raw: []byte(mustJSON(a))}
	h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FShareAck, Value: v})
	op := history.Op{Process: history.Client(p), Type: t, F: history.FShareAck, Value: v}
	if t != history.OK {
		op.Error = "kafka: request timed out"
	}
	return h.add(op)
}

// blindPoll writes a share-poll of process p whose outcome is unknown: the member stopped while
// it polled.
func (h *hb) blindPoll(p int) int64 {
	v := history.Payload{Raw: []byte(`{"group":"g"}`)}
	h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FSharePoll, Value: v})
	return h.add(history.Op{Process: history.Client(p), Type: history.Info, F: history.FSharePoll, Value: v, Error: "the member stopped while it polled"})
}

// acceptFirstReleaseSecond has process 2 poll q-0's offsets 0 and 1 (count 1), accept 0 and
// release 1, each commit ok.
func acceptFirstReleaseSecond(h *hb) {
	h.sharePoll(2, []int64{0, 1}, []int32{1, 1})
	h.shareAck(2, history.AckAccept, OK, 0)
	h.shareAck(2, history.AckRelease, OK, 1)
}

// shareStart writes the start offset of q-0 observed after the drain.
func (h *hb) shareStart(start int64) int64 {
	st := history.ShareState{Group: "g", Topic: "q", Partition: 0}
	h.add(history.Op{Process: history.Client(97), Type: history.Invoke, F: history.FShareState, Value: history.Payload{Raw: []byte(mustJSON(st))}})
	st.StartOffset = &start
	return h.add(history.Op{Process: history.Client(97), Type: history.OK, F: history.FShareState, Value: history.Payload{Raw: []byte(mustJSON(st))}})
}

func itoa(o int64) string { return strconv.FormatInt(o, 10) }

// shared is a strict config whose share group g reads q with a 30 s lock and a limit of limit.
func shared(limit int32) func() history.Config {
	return func() history.Config {
		c := strict()
		c.Share = &history.ShareConfig{Group: "g", Topics: []string{"q"}, LockMS: 30_000, DeliveryLimit: limit}
		return c
	}
}

// qRecords writes n records to q-0 and their final reads; it returns the read_uncommitted
// final read's index.
func qRecords(h *hb, n int64) int64 {
	var recs []history.Record
	for o := range n {
		r := rec("q", 0, "1-"+itoa(o))
		h.send(1, r, OK, o)
		recs = append(recs, at(r, o))
	}
	ru := h.final("q", 0, history.ReadUncommitted, 0, n, recs...)
	h.final("q", 0, history.ReadCommitted, 0, n, recs...)
	return ru
}

// ones is n delivery counts of 1.
func ones(n int) []int32 {
	c := make([]int32, n)
	for i := range c {
		c[i] = 1
	}
	return c
}

func TestShareGroups(t *testing.T) {
	accept := history.AckAccept
	release := history.AckRelease
	runCases(t, []tcase{
		{
			name: "every record accepted once: nothing to flag",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0, 1, 2}, ones(3))
				h.shareAck(2, accept, OK, 0, 1, 2)
				qRecords(h, 3)
				h.shareStart(3)
			},
			verdict: results.Pass,
		},
		{
			name: "share-lost: the start offset moved past a record nobody finished",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0, 2}, ones(2))
				h.shareAck(2, accept, OK, 0, 2)
				qRecords(h, 3)  // final reads: ops 10-13, read_uncommitted's ok is 11
				h.shareStart(3) // ok: op 15
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareLost: {count: 1, ops: []int64{11, 15}}},
			verdict: results.Fail,
		},
		{
			name: "near miss: a record delivered up to the limit and released is archived, not lost",
			cfg:  shared(2),
			build: func(h *hb) {
				acceptFirstReleaseSecond(h)
				h.sharePoll(2, []int64{1}, []int32{2})
				h.shareAck(2, release, OK, 1)
				qRecords(h, 2)
				h.shareStart(2)
			},
			verdict: results.Pass,
		},
		{
			name: "near miss: a poll of unknown outcome after the last release may have taken the record to the limit",
			cfg:  shared(3),
			build: func(h *hb) {
				acceptFirstReleaseSecond(h)
				h.sharePoll(2, []int64{1}, []int32{2})
				h.shareAck(2, release, OK, 1)
				h.blindPoll(2)
				qRecords(h, 2)
				h.shareStart(2)
			},
			verdict: results.Pass,
		},
		{
			name: "share-lost: the poll of unknown outcome came before the record's last delivery",
			cfg:  shared(3),
			build: func(h *hb) {
				acceptFirstReleaseSecond(h)
				h.blindPoll(3)
				h.sharePoll(2, []int64{1}, []int32{2}) // ok: op 9
				h.shareAck(2, release, OK, 1)
				qRecords(h, 2)  // read_uncommitted's ok: op 17
				h.shareStart(2) // ok: op 21
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareLost: {count: 1, ops: []int64{17, 21, 9}}},
			verdict: results.Fail,
		},
		{
			name: "share-lost: one poll of unknown outcome cannot take a record two deliveries short to the limit",
			cfg:  shared(3),
			build: func(h *hb) {
				acceptFirstReleaseSecond(h) // the poll's ok: op 1
				h.blindPoll(2)
				qRecords(h, 2)  // read_uncommitted's ok: op 13
				h.shareStart(2) // ok: op 17
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareLost: {count: 1, ops: []int64{13, 17, 1}}},
			verdict: results.Fail,
		},
		{
			name: "near miss: an accept whose commit's outcome is unknown may have finished the record",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0, 1}, ones(2))
				h.shareAck(2, accept, Info, 0, 1)
				qRecords(h, 2)
				h.shareStart(2)
			},
			verdict: results.Pass,
		},
		{
			name: "a record at the start offset the drain never finished is unknown, not lost",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, ones(1))
				h.shareAck(2, accept, OK, 0)
				qRecords(h, 2)
				h.shareStart(1)
			},
			verdict: results.Unknown,
		},
		{
			name: "share-redelivered: delivered again after its accept was acknowledged",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, ones(1))
				h.shareAck(2, accept, OK, 0) // ok: op 3
				h.wait(40 * time.Second)
				h.sharePoll(3, []int64{0}, []int32{2}) // ok: op 5
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareRedelivered: {count: 1, ops: []int64{3, 5}}},
			verdict: results.Fail,
		},
		{
			name: "share-redelivered after a power loss is permitted",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, ones(1))
				h.shareAck(2, accept, OK, 0)
				h.nemesisEvent("power-loss", `{"nodes":[1,2,3]}`, OK)
				h.nemesisEvent("start", `{"nodes":[1,2,3],"fault":"power-loss"}`, OK)
				h.wait(40 * time.Second)
				h.sharePoll(3, []int64{0}, []int32{2})
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareRedelivered: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			// acks=all with min ISR 2 leaves the acknowledgement on another replica's page cache.
			name: "share-redelivered after one broker's power loss is forbidden",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, ones(1))
				h.shareAck(2, accept, OK, 0)
				h.nemesisEvent("power-loss", `{"nodes":[2]}`, OK)
				h.nemesisEvent("start", `{"nodes":[2],"fault":"power-loss"}`, OK)
				h.wait(40 * time.Second)
				h.sharePoll(3, []int64{0}, []int32{2})
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareRedelivered: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "near miss: delivered again after an accept whose outcome is unknown",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, ones(1))
				h.shareAck(2, accept, Info, 0)
				h.wait(40 * time.Second)
				h.sharePoll(3, []int64{0}, []int32{2})
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			verdict: results.Pass,
		},
		{
			name: "share-double-acquire: acquired again 1 s into a 30 s lock",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, ones(1)) // ok: op 1
				h.wait(time.Second)
				h.sharePoll(3, []int64{0}, []int32{2}) // ok: op 3
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareDoubleAcquire: {count: 1, ops: []int64{1, 3}}},
			verdict: results.Fail,
		},
		{
			name: "near miss: acquired again once the lock expired",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, ones(1))
				h.wait(30 * time.Second)
				h.sharePoll(3, []int64{0}, []int32{2})
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			verdict: results.Pass,
		},
		{
			// Found by the histmodel properties: the lock was judged from the poll alone, so a
			// second acquisition past the first lock but within its renewal went unflagged.
			name: "share-double-acquire: acquired again within a renewed lock, past the first",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, ones(1)) // ok: op 1
				h.wait(20 * time.Second)
				h.shareAck(2, history.AckRenew, OK, 0) // ok: op 3
				h.wait(20 * time.Second)
				h.sharePoll(3, []int64{0}, []int32{2}) // ok: op 5
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareDoubleAcquire: {count: 1, ops: []int64{1, 3, 5}}},
			verdict: results.Fail,
		},
		{
			name: "near miss: acquired again past the lock, its renew failed",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, ones(1))
				h.wait(20 * time.Second)
				h.shareAck(2, history.AckRenew, Fail, 0)
				h.wait(20 * time.Second)
				h.sharePoll(3, []int64{0}, []int32{2})
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			verdict: results.Pass,
		},
		{
			name: "near miss: acquired again after its holder crashed",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, ones(1))
				h.op(2, history.FCrash)
				h.sharePoll(3, []int64{0}, []int32{2})
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			verdict: results.Pass,
		},
		{
			name: "near miss: acquired again after its holder released it",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, ones(1))
				h.shareAck(2, release, OK, 0)
				h.sharePoll(3, []int64{0}, []int32{2})
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			verdict: results.Pass,
		},
		{
			name: "share-double-acquire across a kill of the leader is permitted",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, ones(1))
				h.nemesisEvent("kill", `{"nodes":[1]}`, OK)
				h.sharePoll(3, []int64{0}, []int32{2})
				h.nemesisEvent("start", `{"nodes":[1]}`, OK)
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareDoubleAcquire: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "share-over-delivered: a delivery count past the limit",
			cfg:  shared(3),
			build: func(h *hb) {
				for n := int32(1); n <= 4; n++ {
					h.sharePoll(2, []int64{0}, []int32{n})
					h.shareAck(2, release, OK, 0)
				}
				qRecords(h, 1)
				h.shareStart(1)
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareOverDelivered: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "near miss: delivered exactly the limit's times",
			cfg:  shared(3),
			build: func(h *hb) {
				for n := int32(1); n <= 3; n++ {
					h.sharePoll(2, []int64{0}, []int32{n})
					h.shareAck(2, release, OK, 0)
				}
				qRecords(h, 1)
				h.shareStart(1)
			},
			verdict: results.Pass,
		},
		{
			name: "share-count-regressed: a later delivery with the same count",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, []int32{1})
				h.shareAck(2, release, OK, 0)
				h.sharePoll(2, []int64{0}, []int32{2}) // ok: op 5
				h.shareAck(2, release, OK, 0)
				h.sharePoll(3, []int64{0}, []int32{2}) // ok: op 9
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareCountRegressed: {count: 1, ops: []int64{5, 9}}},
			verdict: results.Fail,
		},
		{
			// The second acquisition was never persisted: the new leader counts from the
			// release's count (1), so the next delivery is 2 again; the lock was lost with the
			// leader too.
			name: "share-count-regressed across a leader change, of an acquisition never persisted, is permitted",
			cfg:  shared(5),
			build: func(h *hb) {
				h.leaderAt("q", 0, 1, 5)
				h.sharePoll(2, []int64{0}, []int32{1})
				h.shareAck(2, release, OK, 0)
				h.sharePoll(2, []int64{0}, []int32{2})
				h.leaderAt("q", 0, 2, 6)
				h.sharePoll(3, []int64{0}, []int32{2})
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			want: map[guarantee.Anomaly]want{guarantee.ShareCountRegressed: {count: 1, permitted: true},
				guarantee.ShareDoubleAcquire: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "share-count-regressed below a persisted count is forbidden across a leader change too",
			cfg:  shared(5),
			build: func(h *hb) {
				h.leaderAt("q", 0, 1, 5)
				h.sharePoll(2, []int64{0}, []int32{1})
				h.shareAck(2, release, OK, 0)
				h.sharePoll(2, []int64{0}, []int32{2})
				h.shareAck(2, release, OK, 0)
				h.leaderAt("q", 0, 2, 6)
				h.sharePoll(3, []int64{0}, []int32{2})
				h.shareAck(3, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareCountRegressed: {count: 1}},
			verdict: results.Fail,
		},
		{
			// KIP-932 lets the count of an acquisition go only with its share-partition
			// leader: a fault elsewhere (the share coordinator's node) that leaves the leader
			// and its epoch as they were does not permit it. The holder crashed in between,
			// in a run with faults: the known issue share-count-forgotten.
			name: "share-count-regressed across a fault that left the leader alone is forbidden: a known issue",
			cfg:  shared(5),
			build: func(h *hb) {
				h.leaderAt("q", 0, 1, 5)
				repeatAfterCrash(h, killed(3)) // the polls' oks: ops 2 and 8
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareCountRegressed: {count: 1, ops: []int64{2, 8}, known: guarantee.ShareCountForgotten}},
			verdict: results.Fail,
		},
		{
			name: "near miss: share-count-regressed across a kill of the leader's node, its epoch not seen to change, is permitted",
			cfg:  shared(5),
			build: func(h *hb) {
				h.leaderAt("q", 0, 1, 5)
				repeatAfterCrash(h, killed(1))
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareCountRegressed: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			// The watch saw the new epoch only after the later delivery, within the grace it
			// may take to see one.
			name: "near miss: share-count-regressed with a leader change the watch saw just after it is permitted",
			cfg:  shared(5),
			build: func(h *hb) {
				h.leaderAt("q", 0, 1, 5)
				repeatAfterCrash(h, func(h *hb) func() {
					return func() { h.wait(2 * time.Second); h.leaderAt("q", 0, 2, 6) }
				})
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareCountRegressed: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			// Without any fault a forgotten count is no known issue: something new.
			name: "share-count-regressed after the holder crashed, no fault in the run: forbidden, no known issue",
			cfg:  shared(5),
			build: func(h *hb) {
				h.leaderAt("q", 0, 1, 5)
				repeatAfterCrash(h, nil)
			},
			want:    map[guarantee.Anomaly]want{guarantee.ShareCountRegressed: {count: 1}},
			verdict: results.Fail,
		},
		{
			// A history whose watch never showed the partition cannot tell the leader from
			// the other nodes: any fault in between permits the repeat.
			name:    "near miss: share-count-regressed across a fault, the leader never observed, is permitted",
			cfg:     shared(5),
			build:   func(h *hb) { repeatAfterCrash(h, killed(3)) },
			want:    map[guarantee.Anomaly]want{guarantee.ShareCountRegressed: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "share-over-delivered: more deliveries than the limit across a leader change is permitted",
			cfg:  shared(2),
			build: func(h *hb) {
				h.leaderAt("q", 0, 1, 5)
				h.sharePoll(2, []int64{0}, []int32{1})
				h.leaderAt("q", 0, 2, 6)
				h.sharePoll(3, []int64{0}, []int32{1})
				h.shareAck(3, release, OK, 0)
				h.sharePoll(3, []int64{0}, []int32{2})
				h.shareAck(3, release, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			want: map[guarantee.Anomaly]want{guarantee.ShareOverDelivered: {count: 1, permitted: true},
				guarantee.ShareCountRegressed: {count: 1, permitted: true}, guarantee.ShareDoubleAcquire: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "near miss: counts that rise",
			cfg:  shared(5),
			build: func(h *hb) {
				for n := int32(1); n <= 3; n++ {
					h.sharePoll(n2p(n), []int64{0}, []int32{n})
					h.shareAck(n2p(n), release, OK, 0)
				}
				h.sharePoll(2, []int64{0}, []int32{4})
				h.shareAck(2, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			verdict: results.Pass,
		},
		{
			// Found by the histmodel properties: the final read of a share topic nobody wrote
			// showed no record, and was taken for no final read at all.
			name: "an empty share topic read in full: nothing to flag, nothing unknown",
			cfg:  shared(5),
			build: func(h *hb) {
				h.sharePoll(2, nil, nil)
				h.final("q", 0, history.ReadUncommitted, 0, 0)
				h.final("q", 0, history.ReadCommitted, 0, 0)
				h.shareStart(0)
			},
			verdict: results.Pass,
		},
		{
			name: "share ops with no share group in the header are unknown",
			build: func(h *hb) {
				h.sharePoll(2, []int64{0}, ones(1))
				h.shareAck(2, accept, OK, 0)
				qRecords(h, 1)
				h.shareStart(1)
			},
			verdict: results.Unknown,
		},
	})
}

func n2p(n int32) int { return 2 + int(n)%2 }

// repeatAfterCrash has process 2 acquire q-0's offset 0 at count 1 and crash holding it, and
// process 3 acquire it at count 1 again and accept it; around, when not nil, runs before the
// crash and returns what runs after the second poll.
func repeatAfterCrash(h *hb, around func(h *hb) func()) {
	h.sharePoll(2, []int64{0}, []int32{1})
	after := func() {}
	if around != nil {
		after = around(h)
	}
	h.op(2, history.FCrash)
	h.sharePoll(3, []int64{0}, []int32{1})
	after()
	h.shareAck(3, history.AckAccept, OK, 0)
	qRecords(h, 1)
	h.shareStart(1)
}

// killed kills node n until after the second poll.
func killed(n int) func(h *hb) func() {
	return func(h *hb) func() {
		h.nemesis("kill", fmt.Sprintf(`{"nodes":[%d]}`, n))
		return func() { h.nemesis("start", fmt.Sprintf(`{"nodes":[%d],"fault":"kill"}`, n)) }
	}
}

// leaderAt writes an ISR observation of topic-part led by leader at epoch.
func (h *hb) leaderAt(topic string, part int32, leader, epoch int32) int64 {
	minISR := 2
	b := mustJSON(ISREvent{Topic: topic, Partition: part, ISR: []int{1, 2, 3}, MinISR: &minISR, Leader: &leader, LeaderEpoch: &epoch})
	return h.add(history.Op{Process: history.NemesisP(), Type: history.Info, F: "isr", Value: history.Payload{Raw: []byte(b)}})
}

// Every share finding says what its ops show, and names the run's limit and lock.
func TestShareFindingsSayWhatTheyShow(t *testing.T) {
	h := newHB()
	h.sharePoll(2, []int64{0}, ones(1))
	h.wait(time.Second)
	h.sharePoll(3, []int64{0}, []int32{2})
	h.shareAck(3, accept(), OK, 0)
	qRecords(h, 2)
	h.shareStart(2)
	r := h.check(shared(5)())
	da := r.Anomalies[guarantee.ShareDoubleAcquire]
	if da.Count != 1 || !strings.Contains(da.Examples[0].Note, "within the lock duration of 30000 ms") {
		t.Fatalf("double acquire: %+v", da)
	}
	lost := r.Anomalies[guarantee.ShareLost]
	if lost.Count != 1 || !strings.Contains(lost.Examples[0].Note, "below the share partition start offset 2") ||
		!strings.Contains(lost.Examples[0].Note, "no member was ever delivered it") {
		t.Fatalf("lost: %+v", lost)
	}
}

func accept() history.AckType { return history.AckAccept }

// The stats count every delivery again by what ended the previous hold.
func TestShareStatsCountRedeliveriesByCause(t *testing.T) {
	h := newHB()
	h.sharePoll(2, []int64{0, 1, 2, 3}, ones(4))
	h.shareAck(2, history.AckRelease, OK, 0)
	h.shareAck(2, history.AckAccept, Info, 1)
	h.shareAck(2, history.AckAccept, OK, 2)
	h.sharePoll(3, []int64{0, 1}, []int32{2, 2}) // after a release; after an unknown accept
	h.shareAck(3, history.AckAccept, OK, 0, 1)
	h.wait(31 * time.Second)
	h.sharePoll(3, []int64{3}, []int32{2}) // offset 3's lock expired
	h.shareAck(3, history.AckReject, OK, 3)
	qRecords(h, 4)
	h.shareStart(4)
	r := h.check(shared(5)())
	st := r.Stats.Share
	if st == nil {
		t.Fatal("no share stats")
	}
	want := map[results.ShareCause]int64{results.ShareAfterRelease: 1, results.ShareAfterUnknownAck: 1, results.ShareAfterLockExpired: 1}
	if !maps.Equal(st.Redeliveries, want) || st.Records != 4 || st.Deliveries != 7 || st.ByCount["2"] != 3 {
		t.Fatalf("share stats %+v, want redeliveries %v over 4 records, 7 deliveries, 3 with count 2", st, want)
	}
	if st.Acks["accept"] != (results.Outcomes{OK: 3, Info: 1}) || st.Acks["reject"].OK != 1 {
		t.Fatalf("acks %+v", st.Acks)
	}
}
