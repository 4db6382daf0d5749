package histmodel

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// Minimal histories the property tests found the checker citing the wrong evidence for: a
// final read split in ranges (the evidence named the first range, not the one covering the
// offset) and a poll-skip whose skipped record only a final read showed.

// ops builds a hand-made history: each call appends one op and returns its index.
type ops []history.Op

func (o *ops) add(p history.Process, t history.Type, f string, v history.Payload) int64 {
	i := int64(len(*o))
	*o = append(*o, history.Op{Index: i, Time: (i + 1) * 1_000_000, Process: p, Type: t, F: f, Value: v})
	return i
}

// send writes an ok send of value to t-0 acknowledged at off; it returns the ack's index.
func (o *ops) send(p int, value string, off int64) int64 {
	r := history.Record{Topic: "t", Value: value}
	o.add(history.Client(p), history.Invoke, history.FSend, history.Payload{Send: &r})
	acked := r.At(off)
	return o.add(history.Client(p), history.OK, history.FSend, history.Payload{Send: &acked})
}

// final writes a final read of t-0 over [from, end) showing recs (value at offset, in pairs).
func (o *ops) final(iso string, from, end int64, recs ...history.Record) int64 {
	o.add(history.Client(procFinal), history.Invoke, history.FFinalRead,
		history.Payload{FinalRead: &history.FinalRead{Topic: "t", Isolation: iso, From: from, End: from}})
	return o.add(history.Client(procFinal), history.OK, history.FFinalRead,
		history.Payload{FinalRead: &history.FinalRead{Topic: "t", Isolation: iso, From: from, End: end, Records: recs}})
}

func (o *ops) poll(p int, recs ...history.Record) int64 {
	o.add(history.Client(p), history.Invoke, history.FPoll, history.Payload{Poll: &history.Poll{Isolation: history.ReadCommitted}})
	return o.add(history.Client(p), history.OK, history.FPoll, history.Payload{Poll: &history.Poll{Isolation: history.ReadCommitted, Records: recs}})
}

func rec(value string, off int64) history.Record {
	return history.Record{Topic: "t", Value: value}.At(off)
}

// strictConfig is the model's header without its optional parts.
func strictConfig() history.Config {
	all := kafkaconf.AcksAll
	return history.Config{
		Producer: &kafkaconf.ProducerConfig{Delivery: kafkaconf.Delivery{Acks: &all, Idempotence: new(true), MaxInFlight: new(5), Retries: new(10)}},
		Topic:    &kafkaconf.TopicConfig{ReplicationFactor: new(3), MinInsyncReplicas: new(2), UncleanLeaderElection: new(false)},
	}
}

// wantEvidence checks that the history's one finding of family a cites op want.
func wantEvidence(t *testing.T, o ops, cfg history.Config, a guarantee.Anomaly, want int64) {
	t.Helper()
	r := check(t, &History{Header: history.Header{Version: history.Version, Config: cfg}, Ops: o})
	got := r.Anomalies[a]
	if got.Count != 1 {
		t.Fatalf("%s: %d findings, want 1: %+v", a, got.Count, got.Examples)
	}
	if ex := got.Examples[0]; !slices.Contains(ex.Ops, want) {
		t.Errorf("%s evidence %v (%s): want it to cite op %d", a, ex.Ops, ex.Note, want)
	}
}

// TestFoundFinalReadEvidenceNamesScanRange: where a partition's scan is split in ranges, the
// evidence of lost-write, lost-observed and hanging-transaction names the range that covers
// the offset concerned, or the one that stopped, never merely the scan's first.
func TestFoundFinalReadEvidenceNamesScanRange(t *testing.T) {
	t.Run("lost-write", func(t *testing.T) {
		// 1-2, acknowledged at 1, is missing from the range [1, 3), op 9, not from [0, 1).
		var o ops
		o.send(1, "1-1", 0)
		o.send(1, "1-2", 1)
		o.send(1, "1-3", 2)
		o.final(history.ReadUncommitted, 0, 1, rec("1-1", 0))
		second := o.final(history.ReadUncommitted, 1, 3, rec("1-3", 2))
		o.final(history.ReadCommitted, 0, 3, rec("1-1", 0), rec("1-3", 2))
		wantEvidence(t, o, strictConfig(), guarantee.LostWrite, second)
	})
	t.Run("lost-observed", func(t *testing.T) {
		// A consumer read 2-1 at 1 (its send went unanswered); the range [1, 2) lacks it.
		var o ops
		o.send(1, "1-1", 0)
		r := history.Record{Topic: "t", Value: "2-1"}
		o.add(history.Client(2), history.Invoke, history.FSend, history.Payload{Send: &r})
		o.add(history.Client(2), history.Info, history.FSend, history.Payload{Send: &r})
		o.poll(5, rec("1-1", 0), rec("2-1", 1))
		o.final(history.ReadUncommitted, 0, 1, rec("1-1", 0))
		second := o.final(history.ReadUncommitted, 1, 2)
		o.final(history.ReadCommitted, 0, 2, rec("1-1", 0))
		wantEvidence(t, o, strictConfig(), guarantee.LostObserved, second)
	})
	t.Run("hanging-transaction", func(t *testing.T) {
		// The stray record at 2: the read_committed scan stopped there in its range [1, 2).
		var o ops
		o.send(1, "1-1", 0)
		o.send(1, "1-2", 1)
		stray, _ := json.Marshal(history.Faults{Records: []history.Record{rec("stray-1", 2)}})
		o.add(history.NemesisP(), history.Invoke, history.FStrayTxnProduce, history.Payload{Raw: json.RawMessage(`{}`)})
		o.add(history.NemesisP(), history.OK, history.FStrayTxnProduce, history.Payload{Raw: stray})
		o.final(history.ReadUncommitted, 0, 3, rec("1-1", 0), rec("1-2", 1), rec("stray-1", 2))
		o.final(history.ReadCommitted, 0, 1, rec("1-1", 0))
		stopped := o.final(history.ReadCommitted, 1, 2, rec("1-2", 1))
		wantEvidence(t, o, strictConfig(), guarantee.HangingTransaction, stopped)
	})
}

// TestFoundPollSkipEvidenceShowsFinalRead: a consumer skipped a record only the final reads
// show; the evidence must still show the record that was skipped (docs/guarantees.md: "the
// two polls, the read that shows the skipped record"), so the final read stands in for a
// consumer's read.
func TestFoundPollSkipEvidenceShowsFinalRead(t *testing.T) {
	var o ops
	o.send(1, "1-1", 0)
	o.send(1, "1-2", 1)
	o.send(1, "1-3", 2)
	o.poll(5, rec("1-1", 0))
	o.poll(5, rec("1-3", 2))
	shows := o.final(history.ReadUncommitted, 0, 3, rec("1-1", 0), rec("1-2", 1), rec("1-3", 2))
	o.final(history.ReadCommitted, 0, 3, rec("1-1", 0), rec("1-2", 1), rec("1-3", 2))
	wantEvidence(t, o, strictConfig(), guarantee.PollSkip, shows)
}
