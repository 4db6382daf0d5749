package report

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verity-kafka/verity/history"
)

func findFault(tl *Timeline, name string) *FaultInterval {
	for i := range tl.Faults {
		if tl.Faults[i].Name == name {
			return &tl.Faults[i]
		}
	}
	return nil
}

func TestTimelineFromHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	acked := writeTestHistory(t, path, 40000, 3)
	tl, err := ReadTimeline(context.Background(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Bucket != time.Second || tl.Ops < 40000 || tl.End <= 0 {
		t.Fatalf("bucket %s, ops %d, end %d", tl.Bucket, tl.Ops, tl.End)
	}
	var sum int64
	for _, b := range tl.Buckets {
		sum += b.Acked
	}
	if sum != acked {
		t.Errorf("buckets count %d acknowledged writes, the history has %d", sum, acked)
	}
	at := func(share float64) int64 { return int64(share * float64(tl.End)) }
	near := func(got, want int64) bool { return got >= want-1 && got <= want+int64(time.Millisecond) }

	// The pairing is history/faultspan's (its tests); here, that the timeline shows its
	// intervals at the history's times, without the failed bridge.
	shown := map[string]int{}
	for _, f := range tl.Faults {
		shown[f.Name]++
	}
	if shown["isolate"] != 1 || shown["latency"] != 1 || shown["disk-loss"] != 1 || shown["pause"] != 1 || shown["kill"] == 0 || shown["bridge"] != 0 {
		t.Errorf("faults shown %v", shown)
	}
	iso := findFault(tl, "isolate")
	if iso == nil || !near(iso.Start, at(0.20)) || !near(iso.InPlace, at(0.2005)) || !near(iso.End, at(0.4005)) ||
		iso.HealedBy != "heal" || !slices.Equal(iso.Nodes, []int{2}) || len(iso.Links) != 4 || iso.Heal < 0 {
		t.Errorf("isolate interval %+v", iso)
	}
	if p := findFault(tl, "pause"); p == nil || p.HealedBy != "heal-all" || !near(p.End, at(0.951)) {
		t.Errorf("pause interval %+v (only heal-all ends it)", p)
	}
	if len(tl.Markers) != 2 || tl.Markers[1].Label != "healthy" {
		t.Errorf("markers %+v", tl.Markers)
	}

	if len(tl.Partitions) != 3 || tl.Partitions[0].Name() != "verity-0" {
		t.Fatalf("partitions %+v", tl.Partitions)
	}
	p0 := tl.Partitions[0].States
	if len(p0) != 3 || !slices.Equal(p0[1].ISR, []int{1}) || p0[1].MinISR != 2 {
		t.Errorf("verity-0 states %+v: want 3, the repeated below-min sample kept once", p0)
	}
	if p1 := tl.Partitions[1].States; len(p1) != 3 || p1[0].Leader != 2 || p1[1].Leader != 1 {
		t.Errorf("verity-1 states %+v", p1)
	}
	var lat float64
	for _, b := range tl.Buckets {
		if v, ok := b.Latency(0.99); ok {
			lat = max(lat, v)
		}
	}
	if lat <= 0 {
		t.Error("no latency measured")
	}
}

// The latency histogram's quantiles are within 4 % of the truth.
func TestBucketLatency(t *testing.T) {
	var b Bucket
	if _, ok := b.Latency(0.5); ok {
		t.Error("latency of an empty bucket")
	}
	for i := 1; i <= 1000; i++ {
		b.addLatency(int64(i) * int64(time.Millisecond) / 10) // 0.1 ms .. 100 ms
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 50e6}, {0.99, 99e6}, {1, 100e6}} {
		got, ok := b.Latency(c.q)
		if !ok || got < c.want*0.96 || got > c.want*1.04 {
			t.Errorf("q%.2f = %.0f ns, want %.0f ±4%%", c.q, got, c.want)
		}
	}
}

// A run longer than MaxBuckets buckets gets wider buckets, and loses no count.
func TestTimelineWidensBuckets(t *testing.T) {
	s := newScanner(history.Header{}, time.Second)
	for i := range 10000 {
		s.bucket(int64(i)*int64(time.Second)).Acked++
	}
	tl := s.finish()
	if len(tl.Buckets) > MaxBuckets || tl.Bucket != 4*time.Second {
		t.Errorf("%d buckets of %s", len(tl.Buckets), tl.Bucket)
	}
	var sum int64
	for _, b := range tl.Buckets {
		sum += b.Acked
	}
	if sum != 10000 {
		t.Errorf("%d counted, want 10000", sum)
	}
}

// A cancelled context stops the read with an error, and what was read is returned.
func TestTimelineCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	writeTestHistory(t, path, 2000, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tl, err := ReadTimeline(ctx, path, 0)
	if err == nil || !strings.Contains(err.Error(), "canceled") || tl == nil {
		t.Errorf("ReadTimeline with a cancelled context: %v, %v", tl, err)
	}
	if _, err := ReadTimeline(context.Background(), filepath.Join(t.TempDir(), "none.jsonl"), 0); err == nil {
		t.Error("no error for a missing history")
	}
}
