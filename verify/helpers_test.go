package verify

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// hb builds a history in memory, op by op, with indices and times filled in. Each helper
// returns the indices of the ops it wrote, so that cases can assert the evidence.
type hb struct {
	ops  []history.Op
	next int64
	now  int64
}

func newHB() *hb { return &hb{} }

func (h *hb) add(op history.Op) int64 {
	op.Index = h.next
	h.next++
	h.now += 1_000_000 // 1 ms between events
	op.Time = h.now
	h.ops = append(h.ops, op)
	return op.Index
}

// wait lets d pass before the next op.
func (h *hb) wait(d time.Duration) { h.now += int64(d) }

// rec is a record without offset; at gives it one.
func rec(topic string, part int32, value string) history.Record {
	return history.Record{Topic: topic, Partition: part, Value: value}
}

func at(r history.Record, off int64) history.Record { return r.At(off) }

// send writes an invoke and its completion; an ok completion reports offset off (none when
// off < -1; -1 is what acks=0 reports).
func (h *hb) send(p int, r history.Record, t history.Type, off int64) (inv, done int64) {
	inv = h.sendInvoke(p, r)
	return inv, h.sendDone(p, inv, r, t, off, false)
}

func (h *hb) sendInvoke(p int, r history.Record) int64 {
	r.Offset = nil
	return h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FSend, Value: history.Payload{Send: &r}})
}

func (h *hb) sendDone(p int, inv int64, r history.Record, t history.Type, off int64, async bool) int64 {
	r.Offset = nil
	if t == history.OK && off >= -1 {
		r = r.At(off)
	}
	op := history.Op{Process: history.Client(p), Type: t, F: history.FSend, Value: history.Payload{Send: &r}}
	if t != history.OK {
		op.Error = "kafka: request timed out"
	}
	if async {
		op.Of = &inv
	}
	return h.add(op)
}

// poll writes an ok poll that returned recs.
func (h *hb) poll(p int, iso string, recs ...history.Record) int64 {
	h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FPoll, Value: history.Payload{Poll: &history.Poll{Isolation: iso}}})
	return h.add(history.Op{Process: history.Client(p), Type: history.OK, F: history.FPoll,
		Value: history.Payload{Poll: &history.Poll{Isolation: iso, Records: slices.Clone(recs)}}})
}

// txn writes a transaction's invoke and completion. Records of an ok txn keep the offsets given.
func (h *hb) txn(p int, id, intent string, t history.Type, recs ...history.Record) (inv, done int64) {
	bare := make([]history.Record, len(recs))
	for i, r := range recs {
		r.Offset = nil
		bare[i] = r
	}
	inv = h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FTxn,
		Value: history.Payload{Txn: &history.Txn{TxnID: id, Records: bare, Intent: intent}}})
	out := bare
	if t == history.OK {
		out = slices.Clone(recs)
	}
	op := history.Op{Process: history.Client(p), Type: t, F: history.FTxn,
		Value: history.Payload{Txn: &history.Txn{TxnID: id, Records: out, Intent: intent}}}
	if t == history.Fail {
		op.Error = "aborted"
	}
	return inv, h.add(op)
}

// rpw writes a read-process-write step.
func (h *hb) rpw(p int, id string, t history.Type, in, out []history.Record) (inv, done int64) {
	v := &history.RPW{Input: in, Output: out, TxnID: id}
	inv = h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FRPW, Value: history.Payload{RPW: v}})
	return inv, h.add(history.Op{Process: history.Client(p), Type: t, F: history.FRPW, Value: history.Payload{RPW: v}})
}

// final writes a complete final read of [from, end) of one partition.
func (h *hb) final(topic string, part int32, iso string, from, end int64, recs ...history.Record) int64 {
	fr := history.FinalRead{Topic: topic, Partition: part, Isolation: iso, From: from, End: from}
	h.add(history.Op{Process: history.Client(99), Type: history.Invoke, F: history.FFinalRead, Value: history.Payload{FinalRead: &fr}})
	done := fr
	done.End, done.Records = end, slices.Clone(recs)
	return h.add(history.Op{Process: history.Client(99), Type: history.OK, F: history.FFinalRead, Value: history.Payload{FinalRead: &done}})
}

