package verify

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// joined writes the assign op of a rebalance that gives process p partition 0 of topic "i" in
// group g, as the roles record it.
func (h *hb) joined(p int, g string) int64 {
	v := history.Payload{Raw: json.RawMessage(mustJSON(map[string]any{"group": g, "partitions": map[string][]int32{"i": {0}},
		"topics": []string{"i"}, "rebalance": true}))}
	h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FAssign, Value: v})
	return h.add(history.Op{Process: history.Client(p), Type: history.OK, F: history.FAssign, Value: v})
}

// step writes a processor's transaction that read reads and wrote nothing, ending t; it returns
// the invoke and the completion (where the reads are recorded).
func (h *hb) step(p int, t history.Type, reads ...history.Record) (inv, done int64) {
	return h.begin(p), h.end(p, t, RC, 0, nil, reads...)
}

// groupPoll writes an ok poll of a consumer in group g.
func (h *hb) groupPoll(p int, g string, rs ...history.Record) int64 {
	h.add(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FPoll, Value: history.Payload{Poll: &history.Poll{Isolation: RC, Group: g}}})
	return h.add(history.Op{Process: history.Client(p), Type: history.OK, F: history.FPoll,
		Value: history.Payload{Poll: &history.Poll{Isolation: RC, Group: g, Records: slices.Clone(rs)}}})
}

// resumeInput writes four acknowledged records at offsets 0-3 of i-0, and returns them.
func (h *hb) resumeInput() []history.Record {
	var in []history.Record
	for o := range int64(4) {
		r := at(rec("i", 0, "1-"+string(rune('1'+o))), o)
		h.send(1, r, OK, o)
		in = append(in, r)
	}
	return in
}

func resumesOf(r *results.Results, reader results.ResumeReader, cause results.ResumeCause) results.ResumeCount {
	for _, rc := range r.Stats.Resumes {
		if rc.Reader == reader && rc.Cause == cause {
			return rc
		}
	}
	return results.ResumeCount{}
}

