package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
)

// Fault is one kind of fault with its targets, as a value: it says whether it can run on a
// cluster, injects itself (resolving its targets from the live cluster at that moment) and
// heals. Faults hold no state of their own; what Heal needs comes back from Inject, so one
// value can be injected many times, and several at once.
type Fault interface {
	// Name is the event name ("f") of the fault's injection: kill, isolate, latency, ...
	Name() string
	// String names the fault with its targets as configured: "kill(leader of t-0)".
	String() string
	// Available returns nil when the fault can run on c, or why it cannot.
	Available(c Cluster) error
	// Inject resolves the targets and puts the fault in place, recording each action through
	// e.Do. It returns what Heal needs. On error, a non-nil state means part of the fault may
	// be in place, and the nemesis calls Heal with it.
	Inject(ctx context.Context, e *Env) (state any, err error)
	// Heal undoes what Inject did (state is what it returned), recording through e.Do. A
	// fault whose effect ends on its own (a disk loss: the node is already back, empty)
	// records nothing.
	Heal(ctx context.Context, e *Env, state any) error
}

// Options configure a Nemesis.
type Options struct {
	// Seed drives every random choice (targets, and the plans of Random schedules); the run's
	// seed. The same seed and the same cluster state give the same choices.
	Seed int64
	// Log receives what the nemesis does; default discards.
	Log *slog.Logger
	// Locator answers what the Cluster interface does not (active controller, coordinators,
	// ISR samples); default a KafkaLocator on the cluster's bootstrap addresses.
	Locator Locator
}

// Nemesis injects faults into one cluster and records them into one history. It is safe for
// concurrent use: a schedule's overlapping steps inject from several goroutines.
type Nemesis struct {
	c    Cluster
	rec  Recorder
	log  *slog.Logger
	loc  Locator
	seed int64

	mu      sync.Mutex
	next    int                  // id of the next injection
	active  map[int]*Injection   // injected, not yet healed
	cutRefs map[harness.Link]int // how many active faults cut each link
	toxics  int                  // makes toxic names unique
	kick    chan struct{}        // asks WatchISR for a sample now
}

// New returns a nemesis for c that records into rec.
func New(c Cluster, rec Recorder, opts Options) *Nemesis {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	loc := opts.Locator
	if loc == nil {
		loc = NewKafkaLocator(c, log)
	}
	return &Nemesis{c: c, rec: rec, log: log, loc: loc, seed: opts.Seed,
		active: map[int]*Injection{}, cutRefs: map[harness.Link]int{}, kick: make(chan struct{}, 1)}
}

// Close releases the locator's connections. It does not heal anything (Recover does).
func (n *Nemesis) Close() error { return n.loc.Close() }

// Cluster is the cluster the nemesis acts on.
func (n *Nemesis) Cluster() Cluster { return n.c }

// Locator is the nemesis's locator (tests use it to observe what faults did).
func (n *Nemesis) Locator() Locator { return n.loc }

// Injection is one fault put in place: when, on what, and what its heal needs.
type Injection struct {
	ID    int
	Fault Fault
	// Called is when Inject was called; Acting when its targets were resolved and its first
	// action began (the invoke recorded); InPlace when that action took effect (its ok: the
	// proxies changed, the node stopped); Healed when its heal finished (zero until then).
	Called, Acting, InPlace, Healed time.Time
	// Events are the values of the events the injection recorded, in order.
	Events []Targets

	state any
	// Random choices of the heal continue the injection's source.
	rand *rand.Rand
}

// Latency is the time from the Inject call to the fault being in place (0 for a fault that
// did nothing, such as None).
func (i *Injection) Latency() time.Duration {
	if i.InPlace.IsZero() {
		return 0
	}
	return i.InPlace.Sub(i.Called)
}

// ActionLatency is the time from the first action's start to the fault being in place: Latency
// without the target lookup (a metadata or quorum question to the cluster).
func (i *Injection) ActionLatency() time.Duration {
	if i.InPlace.IsZero() || i.Acting.IsZero() {
		return 0
	}
	return i.InPlace.Sub(i.Acting)
}

