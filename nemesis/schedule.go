package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// Step is one fault of a plan: injected At after the run's start, healed For later.
type Step struct {
	At, For time.Duration
	Fault   Fault
	// Serial steps come one at a time: one is injected no sooner than Recover after the step
	// before it was healed, however late that heal returned (a node's start takes longer on a
	// loaded machine), so that a fault never lands on a node still coming back from the one
	// before.
	Serial  bool
	Recover time.Duration
}

func (s Step) String() string {
	return fmt.Sprintf("at %s for %s: %s", s.At, s.For, s.Fault)
}

// Plan is a schedule made concrete for one run: the steps in order of At. Targets are not in
// it: they are resolved from the live cluster when each step is injected.
type Plan []Step

func (p Plan) String() string {
	if len(p) == 0 {
		return "no faults"
	}
	lines := make([]string, len(p))
	for i, s := range p {
		lines[i] = s.String()
	}
	return strings.Join(lines, "\n")
}

// Schedule turns a run's seed and length into a plan. The same seed and length always give
// the same plan.
type Schedule interface {
	Plan(seed int64, length time.Duration) (Plan, error)
	String() string
}

// NoFaults is the schedule of a control run.
type NoFaults struct{}

func (NoFaults) Plan(int64, time.Duration) (Plan, error) { return nil, nil }
func (NoFaults) String() string                          { return "no faults" }

// Timeline is a fixed schedule ("at 10 s do X for 15 s"); steps may overlap. Steps that would
// start at or after the run's end are dropped, and heals past the end are brought forward to
// it (the run ends healed).
type Timeline []Step

func (t Timeline) String() string { return "timeline:\n" + Plan(t).String() }
func (t Timeline) Plan(_ int64, length time.Duration) (Plan, error) {
	var p Plan
	for _, s := range t {
		if s.At < 0 || s.For < 0 || s.Fault == nil {
			return nil, fmt.Errorf("timeline step %q: negative time or no fault", s)
		}
		if s.At >= length {
			continue
		}
		s.For = min(s.For, length-s.At)
		p = append(p, s)
	}
	slices.SortStableFunc(p, func(a, b Step) int { return int(a.At - b.At) })
	return p, nil
}

// Random draws one fault every Interval from Faults (uniformly; None in the set makes quiet
// slots likelier), leaving a Quiet share of the intervals without any fault; each drawn fault
// stays Hold and is healed, so the cluster gets Interval-Hold to recover before the next.
// Draws come from a source seeded with the run's seed, so a seed replays its plan.
type Random struct {
	Faults   []Fault
	Interval time.Duration
	// Quiet is the share (0..1) of intervals with no fault.
	Quiet float64
	// Hold is how long each fault stays; default half the interval; at most the interval.
	Hold time.Duration
	// Start is when the first interval begins; default one interval in, so that the
	// workload runs unharmed first.
	Start time.Duration
}

func (r Random) String() string {
	names := make([]string, len(r.Faults))
	for i, f := range r.Faults {
		names[i] = f.String()
	}
	return fmt.Sprintf("random every %s (quiet %.0f%%, hold %s) from {%s}", r.Interval, r.Quiet*100, r.hold(), strings.Join(names, ", "))
}

func (r Random) hold() time.Duration {
	if r.Hold <= 0 {
		return r.Interval / 2
	}
	return r.Hold
}

// planStream separates the plan's draws from the targets' draws of the same seed.
const planStream = 0x706c616e

func (r Random) Plan(seed int64, length time.Duration) (Plan, error) {
	switch {
	case len(r.Faults) == 0:
		return nil, errors.New("random schedule: no faults to draw from")
	case r.Interval <= 0:
		return nil, fmt.Errorf("random schedule: interval %s must be positive", r.Interval)
	case r.Quiet < 0 || r.Quiet > 1:
		return nil, fmt.Errorf("random schedule: quiet share %g must be within [0, 1]", r.Quiet)
	case r.hold() > r.Interval:
		return nil, fmt.Errorf("random schedule: hold %s is longer than the interval %s", r.hold(), r.Interval)
	}
	start := r.Start
	if start <= 0 {
		start = r.Interval
	}
	rng := rand.New(rand.NewPCG(uint64(seed), planStream))
	var p Plan
	for at := start; at < length; at += r.Interval {
		// Both draws every interval, so that changing Quiet does not shift the faults drawn.
		quiet := rng.Float64() < r.Quiet
		f := r.Faults[rng.IntN(len(r.Faults))]
		if _, none := f.(None); quiet || none {
			continue
		}
		p = append(p, Step{At: at, For: min(r.hold(), length-at), Fault: f, Serial: true, Recover: r.Interval - r.hold()})
	}
	return p, nil
}

// Run carries out plan from now: each step's fault is injected at its time, with random
// choices from a source seeded by the nemesis seed and the step's index (so overlapping steps
// do not change each other's choices), and healed when its time is up. Waits are timers on
// ctx; a step does not wait for the ones before it unless it is Serial. A step that cannot be
// injected (no leader at that moment, say) is logged and skipped, and the run goes on; Run
// returns those errors joined once every step is done. When ctx ends, steps still to come are
// dropped and faults still in place are left to Recover, which is called once Run has returned.
func (n *Nemesis) Run(ctx context.Context, plan Plan) error {
	var unavailable []error
	for _, s := range plan {
		if err := s.Fault.Available(n.c); err != nil {
			unavailable = append(unavailable, fmt.Errorf("%s: %w", s, err))
		}
	}
	if len(unavailable) > 0 {
		return fmt.Errorf("the plan cannot run on this cluster: %w", errors.Join(unavailable...))
	}
	start := time.Now()
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		n.log.Warn("nemesis step failed", "err", err)
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	// done[i] closes once step i is over (healed, skipped or dropped), at ended[i].
	done, ended := make([]chan struct{}, len(plan)), make([]time.Time, len(plan))
	for i := range done {
		done[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for i, s := range plan {
		wg.Go(func() {
			defer func() { ended[i] = time.Now(); close(done[i]) }()
			if !waitUntil(ctx, start.Add(s.At)) {
				return
			}
			if s.Serial && i > 0 && !n.afterPrevious(ctx, i, s, done[i-1], &ended[i-1]) {
				return
			}
			inj, err := n.inject(ctx, s.Fault, n.randFor(1<<32|uint64(i)))
			if err != nil {
				if ctx.Err() == nil {
					fail(fmt.Errorf("step %d (%s): %w", i, s, err))
				}
				return
			}
			if !waitUntil(ctx, inj.inPlaceOr(start.Add(s.At)).Add(s.For)) {
				return
			}
			if err := n.Heal(ctx, inj); err != nil && ctx.Err() == nil {
				fail(fmt.Errorf("step %d (%s): %w", i, s, err))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// afterPrevious holds serial step i until the step before it is over (done) and s.Recover has
// passed since (at *ended, set before done closes), and reports false if ctx ended first.
func (n *Nemesis) afterPrevious(ctx context.Context, i int, s Step, done <-chan struct{}, ended *time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-done:
	}
	if late := time.Until(ended.Add(s.Recover)); late > 0 {
		n.log.Info("nemesis step held: the step before it was healed late", "step", i, "fault", s.Fault.String(), "by", late.Round(time.Millisecond))
	}
	return waitUntil(ctx, ended.Add(s.Recover))
}

// inPlaceOr is when the fault took effect, or def when it did nothing.
func (i *Injection) inPlaceOr(def time.Time) time.Time {
	if i.InPlace.IsZero() {
		return def
	}
	return i.InPlace
}

// waitUntil waits for t on a timer, and reports false if ctx ended first.
func waitUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
