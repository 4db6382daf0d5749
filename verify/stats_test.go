package verify

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/results"
)

func TestStats(t *testing.T) {
	h := newHB()
	h.send(1, rec("t", 0, "1-1"), OK, 0)                          // t 1, 2 ms
	h.send(1, rec("t", 0, "1-2"), Fail, 0)                        // t 3, 4: window opens at 3
	h.send(1, rec("t", 0, "1-3"), Info, 0)                        // t 5, 6
	h.send(1, rec("t", 0, "1-4"), OK, 1)                          // t 7, 8: window closes at 8
	h.send(2, rec("t", 1, "2-1"), Info, 0)                        // t 9, 10: window on t-1 from 9 ...
	h.txn(5, "tx", history.IntentAbort, Fail, rec("t", 1, "5-1")) // an intended abort: not unavailability
	h.sendInvoke(3, rec("t", 0, "3-1"))                           // never completes
	h.poll(7, RC, at(rec("t", 0, "1-3"), 2))                      // the unknown 1-3 turns up
	h.nemesis("kill", `{"nodes":[1]}`)
	h.finalBoth("t", 0, 0, 3, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-4"), 1), at(rec("t", 0, "1-3"), 2))
	h.final("t", 1, RU, 0, 2, at(rec("t", 1, "5-1"), 0))
	h.final("t", 1, RC, 0, 2)
	r := h.check(strict())
	s := r.Stats

	if got, want := s.Ops["send"], (results.Outcomes{OK: 2, Fail: 1, Info: 2, Pending: 1}); got != want {
		t.Errorf("send outcomes %+v, want %+v", got, want)
	}
	if got := s.Ops["txn"]; got.Fail != 1 {
		t.Errorf("txn outcomes %+v", got)
	}
	// Failed and unknown completions by their error (the helper's sends fail with "kafka:
	// request timed out"; the aborted transaction with "aborted"), most first.
	var errs []string
	for _, e := range s.Errors {
		errs = append(errs, fmt.Sprintf("%s %s %s %d", e.F, e.Outcome, e.Error, e.Count))
	}
	if want := []string{"send info timeout 2", "send fail timeout 1", "txn fail aborted 1"}; !slices.Equal(errs, want) {
		t.Errorf("errors %q, want %q", errs, want)
	}
	if e := s.Errors[0]; e.FirstS != 0.006 || e.LastS != 0.01 {
		t.Errorf("first and last info timeout at %v s and %v s, want 0.006 and 0.01", e.FirstS, e.LastS)
	}
	// Sends' errors split by partition; a transaction's are not a partition's.
	if got := s.Errors[0].ByPartition; !maps.Equal(got, map[string]int64{"t-0": 1, "t-1": 1}) {
		t.Errorf("info timeouts by partition %v, want one on t-0 and one on t-1", got)
	}
	if got := s.Errors[2].ByPartition; got != nil {
		t.Errorf("the aborted transaction counted by partition: %v", got)
	}
	if s.Nemesis["kill"] != 1 {
		t.Errorf("nemesis %v", s.Nemesis)
	}
	if s.UnknownSends != 3 || s.UnknownLaterSeen != 1 {
		t.Errorf("unknown sends %d (later seen %d), want 3 (1): two info, one never completed", s.UnknownSends, s.UnknownLaterSeen)
	}
	// t-0 failed from 3 ms to 8 ms; t-1 from 9 ms to the end of the run's writes: the last
	// write completion is 2-1's info at 10 ms (the pending invoke is no completion, and the
	// intended abort at 12 ms is no write). The windows do not overlap: 5 + 1 ms.
	want := []results.Window{
		{Topic: "t", Partition: 0, StartMs: 3, EndMs: 8, Failed: 2},
		{Topic: "t", Partition: 1, StartMs: 9, EndMs: 10, Failed: 1},
	}
	if !slices.Equal(s.Unavailability, want) {
		t.Errorf("windows %+v, want %+v", s.Unavailability, want)
	}
	if s.UnavailableMs != 6 {
		t.Errorf("unavailable %v ms, want 6", s.UnavailableMs)
	}
	if math.Abs(s.LatencyMs.P50-1) > 0.02 || math.Abs(s.LatencyMs.P99-1) > 0.02 || s.LatencyMs.Count != 2 {
		t.Errorf("send latency %+v, want 1 ms", s.LatencyMs)
	}
	if len(s.Partitions) != 2 {
		t.Fatalf("partitions %+v", s.Partitions)
	}
	if p := s.Partitions[0]; p.Records != 3 || p.Committed != 3 || p.End != 3 || !p.Complete {
		t.Errorf("t-0 final log %+v", p)
	}
	if p := s.Partitions[1]; p.Records != 1 || p.Committed != 0 {
		t.Errorf("t-1 final log %+v", p)
	}
}

func TestHistogram(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.add(int64(i) * 1_000_000) // 1..1000 ms
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 500}, {0.99, 990}, {0.999, 999}} {
		if got := h.quantile(c.q); math.Abs(got-c.want)/c.want > 0.016 {
			t.Errorf("q%.3f = %.2f ms, want %.0f within 1.6%%", c.q, got, c.want)
		}
	}
	if p := h.percentiles(); p.Max != 1000 || p.Count != 1000 {
		t.Errorf("%+v", p)
	}
	var empty histogram
	if empty.quantile(0.5) != 0 {
		t.Error("an empty histogram's quantile is 0")
	}
	for _, us := range []uint64{0, 1, 127, 128, 129, 255, 256, 1 << 20, 1<<63 - 1} {
		if b := bucketOf(us); bucketMid(b) < float64(us)*0.98 && us > 128 {
			t.Errorf("%d µs: bucket %d mid %.0f", us, b, bucketMid(b))
		}
	}
}