// Nodes lists every node the injection's events named.
func (i *Injection) Nodes() []int {
	var out []int
	for _, t := range i.Events {
		out = append(out, t.Nodes...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Env is what a fault works with during one injection or heal.
type Env struct {
	Cluster Cluster
	Locator Locator
	// Rand is seeded from the nemesis's seed and the injection: use it for every random
	// choice, never a global source.
	Rand *rand.Rand
	Log  *slog.Logger

	n       *Nemesis
	inj     *Injection
	healing bool
}

// randFor returns the source of injection id (or of step id of a plan): a PCG stream of its
// own, so that choices do not depend on how injections interleave.
func (n *Nemesis) randFor(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(n.seed), 0x6e656d65_73697300^stream))
}

// Inject puts f in place, with its random choices drawn from the injection's own seeded
// source (the nemesis seed and the injection's sequence number).
func (n *Nemesis) Inject(ctx context.Context, f Fault) (*Injection, error) {
	return n.inject(ctx, f, nil)
}

// inject puts f in place with random source r, or the injection's own when r is nil.
func (n *Nemesis) inject(ctx context.Context, f Fault, r *rand.Rand) (*Injection, error) {
	called := time.Now()
	if err := f.Available(n.c); err != nil {
		return nil, fmt.Errorf("injecting %s: not available on this cluster: %w", f, err)
	}
	n.mu.Lock()
	inj := &Injection{ID: n.next, Fault: f, Called: called}
	n.next++
	n.mu.Unlock()
	if r == nil {
		r = n.randFor(uint64(inj.ID))
	}
	inj.rand = r
	e := &Env{Cluster: n.c, Locator: n.loc, Rand: r, Log: n.log.With("fault", f.String(), "injection", inj.ID), n: n, inj: inj}
	state, err := f.Inject(ctx, e)
	inj.state = state
	if err != nil {
		err = fmt.Errorf("injecting %s: %w", f, err)
		if state != nil {
			// Part of the fault may be in place: undo it now rather than leave it to heal-all,
			// so that the history shows the heal of what was recorded.
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if herr := f.Heal(hctx, &Env{Cluster: n.c, Locator: n.loc, Rand: r, Log: e.Log, n: n, inj: inj, healing: true}, state); herr != nil {
				err = errors.Join(err, fmt.Errorf("undoing the partial injection: %w", herr))
			}
			inj.Healed = time.Now()
		}
		return nil, err
	}
	n.mu.Lock()
	n.active[inj.ID] = inj
	n.mu.Unlock()
	n.kickISR()
	n.log.Info("fault in place", "fault", f.String(), "injection", inj.ID, "nodes", inj.Nodes(), "latency", inj.Latency().Round(time.Microsecond))
	return inj, nil
}

// Heal undoes inj. Healing twice is a no-op.
func (n *Nemesis) Heal(ctx context.Context, inj *Injection) error {
	n.mu.Lock()
	_, ok := n.active[inj.ID]
	delete(n.active, inj.ID)
	n.mu.Unlock()
	if !ok {
		return nil
	}
	e := &Env{Cluster: n.c, Locator: n.loc, Rand: inj.rand, Log: n.log.With("fault", inj.Fault.String(), "injection", inj.ID), n: n, inj: inj, healing: true}
	err := inj.Fault.Heal(ctx, e, inj.state)
	inj.Healed = time.Now()
	n.kickISR()
	if err != nil {
		return fmt.Errorf("healing %s: %w", inj.Fault, err)
	}
	n.log.Info("fault healed", "fault", inj.Fault.String(), "injection", inj.ID)
	return nil
}

// Active lists the injections not healed yet, oldest first.
func (n *Nemesis) Active() []*Injection {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*Injection, 0, len(n.active))
	for _, inj := range n.active {
		out = append(out, inj)
	}
	slices.SortFunc(out, func(a, b *Injection) int { return a.ID - b.ID })
	return out
}

// Do records the invoke of event f with targets t, runs act, and records ok once act has
// returned: the invoke/ok pair brackets the moment the action took effect. When act fails
// the completion is info (part of it may have happened: some links cut, a signal sent), with
// the error. When the invoke cannot be recorded, act does not run: the history must show
// every fault.
func (e *Env) Do(ctx context.Context, f string, t Targets, act func(context.Context) error) error {
	return e.do(ctx, f, t, func(ctx context.Context, _ *Targets) error { return act(ctx) }, history.Info)
}

