package runner

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/verity-kafka/verity/nemesis"
	"github.com/verity-kafka/verity/workloads"
)

// progress writes one line per interval and per phase change: the phase, the time into the
// workloads out of their duration, ops recorded and their rate, and the faults in place. A nil
// writer makes every method a no-op.
type progress struct {
	w     io.Writer
	total time.Duration
	began time.Time

	mu        sync.Mutex
	cur       string
	runBegan  time.Time
	ops       opsCounter
	nem       *nemesis.Nemesis
	lastOps   int64
	lastAt    time.Time
	done      chan struct{}
	exited    chan struct{}
	closeOnce sync.Once
}

func newProgress(w io.Writer, every time.Duration, total time.Duration) *progress {
	p := &progress{w: w, total: total, began: time.Now(), done: make(chan struct{}), exited: make(chan struct{})}
	if w == nil {
		close(p.exited)
		return p
	}
	if every <= 0 {
		every = 5 * time.Second
	}
	go func() {
		defer close(p.exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				p.line()
			}
		}
	}()
	return p
}

// watch starts counting ops and showing faults: the workloads have begun.
func (p *progress) watch(n *nemesis.Nemesis, rec workloads.Recorder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nem = n
	p.runBegan, p.lastAt = time.Now(), time.Now()
	if c, ok := rec.(opsCounter); ok {
		p.ops = c
	}
}

func (p *progress) phase(name string) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	changed := p.cur != name
	p.cur = name
	p.mu.Unlock()
	if changed {
		p.line()
	}
}

func (p *progress) line() {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "verity: %6s  %-20s", time.Since(p.began).Round(time.Second), p.cur)
	if !p.runBegan.IsZero() {
		fmt.Fprintf(&b, " workload %s/%s", min(time.Since(p.runBegan), p.total).Round(time.Second), p.total)
	}
	if p.ops != nil {
		n, now := p.ops.Count(), time.Now()
		rate := 0.0
		if dt := now.Sub(p.lastAt).Seconds(); dt > 0 {
			rate = float64(n-p.lastOps) / dt
		}
		p.lastOps, p.lastAt = n, now
		fmt.Fprintf(&b, "  ops %d (%.0f/s)", n, rate)
	}
	if p.nem != nil {
		var active []string
		for _, inj := range p.nem.Active() {
			active = append(active, inj.Fault.String())
		}
		if len(active) > 0 {
			fmt.Fprintf(&b, "  faults: %s", strings.Join(active, ", "))
		} else {
			b.WriteString("  faults: none")
		}
	}
	fmt.Fprintln(p.w, b.String())
}

// stop ends the ticker and waits for it: no line is written after stop returns (a test's log
// must not be written to once the test has ended).
func (p *progress) stop() {
	p.closeOnce.Do(func() { close(p.done) })
	<-p.exited
}
