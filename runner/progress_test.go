package runner

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verity-kafka/verity/history"
)

type countingRecorder struct {
	n atomic.Int64
}

func (c *countingRecorder) Count() int64 { return c.n.Load() }
func (c *countingRecorder) Invoke(history.Process, string, history.Payload) (history.Op, error) {
	return history.Op{}, nil
}
func (c *countingRecorder) Complete(history.Op, history.Type, history.Payload, string) (history.Op, error) {
	return history.Op{}, nil
}
func (c *countingRecorder) CompleteAsync(history.Op, history.Type, history.Payload, string) (history.Op, error) {
	return history.Op{}, nil
}

func TestProgressLines(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, time.Hour, time.Minute) // no tick within the test: phases only
	p.phase("starting")
	p.phase("starting") // no change, no line
	rec := &countingRecorder{}
	rec.n.Store(1234)
	p.watch(nil, rec)
	p.phase("running")
	p.stop()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines %q: want one per phase change", lines)
	}
	if !strings.Contains(lines[0], "starting") || !strings.Contains(lines[1], "running") ||
		!strings.Contains(lines[1], "workload 0s/1m0s") || !strings.Contains(lines[1], "ops 1234") {
		t.Errorf("lines %q: want the phase, the workload's time out of its total and the ops", lines)
	}
	// A nil writer: every call is a no-op and stop returns.
	q := newProgress(nil, 0, time.Minute)
	q.phase("x")
	q.stop()
}

func (c *countingRecorder) Since() time.Duration { return 0 }