func TestResumes(t *testing.T) {
	var in []history.Record
	// consumerSkip: a consumer of group g read in[0], then after a rebalance began at in[2].
	consumerSkip := func(h *hb) {
		h.groupPoll(3, "g", in[0])
		h.joined(3, "g")
		h.groupPoll(3, "g", in[2], in[3])
	}
	build := func(body func(h *hb)) func(h *hb) {
		return func(h *hb) {
			in = h.resumeInput()
			body(h)
			h.finalBoth("i", 0, 0, 4, in...)
		}
	}
	runCases(t, []tcase{
		{name: "a processor's new instance resumes at the committed offset: at-committed", build: build(func(h *hb) {
			h.joined(2, "g")
			h.step(2, OK, in[0], in[1])
			h.op(2, history.FCrash)
			h.step(2, OK, in[2])
		}), verdict: results.Pass},
		{name: "after an abort it resumes past the aborted input: skipped-ahead", build: build(func(h *hb) {
			h.joined(2, "g")
			h.step(2, OK, in[0])
			h.step(2, Fail, in[1])
			h.step(2, Fail, in[2])
		}), want: map[guarantee.Anomaly]want{guarantee.ResumeSkippedAhead: {count: 1}}, verdict: results.Fail},
		{name: "after a crash it reads a committed input again: rewound-further", build: build(func(h *hb) {
			h.joined(2, "g")
			h.step(2, OK, in[0], in[1])
			h.op(2, history.FCrash)
			h.step(2, Fail, in[1])
		}), want: map[guarantee.Anomaly]want{guarantee.ResumeRewoundFurther: {count: 1}}, verdict: results.Fail},
		{name: "after an abort it reads on past the aborted input, then commits: skipped-ahead, not held to its own commit", build: build(func(h *hb) {
			h.joined(2, "g")
			h.step(2, Fail, in[0])
			h.step(2, OK, in[1])
		}), want: map[guarantee.Anomaly]want{guarantee.ResumeSkippedAhead: {count: 1}}, verdict: results.Fail},
		{name: "the commit it reads again had an unknown outcome: at-committed", build: build(func(h *hb) {
			h.joined(2, "g")
			h.step(2, OK, in[0])
			h.step(2, Info, in[1])
			h.op(2, history.FCrash)
			h.step(2, Fail, in[1])
		}), verdict: results.Pass},
		{name: "another member's commit completed only while it joined: either offset, at-committed", build: build(func(h *hb) {
			h.joined(1, "g")
			h.step(1, OK, in[0])
			h.begin(1)
			h.joined(2, "g")
			h.end(1, OK, RC, 0, nil, in[1])
			h.step(2, Fail, in[1]) // read before the commit of in[1] may have been seen
		}), verdict: results.Pass},
		{name: "another member's commit completed before it began to join: rewound-further", build: build(func(h *hb) {
			h.joined(1, "g")
			h.step(1, OK, in[0])
			h.step(1, OK, in[1])
			h.groupPoll(2, "g") // the member's op before its rebalance
			h.joined(2, "g")
			h.step(2, Fail, in[1])
		}), want: map[guarantee.Anomaly]want{guarantee.ResumeRewoundFurther: {count: 1}}, verdict: results.Fail},
		{name: "a member the coordinator dropped replays after its abort what another member, assigned since, committed: superseded, not judged", build: build(func(h *hb) {
			h.joined(2, "g")
			h.step(2, OK, in[0])
			h.joined(3, "g") // the coordinator dropped process 2 and gave i-0 to process 3
			h.step(3, OK, in[1], in[2])
			h.step(2, Fail, in[1], in[2]) // process 2's session has not ended: its commit is fenced
			h.step(2, Fail, in[1], in[2])
		}), verdict: results.Pass},
		{name: "the same replay once the member was assigned the partition again: rewound-further", build: build(func(h *hb) {
			h.joined(2, "g")
			h.step(2, OK, in[0])
			h.joined(3, "g")
			h.step(3, OK, in[1], in[2])
			h.groupPoll(2, "g") // the member's op before its rebalance
			h.joined(2, "g")
			h.step(2, Fail, in[1], in[2])
		}), want: map[guarantee.Anomaly]want{guarantee.ResumeRewoundFurther: {count: 1}}, verdict: results.Fail},
		{name: "a consumer resumes past everything its group read: skipped-ahead", build: build(consumerSkip), want: map[guarantee.Anomaly]want{guarantee.ResumeSkippedAhead: {count: 1}}, verdict: results.Fail},
		{name: "a consumer resumes right after what its group read, or before it: at-committed", build: build(func(h *hb) {
			h.groupPoll(3, "g", in[0], in[1])
			h.joined(3, "g")
			h.groupPoll(3, "g", in[2])
			h.joined(3, "g")
			h.groupPoll(3, "g", in[0], in[1], in[2], in[3])
		}), verdict: results.Pass},
		{name: "a consumer of a group that starts at the log's end resumes past its group's reads: unclassified", build: build(func(h *hb) {
			v := history.Payload{Raw: json.RawMessage(`{"topics":["i"],"group":"g","reset":"latest"}`)}
			h.add(history.Op{Process: history.Client(3), Type: history.Invoke, F: history.FSubscribe, Value: v})
			h.add(history.Op{Process: history.Client(3), Type: history.OK, F: history.FSubscribe, Value: v})
			h.groupPoll(3, "g", in[0])
			h.joined(3, "g")
			h.groupPoll(3, "g", in[2], in[3])
		}), verdict: results.Pass},
		{name: "skipped-ahead on a topic that allows unclean election: permitted", cfg: unclean, build: build(consumerSkip), want: map[guarantee.Anomaly]want{guarantee.ResumeSkippedAhead: {count: 1, permitted: true}}, verdict: results.Pass},
	})
}

// The evidence of a skipped-ahead resume: what reset the positions (the aborted step, which
// also first showed the skipped record), the commit it is held to, and the read; the counts by
// reader and cause.
func TestResumeEvidenceAndCounts(t *testing.T) {
	h := newHB()
	in := h.resumeInput()
	h.joined(2, "g")
	_, commit := h.step(2, OK, in[0])
	_, abort := h.step(2, Fail, in[1])
	_, resumed := h.step(2, Fail, in[2])
	h.finalBoth("i", 0, 0, 4, in...)
	r := h.check(strict())
	a := r.Anomalies[guarantee.ResumeSkippedAhead]
	if a.Count != 1 || a.Judgement != guarantee.Forbidden {
		t.Fatalf("resume-skipped-ahead: %d judged %s, want 1 forbidden", a.Count, a.Judgement)
	}
	ex := a.Examples[0]
	if want := []int64{abort, commit, resumed}; !slices.Equal(ex.Ops, want) {
		t.Errorf("evidence ops %v, want %v (%s)", ex.Ops, want, ex.Note)
	}
	if ex.Value != in[1].Value || !slices.Equal(ex.Offsets, []int64{1, 2}) {
		t.Errorf("skipped %s at offsets %v, want %s between 1 and 2 (%s)", ex.Value, ex.Offsets, in[1].Value, ex.Note)
	}
	got := resumesOf(r, results.ResumeProcessor, results.ResumeAbort)
	if got.AtCommitted != 0 || got.SkippedAhead != 1 {
		t.Errorf("processor resumes after an abort: %+v, want 1 skipped-ahead", got)
	}
	if s := resumesOf(r, results.ResumeProcessor, results.ResumeAssign); s.AtCommitted != 1 {
		t.Errorf("processor resumes after its assignment: %+v, want 1 at-committed", s)
	}
}
