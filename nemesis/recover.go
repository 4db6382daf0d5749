package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
)

// Recovery is how a run's end went: heal-all, then the wait for a healthy cluster. The runner
// must not let a run pass whose cluster did not get healthy: its final reads may have missed
// records that the brokers still hold.
type Recovery struct {
	// Healthy: every node running, every broker registered, every partition's ISR full, in time.
	Healthy bool
	// HealAllIn is how long heal-all took (the faults' own heals, then Restore).
	HealAllIn time.Duration
	// HealthyIn is the time from the end of heal-all to a healthy cluster (or to the timeout).
	HealthyIn time.Duration
	// Err says what went wrong: a heal that failed, or what was still unhealthy at the timeout.
	Err error
}

// UnknownReason is the reason to add to the results' unknown_reasons (and so keep the verdict
// from pass) when the cluster did not recover; empty when it did.
func (r Recovery) UnknownReason() string {
	if r.Healthy {
		return ""
	}
	return fmt.Sprintf("%s (waited %s): %v; final reads may have missed records, so the run cannot pass",
		NotHealthy, r.HealthyIn.Round(time.Millisecond), r.Err)
}

// NotHealthy begins the reason UnknownReason gives, so that a reason saved without its cause can
// be told apart.
const NotHealthy = "the cluster was not healthy after heal-all"

// Recover ends a run's faults: it heals every fault still in place (each recording its own
// heal), then heal-all (harness Restore: every link healed, every toxic removed, paused nodes
// resumed, stopped nodes started), recorded as "heal-all" naming what it found still faulty;
// then waits up to timeout for the cluster to be healthy, recorded as "healthy": ok when it
// is, fail (with what was still wrong) when not. Run it before the final reads.
//
// Recover runs even when ctx is already done (a run interrupted by Ctrl-C must still leave its
// cluster healed): it only keeps ctx's values, and bounds the heals by a few minutes of its own.
func (n *Nemesis) Recover(ctx context.Context, timeout time.Duration) Recovery {
	began := time.Now()
	ctx, cancelHeals := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute+timeout)
	defer cancelHeals()
	var errs []error
	for _, inj := range n.Active() {
		if err := n.Heal(ctx, inj); err != nil {
			errs = append(errs, err)
		}
	}
	e := &Env{Cluster: n.c, Locator: n.loc, Log: n.log, n: n}
	t := Targets{Note: "every link healed, every toxic removed, every node running"}
	for id, s := range n.c.NodeStates() {
		if s != harness.NodeRunning {
			t.Nodes = append(t.Nodes, id)
		}
	}
	slices.Sort(t.Nodes)
	var cut []harness.Link
	for l := range n.c.Cuts() {
		cut = append(cut, l)
	}
	slices.SortFunc(cut, func(a, b harness.Link) int {
		if a.From != b.From {
			return a.From - b.From
		}
		return a.To - b.To
	})
	t.Links = linkPairs(cut)
	if err := e.Do(ctx, history.FHealAll, t, n.c.Restore); err != nil {
		errs = append(errs, err)
	}
	n.forgetCuts()
	r := Recovery{HealAllIn: time.Since(began)}
	healed := time.Now()

	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := e.do(wctx, history.FHealthy, Targets{Note: "all brokers up and answering clients, every ISR full"},
		func(ctx context.Context, _ *Targets) error { return n.waitHealthy(ctx) }, history.Fail)
	r.HealthyIn = time.Since(healed)
	if err != nil {
		errs = append(errs, err)
	} else {
		r.Healthy = true
	}
	if len(errs) > 0 {
		r.Err = errors.Join(errs...)
	}
	n.log.Info("recovered", "healthy", r.Healthy, "heal_all", r.HealAllIn.Round(time.Millisecond),
		"healthy_in", r.HealthyIn.Round(time.Millisecond), "err", r.Err)
	return r
}

// healthAttempt bounds one harness health check inside waitHealthy.
const healthAttempt = 20 * time.Second

// waitHealthy waits for the harness's health (every node running, every broker registered,
// every ISR full, every broker answering a new client) until ctx ends. The check runs in
// bounded attempts with the admin client reset between them, because one stuck connection of
// that client fails every check until it is closed.
func (n *Nemesis) waitHealthy(ctx context.Context) error {
	for {
		actx, cancel := context.WithTimeout(ctx, healthAttempt)
		err := n.c.WaitHealthy(actx)
		cancel()
		if err == nil {
			return nil
		}
		n.c.ResetAdmin()
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", err, ctx.Err())
		}
		if !waitUntil(ctx, time.Now().Add(250*time.Millisecond)) {
			return fmt.Errorf("%w: %w", err, ctx.Err())
		}
	}
}