// finalBoth writes final reads in both isolation levels showing the same records.
func (h *hb) finalBoth(topic string, part int32, from, end int64, recs ...history.Record) {
	h.final(topic, part, history.ReadUncommitted, from, end, recs...)
	h.final(topic, part, history.ReadCommitted, from, end, recs...)
}

// op writes an invoke and ok of some other client op (assign, subscribe, crash, rebalance).
func (h *hb) op(p int, f string) int64 {
	h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: f, Value: history.Payload{Raw: json.RawMessage(`{}`)}})
	return h.add(history.Op{Process: history.Client(p), Type: history.OK, F: f, Value: history.Payload{Raw: json.RawMessage(`{}`)}})
}

// assigned writes an invoke and ok of an assign op that gives process p parts, as the consumer
// role records a rebalance.
func (h *hb) assigned(p int, parts map[string][]int32) int64 {
	v := history.Payload{Raw: json.RawMessage(mustJSON(map[string]any{"partitions": parts, "rebalance": true}))}
	h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FAssign, Value: v})
	return h.add(history.Op{Process: history.Client(p), Type: history.OK, F: history.FAssign, Value: v})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// nemesis writes a fault's invoke and ok.
func (h *hb) nemesis(f, value string) int64 {
	h.add(history.Op{Process: history.NemesisP(), Type: history.Invoke, F: f, Value: history.Payload{Raw: json.RawMessage(value)}})
	return h.add(history.Op{Process: history.NemesisP(), Type: history.OK, F: f, Value: history.Payload{Raw: json.RawMessage(value)}})
}

// nemesisEvent writes a fault's invoke and a completion of type t, both carrying value, as the
// nemesis records them: its completions name no invoke ("of"), since nemesis actions and ISR
// observations interleave.
func (h *hb) nemesisEvent(f, value string, t history.Type) (inv, done int64) {
	inv = h.add(history.Op{Process: history.NemesisP(), Type: history.Invoke, F: f, Value: history.Payload{Raw: json.RawMessage(value)}})
	op := history.Op{Process: history.NemesisP(), Type: t, F: f, Value: history.Payload{Raw: json.RawMessage(value)}}
	if t != history.OK {
		op.Error = "ssh: connection refused"
	}
	return inv, h.add(op)
}

// nemesisInvoke is a fault's invoke alone, as a run stopped mid-action leaves it.
func nemesisInvoke(f, value string) history.Op {
	return history.Op{Process: history.NemesisP(), Type: history.Invoke, F: f, Value: history.Payload{Raw: json.RawMessage(value)}}
}

// replicas writes an ISR observation, as the nemesis's watcher does (an invoke without value,
// then ok), that names the partition's replica set; its ISR is the whole set.
func (h *hb) replicas(topic string, part int32, ids ...int) int64 {
	b, _ := json.Marshal(map[string]any{"topic": topic, "partition": part, "isr": ids, "replicas": ids})
	h.add(history.Op{Process: history.NemesisP(), Type: history.Invoke, F: "isr"})
	return h.add(history.Op{Process: history.NemesisP(), Type: history.OK, F: "isr", Value: history.Payload{Raw: b}})
}

// isr writes an ISR observation.
func (h *hb) isr(topic string, part int32, minISR int, isr ...int) int64 {
	b, _ := json.Marshal(ISREvent{Topic: topic, Partition: part, ISR: isr, MinISR: &minISR})
	return h.add(history.Op{Process: history.NemesisP(), Type: history.Info, F: "isr", Value: history.Payload{Raw: b}})
}

func (h *hb) check(cfg history.Config) *results.Results {
	c := New(cfg, Options{MaxExamples: 100})
	for i := range h.ops {
		c.Add(&h.ops[i])
	}
	return c.Results()
}

// Configurations the cases use.
func ptr[T any](v T) *T { return &v }

// strict is the scenarios' default: acks=all, idempotent, RF=3, min ISR 2, unclean off.
func strict() history.Config {
	return history.Config{
		Producer: &kafkaconf.ProducerConfig{Delivery: kafkaconf.Delivery{Acks: ptr(kafkaconf.AcksAll), Idempotence: ptr(true), MaxInFlight: ptr(5), Retries: ptr(10)}},
		Topic:    &kafkaconf.TopicConfig{ReplicationFactor: ptr(3), MinInsyncReplicas: ptr(2), UncleanLeaderElection: ptr(false)},
	}
}

