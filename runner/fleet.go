package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/scenarios"
)

// fleet runs the units of a matrix or a suite on clusters it starts and reuses: units of one
// cluster shape share a cluster, each run on topics, groups and transactional.ids of its own.
type fleet struct {
	command  string // "matrix" or "suite", for progress lines
	out      string
	harness  harness.Spec
	progress io.Writer
	log      *slog.Logger

	c     *harness.Cluster
	shape clusterShape
	// started counts the clusters started; startClose sums their start and close times.
	started    int
	startClose time.Duration
}

// ranUnit is one unit the fleet ran: its outcome, or why it did not complete.
type ranUnit struct {
	unit    unit
	outcome *Outcome
	err     error
}

// run runs units, those of one shape together so that each shape's cluster starts once (the
// units otherwise keep their order). A run that fails to run is recorded with its error and the
// next starts on a new cluster, in case the old one is the cause; a run that changed its
// cluster's shape (a rolling upgrade) leaves the cluster to no other run. An interruption, or a
// cluster that does not start, stops the fleet: what ran so far is returned with the error.
func (f *fleet) run(ctx context.Context, units []unit, began time.Time) ([]ranUnit, error) {
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	order := slices.Clone(units)
	slices.SortStableFunc(order, func(a, b unit) int {
		return strings.Compare(fmt.Sprint(a.cell.shape), fmt.Sprint(b.cell.shape))
	})
	defer f.closeCluster(ctx)
	var ran []ranUnit
	for i, u := range order {
		if ctx.Err() != nil {
			return ran, fmt.Errorf("%s: interrupted after %d of %d runs: %w", f.command, i, len(order), ctx.Err())
		}
		if err := f.clusterFor(ctx, u.cell); err != nil {
			return ran, err
		}
		r := f.runOne(ctx, u, i+1, len(order), began)
		ran = append(ran, r)
		switch {
		case r.err != nil:
			f.closeCluster(ctx) // the next run starts on a new cluster
		case specShape(f.c.Spec()) != f.shape:
			f.log.Info("a run changed its cluster: removing it", "run", u.cell.label, "shape", describeShape(specShape(f.c.Spec())))
			f.closeCluster(ctx)
		default:
			dropTopics(ctx, f.c, r.outcome.Scenario, f.log)
		}
	}
	return ran, nil
}

// clusterFor makes the fleet's cluster one of cl's shape: the running one, or a new one.
func (f *fleet) clusterFor(ctx context.Context, cl cell) error {
	if f.c != nil && f.shape == cl.shape {
		return nil
	}
	f.closeCluster(ctx)
	hs := clusterSpec(f.harness, cl.scenario.Scenario)
	hs.ArtifactDir = filepath.Join(f.out, "clusters", strconv.Itoa(f.started+1))
	if hs.Logger == nil {
		hs.Logger = f.log
	}
	if hs.RunID == "" {
		hs.RunID = harness.NewRunID()
	}
	f.say("starting cluster %d (%s), run id %s", f.started+1, describeShape(cl.shape), hs.RunID)
	t0 := time.Now()
	c, err := harness.Start(ctx, hs)
	f.startClose += time.Since(t0)
	if err != nil {
		return fmt.Errorf("%s: %w", f.command, err)
	}
	f.c, f.shape = c, cl.shape
	f.started++
	return nil
}

// runOne runs unit u, the n-th of total, on the fleet's cluster.
func (f *fleet) runOne(ctx context.Context, u unit, n, total int, began time.Time) ranUnit {
	cl, k := u.cell, u.k
	s := cl.scenario
	s.Seed = cl.scenario.Seed + int64(k-1) // a seed is valid whatever its value
	dir := filepath.Join(f.out, cl.dir, fmt.Sprintf("run-%d", k))
	f.say("run %d/%d  %s  run %d (seed %d)  %s elapsed", n, total, cl.label, k, s.Seed, time.Since(began).Round(time.Second))
	o, err := Run(ctx, s, Options{Out: dir, Cluster: f.c, Fresh: fmt.Sprintf("-c%dr%d", u.ci+1, k), Progress: f.progress, Notes: cl.notes,
		ProgressEvery: 15 * time.Second, Log: f.log})
	if err != nil {
		f.log.Warn(f.command+" run failed", "cell", cl.label, "run", k, "err", err)
		f.say("run failed: %s", oneLine(err.Error()))
		return ranUnit{unit: u, outcome: o, err: err}
	}
	f.say("%s run %d: %s in %s", cl.label, k, o.Verdict(), o.Wall.Round(time.Second))
	return ranUnit{unit: u, outcome: o}
}

// closeCluster removes the fleet's cluster, if it has one.
func (f *fleet) closeCluster(ctx context.Context) {
	if f.c == nil {
		return
	}
	t0 := time.Now()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := f.c.Close(cctx); err != nil {
		f.log.Warn("removing a cluster", "err", err)
	}
	f.startClose += time.Since(t0)
	f.c = nil
}

func (f *fleet) say(format string, args ...any) {
	if f.progress != nil {
		fmt.Fprintf(f.progress, "verity "+f.command+": "+format+"\n", args...)
	}
}

// dropTopics deletes a finished run's topics, so that later runs on the cluster do not pay
// for replicating and checking them. Best effort: a topic left behind costs only resources.
func dropTopics(ctx context.Context, c *harness.Cluster, s scenarios.Resolved, log *slog.Logger) {
	adm, err := c.Admin()
	if err != nil {
		log.Warn("deleting a run's topics", "err", err)
		return
	}
	for _, t := range s.Topics {
		if err := adm.DeleteTopic(t.Name); err != nil {
			log.Warn("deleting a run's topic", "topic", t.Name, "err", err)
		}
	}
}
