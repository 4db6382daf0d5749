package nemesis

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/history"
)

func randomSchedule() Random {
	return Random{
		Faults:   []Fault{Kill{LeaderOf("t", 0)}, Pause{FollowerOf("t", 0)}, Isolate{Target: RandomBroker()}, AckLoss{Target: LeaderOf("t", 0)}, None{}},
		Interval: 10 * time.Second,
		Quiet:    0.25,
	}
}

func TestRandomPlanIsSeeded(t *testing.T) {
	const length = 10 * time.Minute
	r := randomSchedule()
	a, err := r.Plan(1, length)
	require.NoError(t, err)
	b, err := r.Plan(1, length)
	require.NoError(t, err)
	require.Equal(t, a.String(), b.String(), "same seed, same plan")
	require.NotEmpty(t, a)

	c, err := r.Plan(2, length)
	require.NoError(t, err)
	require.NotEqual(t, a.String(), c.String(), "different seeds, different plans")

	// Distinct plans across many seeds: the seed really drives the draws.
	plans := map[string]bool{}
	for seed := range int64(20) {
		p, err := r.Plan(seed, length)
		require.NoError(t, err)
		plans[p.String()] = true
	}
	require.Len(t, plans, 20)

	t.Logf("seed 1:\n%s", a)
}

func TestRandomPlanShape(t *testing.T) {
	const length = 30 * time.Minute
	r := randomSchedule()
	p, err := r.Plan(3, length)
	require.NoError(t, err)
	slots := int((length - r.Interval) / r.Interval)
	for i, s := range p {
		require.Zero(t, s.At%r.Interval, "steps start on interval boundaries")
		require.GreaterOrEqual(t, s.At, r.Interval, "the first interval is left alone")
		require.Equal(t, r.Interval/2, s.For, "default hold")
		require.True(t, s.Serial, "one at a time")
		require.Equal(t, r.Interval-s.For, s.Recover, "the rest of the interval to recover")
		require.NotEqual(t, "none", s.Fault.Name(), "none is a quiet slot, not a step")
		if i > 0 {
			require.GreaterOrEqual(t, s.At-p[i-1].At, r.Interval, "one fault per interval")
		}
	}
	// 25 % quiet plus a fifth of the draws being None: about 60 % of the slots carry a fault.
	share := float64(len(p)) / float64(slots)
	require.InDelta(t, 0.6, share, 0.15, "%d of %d slots", len(p), slots)

	all := r
	all.Quiet = 1
	q, err := all.Plan(3, length)
	require.NoError(t, err)
	require.Empty(t, q, "quiet share 1: no fault")

	// Both draws happen every interval, so the quiet share does not change which faults are drawn.
	none := r
	none.Quiet = 0
	full, err := none.Plan(3, length)
	require.NoError(t, err)
	for _, s := range p {
		i := slices.IndexFunc(full, func(x Step) bool { return x.At == s.At })
		require.GreaterOrEqual(t, i, 0)
		require.Equal(t, s.Fault.String(), full[i].Fault.String())
	}
}

func TestPlanValidation(t *testing.T) {
	for name, r := range map[string]Random{
		"no faults":     {Interval: time.Second},
		"no interval":   {Faults: []Fault{None{}}},
		"quiet > 1":     {Faults: []Fault{None{}}, Interval: time.Second, Quiet: 2},
		"hold > period": {Faults: []Fault{None{}}, Interval: time.Second, Hold: 2 * time.Second},
	} {
		_, err := r.Plan(1, time.Minute)
		require.Error(t, err, name)
	}
	_, err := Timeline{{At: -time.Second, Fault: None{}}}.Plan(1, time.Minute)
	require.Error(t, err)
	p, err := NoFaults{}.Plan(1, time.Hour)
	require.NoError(t, err)
	require.Empty(t, p)
}

func TestTimelinePlan(t *testing.T) {
	tl := Timeline{
		{At: 40 * time.Second, For: 30 * time.Second, Fault: Pause{Node(2)}},
		{At: 10 * time.Second, For: 15 * time.Second, Fault: Kill{LeaderOf("t", 0)}},
		{At: 90 * time.Second, For: time.Second, Fault: Stop{Node(1)}},
	}
	p, err := tl.Plan(99, 60*time.Second)
	require.NoError(t, err)
	require.Equal(t, "at 10s for 15s: kill(leader of t-0)\nat 40s for 20s: pause(node 2)", p.String(),
		"sorted; the step past the end dropped; the heal past the end brought forward")
	q, err := tl.Plan(100, 60*time.Second)
	require.NoError(t, err)
	require.Equal(t, p.String(), q.String(), "a timeline ignores the seed")
}