func withProducer(c history.Config, d kafkaconf.Delivery) history.Config {
	c.Producer = &kafkaconf.ProducerConfig{Delivery: d}
	return c
}

func acks1() history.Config {
	return withProducer(strict(), kafkaconf.Delivery{Acks: ptr(kafkaconf.AcksLeader), Idempotence: ptr(false), MaxInFlight: ptr(1), Retries: ptr(3)})
}

func plainRetries(inFlight int) history.Config {
	return withProducer(strict(), kafkaconf.Delivery{Acks: ptr(kafkaconf.AcksAll), Idempotence: ptr(false), MaxInFlight: ptr(inFlight), Retries: ptr(3)})
}

func unclean() history.Config {
	c := strict()
	c.Topic.UncleanLeaderElection = ptr(true)
	return c
}

// want is what a case expects of one anomaly family.
type want struct {
	count     int
	permitted bool
	// ops, when set, must all appear in the first example's ops.
	ops []int64
	// known, when set, is the known issue that must explain every forbidden finding.
	known guarantee.KnownIssue
}

type tcase struct {
	name  string
	cfg   func() history.Config // default strict
	build func(h *hb)
	// want lists every family expected to have findings; any other family with a finding
	// fails the case.
	want    map[guarantee.Anomaly]want
	verdict results.Verdict // checked when set
}

func runCases(t *testing.T, cases []tcase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHB()
			tc.build(h)
			cfg := strict()
			if tc.cfg != nil {
				cfg = tc.cfg()
			}
			r := h.check(cfg)
			for name, a := range r.Anomalies {
				w, expected := tc.want[name]
				if !expected {
					if a.Count > 0 {
						t.Errorf("%s: %d unexpected finding(s): %s", name, a.Count, exampleNotes(a))
					}
					continue
				}
				if a.Count != w.count {
					t.Errorf("%s: count %d, want %d: %s", name, a.Count, w.count, exampleNotes(a))
				}
				if permitted := a.Judgement != guarantee.Forbidden; a.Count > 0 && permitted != w.permitted {
					t.Errorf("%s: judged %s, want permitted %t (why: %s)", name, a.Judgement, w.permitted, a.Why)
				}
				if w.known != "" && (a.Known != a.ForbiddenCount() || !slices.Equal(a.KnownIssues, []guarantee.KnownIssue{w.known})) {
					t.Errorf("%s: %d of %d forbidden explained by %v, want all by %s", name, a.Known, a.ForbiddenCount(), a.KnownIssues, w.known)
				}
				if w.known == "" && a.Known > 0 {
					t.Errorf("%s: %d explained by known issue %v, want none", name, a.Known, a.KnownIssues)
				}
				if len(w.ops) > 0 && len(a.Examples) > 0 {
					for _, o := range w.ops {
						if !slices.Contains(a.Examples[0].Ops, o) {
							t.Errorf("%s: example ops %v lack op %d (%s)", name, a.Examples[0].Ops, o, a.Examples[0].Note)
						}
					}
				}
			}
			for name, w := range tc.want {
				if _, ok := r.Anomalies[name]; !ok && w.count > 0 {
					t.Errorf("%s: not reported", name)
				}
			}
			if tc.verdict != "" && r.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s (unknown reasons: %v)", r.Verdict, tc.verdict, r.UnknownReasons)
			}
		})
	}
}

func exampleNotes(a results.Anomaly) string {
	s := ""
	for i, e := range a.Examples {
		if i > 0 {
			s += "; "
		}
		s += e.Note + " " + strconv.Quote(e.Judgement.String())
	}
	return s
}

// isrOp is an ISR observation, with min_isr left out when minISR is nil.
func isrOp(topic string, part int32, minISR *int, isr ...int) history.Op {
	b, _ := json.Marshal(ISREvent{Topic: topic, Partition: part, ISR: isr, MinISR: minISR})
	return history.Op{Process: history.NemesisP(), Type: history.Info, F: "isr", Value: history.Payload{Raw: b}}
}
