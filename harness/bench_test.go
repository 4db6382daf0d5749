package harness_test

import (
	"context"
	"testing"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
)

// BenchmarkStartReady measures Start -> ready (every broker registered, probe topic with full
// ISR) and Close for a 3-node combined cluster:
//
//	go test -run '^$' -bench StartReady -benchtime 3x ./harness/
func BenchmarkStartReady(b *testing.B) {
	harnesstest.RequireDocker(b)
	var ready, closed time.Duration
	for b.Loop() {
		c, err := harness.Start(context.Background(), harness.Spec{Nodes: 3, ArtifactDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		ready += c.ReadyIn
		start := time.Now()
		if err := c.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		closed += time.Since(start)
	}
	b.ReportMetric(ready.Seconds()/float64(b.N), "ready_s")
	b.ReportMetric(closed.Seconds()/float64(b.N), "close_s")
}