// Run injects and heals on timers; overlapping steps both happen; every injection is healed.
func TestRunTimeline(t *testing.T) {
	fc, _, n, h := setup(t, 3, false)
	plan, err := Timeline{
		{At: 0, For: 60 * time.Millisecond, Fault: Kill{LeaderOf("t", 0)}},
		{At: 20 * time.Millisecond, For: 10 * time.Millisecond, Fault: Pause{Node(3)}},
		{At: 50 * time.Millisecond, For: 10 * time.Millisecond, Fault: Kill{LeaderOf("nope", 0)}},
	}.Plan(1, time.Second)
	require.NoError(t, err)
	began := time.Now()
	err = n.Run(t.Context(), plan)
	require.ErrorContains(t, err, "step 2", "a step that cannot inject is reported; the others run")
	require.GreaterOrEqual(t, time.Since(began), 60*time.Millisecond)
	require.Empty(t, n.Active())
	// The two faults' events interleave as a loaded machine schedules their timers: each
	// fault's own come in order, and they are all there.
	events := short(h.events(t))
	require.ElementsMatch(t, []string{
		"invoke kill [1]", "ok kill [1]", "invoke start [1]", "ok start [1]",
		"invoke pause [3]", "ok pause [3]", "invoke resume [3]", "ok resume [3]",
	}, events)
	for _, order := range [][]string{
		{"invoke kill [1]", "ok kill [1]", "invoke start [1]", "ok start [1]"},
		{"invoke pause [3]", "ok pause [3]", "invoke resume [3]", "ok resume [3]"},
	} {
		at := -1
		for _, e := range order {
			i := slices.Index(events, e)
			require.Greater(t, i, at, "%s out of order in %v", e, events)
			at = i
		}
	}
	for _, s := range fc.NodeStates() {
		require.Equal(t, "running", string(s))
	}
}

func TestRunStopsWithContext(t *testing.T) {
	_, _, n, h := setup(t, 3, false)
	plan := Plan{{At: 0, For: time.Hour, Fault: Pause{Node(2)}}, {At: time.Hour, For: time.Second, Fault: Kill{Node(1)}}}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	require.NoError(t, n.Run(ctx, plan))
	require.Len(t, n.Active(), 1, "the pause is left to Recover")
	r := n.Recover(t.Context(), time.Second)
	require.True(t, r.Healthy)
	var fs []string
	for _, e := range h.events(t) {
		if e.Type == history.OK {
			fs = append(fs, e.F)
		}
	}
	require.Equal(t, []string{"pause", "resume", "heal-all", "healthy"}, fs)
}

func TestRunRejectsUnavailablePlans(t *testing.T) {
	_, _, n, h := setup(t, 2, false)
	err := n.Run(t.Context(), Plan{{Fault: Split{}}})
	require.ErrorContains(t, err, "cannot run on this cluster")
	require.Empty(t, h.events(t))
}

// A Random plan runs through Run as is; same seed, same events.
func TestRandomRunIsReproducible(t *testing.T) {
	run := func(seed int64) string {
		_, _, n, h := setup(t, 3, false)
		n.seed = seed
		r := Random{Faults: []Fault{Pause{RandomBroker()}, Isolate{Target: FollowerOf("t", 0)}, Kill{RandomMinority()}},
			Interval: 10 * time.Millisecond, Hold: 3 * time.Millisecond}
		p, err := r.Plan(seed, 120*time.Millisecond)
		require.NoError(t, err)
		require.NoError(t, n.Run(t.Context(), p))
		var lines []string
		for _, e := range h.events(t) {
			if e.Type == history.Invoke && e.F != "heal" && e.F != "start" && e.F != "resume" {
				lines = append(lines, e.F+" "+fmtNodes(e.T.Nodes))
			}
		}
		// Each step draws from its own source, so its targets do not depend on timing; the
		// order of the lines could, on a loaded machine.
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	a := run(5)
	require.Equal(t, a, run(5))
	require.NotEqual(t, a, run(6))
}

// slowHeal is a fault whose heal returns only once release is closed, as a node's start does
// on a loaded machine; it notes when each of its injections and heals happened.
type slowHeal struct {
	name    string
	release chan struct{}
	log     *timeLog
}

type timeLog struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (l *timeLog) note(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at[what] = time.Now()
}

func (f slowHeal) Name() string            { return f.name }
func (f slowHeal) String() string          { return f.name }
func (f slowHeal) Available(Cluster) error { return nil }
func (f slowHeal) Inject(context.Context, *Env) (any, error) {
	f.log.note(f.name + " injected")
	return f.name, nil
}
func (f slowHeal) Heal(ctx context.Context, _ *Env, _ any) error {
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
		}
	}
	f.log.note(f.name + " healed")
	return nil
}

// A serial step (a periodic schedule's) waits for the heal of the step before it, however late,
// and then its recovery time; a step that is not serial does not.
func TestSerialStepsWaitForTheHealBefore(t *testing.T) {
	_, _, n, _ := setup(t, 3, false)
	log := &timeLog{at: map[string]time.Time{}}
	release := make(chan struct{})
	const gap = 20 * time.Millisecond
	plan := Plan{
		{At: 0, For: time.Millisecond, Fault: slowHeal{"first", release, log}, Serial: true, Recover: gap},
		{At: 5 * time.Millisecond, For: time.Millisecond, Fault: slowHeal{"second", nil, log}, Serial: true, Recover: gap},
		{At: 5 * time.Millisecond, For: time.Millisecond, Fault: slowHeal{"other", nil, log}},
	}
	ran := make(chan error, 1)
	go func() { ran <- n.Run(t.Context(), plan) }()
	// "other" does not wait: once it has healed, the first step's heal is let go.
	require.Eventually(t, func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		_, ok := log.at["other healed"]
		return ok
	}, time.Minute, time.Millisecond)
	log.mu.Lock()
	_, early := log.at["second injected"]
	log.mu.Unlock()
	require.False(t, early, "the second serial step was injected while the first was still healing")
	close(release)
	require.NoError(t, <-ran)
	require.GreaterOrEqual(t, log.at["second injected"].Sub(log.at["first healed"]), gap,
		"the second serial step came %s after the first's heal, want its recovery time %s at least",
		log.at["second injected"].Sub(log.at["first healed"]), gap)
}
