package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/metrics"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/workloads"
)

// MetricsFile is the run folder's broker metrics, sampled during the run (docs/metrics.md).
const MetricsFile = "metrics.jsonl"

// metricsInterval is the time between two samples of a node: the same order as the ISR watch's,
// short next to a fault, and one small HTTP request per node.
const metricsInterval = time.Second

// sampleMetrics reads every node's metrics each interval, all nodes at once, each bounded by the
// interval (a paused node answers nothing: a sample with its error), and writes them to path,
// stamped on the history's time base, until ctx ends.
func sampleMetrics(ctx context.Context, c *harness.Cluster, rec workloads.Recorder, path string, every time.Duration) error {
	source, err := c.MetricsSource()
	if err != nil {
		return err
	}
	w, err := metrics.Create(path, metrics.Header{IntervalMS: every.Milliseconds(), Source: source, Metrics: metrics.All()})
	if err != nil {
		return err
	}
	nodes := slices.Compact(slices.Sorted(slices.Values(append(c.Brokers(), c.Controllers()...))))
	tick := time.NewTicker(every)
	defer tick.Stop()
	var werr error
	for werr == nil {
		at := rec.Since().Milliseconds()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, id := range nodes {
			wg.Go(func() {
				sctx, cancel := context.WithTimeout(ctx, every)
				defer cancel()
				s := metrics.Sample{TimeMS: at, Node: id}
				if v, err := c.ReadMetrics(sctx, id); err != nil {
					s.Error = err.Error()
				} else {
					s.Values = v
				}
				if ctx.Err() != nil {
					return // the run ended during the read: not the node's doing
				}
				mu.Lock()
				werr = errors.Join(werr, w.Write(s))
				mu.Unlock()
			})
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return errors.Join(werr, w.Close())
		case <-tick.C:
		}
	}
	return errors.Join(werr, w.Close())
}

// withMetrics gives the check the run folder's metrics.jsonl, when it has one.
func withMetrics(opts *verify.Options, dir string) error {
	path := filepath.Join(dir, MetricsFile)
	m, err := metrics.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	opts.Metrics, opts.MetricsFile = m, MetricsFile
	return nil
}