// A send that hangs for 8 s and is then acknowledged is no failed write, so unavailable_ms does
// not see it; the partition's stall does.
func TestStallsSeeHungWrites(t *testing.T) {
	h := newHB()
	r1, r2 := rec("t", 0, "1-1"), rec("t", 1, "2-1")
	h.send(1, r1, OK, 0)       // t 1, 2 ms
	inv := h.sendInvoke(2, r2) // t 3 ms
	h.now += 8_000_000_000
	h.sendDone(2, inv, r2, OK, 0, false) // t 8.004 s
	h.finalBoth("t", 0, 0, 1, at(r1, 0))
	h.finalBoth("t", 1, 0, 1, at(r2, 0))
	s := h.check(strict()).Stats
	if s.UnavailableMs != 0 {
		t.Errorf("unavailable %v ms: no write failed", s.UnavailableMs)
	}
	if len(s.Stalls) != 2 || s.Stalls[0].Partition != 1 || s.LongestStallMs != 8001 {
		t.Fatalf("stalls %+v, longest %v ms: want t-1 first, 8001 ms (invoked at 3 ms, acknowledged at 8004 ms)", s.Stalls, s.LongestStallMs)
	}
	if st := s.Stalls[0]; st.StartMs != 3 || st.EndMs != 8004 {
		t.Errorf("t-1's stall %+v", st)
	}
}

// Sends that each time out after 2 s, one after another, make one stall from the first to the
// acknowledgement that ends it; a send never answered stalls its partition to the history's end.
func TestStallsSpanConsecutiveTimeouts(t *testing.T) {
	h := newHB()
	h.send(1, rec("t", 0, "1-1"), OK, 0) // t 1, 2 ms
	first := h.now + 1_000_000           // the next invoke
	for i := 2; i <= 11; i++ {
		inv := h.sendInvoke(1, rec("t", 0, "1-"+strconv.Itoa(i)))
		h.now += 2_000_000_000
		h.sendDone(1, inv, rec("t", 0, "1-"+strconv.Itoa(i)), Info, 0, false)
	}
	_, acked := h.send(1, rec("t", 0, "1-12"), OK, 1)
	ackT := h.ops[acked].Time
	h.sendInvoke(2, rec("t", 1, "2-1")) // never answered
	hung := h.now
	h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-12"), 1))
	h.finalBoth("t", 1, 0, 0)
	end := h.now
	s := h.check(strict()).Stats
	byPart := map[int32]results.Stall{}
	for _, st := range s.Stalls {
		byPart[st.Partition] = st
	}
	if st := byPart[0]; st.StartMs != float64(first)/1e6 || st.EndMs != float64(ackT)/1e6 {
		t.Errorf("t-0 stall %+v, want from the first timed-out send's invoke (%v ms) to the acknowledgement (%v ms)", st, float64(first)/1e6, float64(ackT)/1e6)
	}
	if st := byPart[1]; st.StartMs != float64(hung)/1e6 || st.EndMs != float64(end)/1e6 {
		t.Errorf("t-1 stall %+v, want from the unanswered invoke (%v ms) to the history's end (%v ms)", st, float64(hung)/1e6, float64(end)/1e6)
	}
}

// A send whose partition is not known (history.NoPartition) counts in the errors under its
// topic, named as no partition, and in no partition's unavailability or stall; a completion
// that names the partition its invoke did not counts there.
func TestStatsOfSendsWithNoPartition(t *testing.T) {
	h := newHB()
	h.send(1, rec("t", history.NoPartition, "1-1"), Info, 0)     // the error names no partition
	inv := h.sendInvoke(1, rec("t", history.NoPartition, "1-2")) // chosen later ...
	h.sendDone(1, inv, rec("t", 0, "1-2"), Fail, 0, false)       // ... and named by the completion
	h.send(1, rec("t", 0, "1-3"), OK, 0)
	h.sendInvoke(2, rec("t", history.NoPartition, "2-1")) // never answered
	h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-3"), 0))
	r := h.check(strict())
	s := r.Stats

	byPart := map[string]int64{}
	for _, e := range s.Errors {
		for k, n := range e.ByPartition {
			byPart[k] += n
		}
	}
	if want := map[string]int64{"t (no partition)": 1, "t-0": 1}; !maps.Equal(byPart, want) {
		t.Errorf("errors by partition %v, want %v", byPart, want)
	}
	for _, w := range s.Unavailability {
		if w.Partition == history.NoPartition {
			t.Errorf("an unavailability window of no partition: %+v", w)
		}
	}
	for _, st := range s.Stalls {
		if st.Partition == history.NoPartition {
			t.Errorf("a stall of no partition: %+v", st)
		}
	}
	if want := []results.Window{{Topic: "t", Partition: 0, StartMs: 3, EndMs: 6, Failed: 1}}; !slices.Equal(s.Unavailability, want) {
		t.Errorf("windows %+v, want %+v", s.Unavailability, want)
	}
	if r.Verdict != results.Pass {
		t.Errorf("verdict %s (%v), want pass: no partition is one a final read must cover", r.Verdict, r.UnknownReasons)
	}
}