// DoReport is Do for an action that learns something worth recording (what a power cut
// dropped): act may add to the targets, and the completion carries them.
func (e *Env) DoReport(ctx context.Context, f string, t Targets, act func(context.Context, *Targets) error) error {
	return e.do(ctx, f, t, act, history.Info)
}

// do is Do with the completion type of a failed act: info (unknown) for actions that may have
// half happened, fail for outcomes that are definite (the cluster did not get healthy).
func (e *Env) do(ctx context.Context, f string, t Targets, act func(context.Context, *Targets) error, failed history.Type) error {
	v, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("recording %s: %w", f, err)
	}
	inv, err := e.n.rec.Invoke(history.NemesisP(), f, history.Payload{Raw: v})
	if err != nil {
		return fmt.Errorf("recording the invoke of %s: %w", f, err)
	}
	if e.inj != nil && !e.healing && e.inj.Acting.IsZero() {
		e.inj.Acting = time.Now()
	}
	actErr := act(ctx, &t)
	typ, text := history.OK, ""
	if actErr != nil {
		typ, text = failed, actErr.Error()
	}
	if done, err := json.Marshal(t); err == nil {
		v = done
	}
	_, recErr := e.n.rec.Complete(inv, typ, history.Payload{Raw: v}, text)
	if e.inj != nil {
		if !e.healing && actErr == nil && e.inj.InPlace.IsZero() {
			e.inj.InPlace = time.Now()
		}
		if !e.healing {
			e.inj.Events = append(e.inj.Events, t)
		}
	}
	e.Log.Debug("nemesis event", "f", f, "nodes", t.Nodes, "links", t.Links, "err", actErr)
	if actErr != nil {
		actErr = fmt.Errorf("%s %v: %w", f, describeTargets(t), actErr)
	}
	if recErr != nil {
		recErr = fmt.Errorf("recording the completion of %s: %w", f, recErr)
	}
	return errors.Join(actErr, recErr)
}

func describeTargets(t Targets) string {
	switch {
	case len(t.Nodes) > 0 && len(t.Links) > 0:
		return fmt.Sprintf("nodes %v links %v", t.Nodes, t.Links)
	case len(t.Links) > 0:
		return fmt.Sprintf("links %v", t.Links)
	default:
		return fmt.Sprintf("nodes %v", t.Nodes)
	}
}

// cut cuts links, in parallel so that a partition forms at once rather than link by link,
// and counts each link's cutters: two active faults may cut the same link, and healing one
// must not heal the other's.
func (e *Env) cut(ctx context.Context, links []harness.Link, kind harness.CutKind) error {
	e.n.mu.Lock()
	for _, l := range links {
		e.n.cutRefs[l]++
	}
	e.n.mu.Unlock()
	return parallel(links, func(l harness.Link) error { return e.Cluster.Cut(ctx, l, kind) })
}

// heal heals the links that no other active fault still cuts.
func (e *Env) heal(ctx context.Context, links []harness.Link) error {
	var free []harness.Link
	e.n.mu.Lock()
	for _, l := range links {
		if e.n.cutRefs[l] > 0 {
			e.n.cutRefs[l]--
		}
		if e.n.cutRefs[l] == 0 {
			delete(e.n.cutRefs, l)
			free = append(free, l)
		}
	}
	e.n.mu.Unlock()
	return parallel(free, func(l harness.Link) error { return e.Cluster.Heal(ctx, l) })
}

// toxicName returns a toxic name no other injection of this nemesis uses, so that toxics of
// overlapping faults on one link can be removed one by one.
func (e *Env) toxicName(typ, stream string) string {
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	e.n.toxics++
	return fmt.Sprintf("verity-nemesis-%d-%s-%s", e.n.toxics, typ, stream)
}

// forgetCuts drops the cut counts after heal-all removed every cut.
func (n *Nemesis) forgetCuts() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cutRefs)
}

// parallel runs do for every item at once and joins the errors.
func parallel[T any](items []T, do func(T) error) error {
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Go(func() { errs[i] = do(it) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
