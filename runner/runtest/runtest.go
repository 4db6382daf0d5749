// Package runtest runs Verity scenarios inside Go tests: one call starts a real cluster, runs
// the scenario with its faults, judges the history and fails the test when a guarantee Kafka
// documents was violated. Under -short it skips; with CI=true and no Docker engine it fails.
//
//	func TestDefaultScenario(t *testing.T) {
//		s := scenarios.Default()
//		s.Duration = scenarios.Duration(30 * time.Second)
//		o := runtest.Run(t, s)
//		t.Logf("verdict %s, report %s", o.Verdict(), o.Report.HTML)
//	}
package runtest

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
	"github.com/verity-kafka/verity/runner"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// Options tune Run; the zero value is the default.
type Options struct {
	// Out receives the artifacts; default t.ArtifactDir() (kept with go test -artifacts).
	Out string
	// Cluster, when set, is reused (it must have the scenario's shape), with topics, groups
	// and transactional.ids of the run's own (named after the test); by default the run
	// starts its own cluster and removes it.
	Cluster *harness.Cluster
	// AllowUnknown keeps an unknown verdict (the run could not be fully judged: the cluster
	// did not recover, a final read did not finish) from failing the test.
	AllowUnknown bool
	// Timeout bounds the whole run; default the scenario's duration plus 10 minutes.
	Timeout time.Duration
}

// Run runs s inside t and returns what it found. It fails t when the run could not be carried
// out, when the verdict is fail (a forbidden anomaly: the message names each with the op
// indices that prove it), and, unless opts.AllowUnknown, when the verdict is unknown.
func Run(t testing.TB, s scenarios.Scenario, opts ...Options) *runner.Outcome {
	t.Helper()
	harnesstest.RequireDocker(t)
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Out == "" {
		tt, ok := t.(interface{ ArtifactDir() string })
		if !ok {
			t.Fatal("runtest.Run: give Options.Out: this testing.TB has no ArtifactDir")
		}
		o.Out = tt.ArtifactDir()
	}
	r, err := s.Resolve()
	if err != nil {
		t.Fatalf("scenario %s: %v", s.Name, err)
	}
	if o.Timeout <= 0 {
		o.Timeout = s.Duration.Std() + 10*time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	log := slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var fresh string
	if o.Cluster != nil {
		// Another run on the cluster may have used the scenario's names: its records would be
		// read back into this run's history.
		h := fnv.New32a()
		h.Write([]byte(t.Name()))
		fresh = fmt.Sprintf("-t%08x", h.Sum32())
	}
	out, err := runner.Run(ctx, r, runner.Options{Out: o.Out, Cluster: o.Cluster, Fresh: fresh, Log: log,
		Harness: harness.Spec{Logger: log}, Progress: logWriter{t}, ProgressEvery: 15 * time.Second})
	if err != nil {
		t.Fatalf("scenario %s (seed %d) could not run: %v", s.Name, s.Seed, err)
	}
	t.Logf("scenario %s, seed %d: %s; artifacts in %s", s.Name, s.Seed, out.Verdict(), out.Dir)
	switch v := out.Verdict(); {
	case v == results.Fail:
		t.Errorf("scenario %s (seed %d) violated a documented guarantee:\n%s\nreport: %s", s.Name, s.Seed, Forbidden(out.Results), out.Report.HTML)
	case v == results.Unknown && !o.AllowUnknown:
		t.Errorf("scenario %s (seed %d) could not be judged: %s\nreport: %s", s.Name, s.Seed, strings.Join(out.Results.UnknownReasons, "; "), out.Report.HTML)
	}
	return out
}

// Forbidden describes the forbidden anomalies of r, one per line, with the op indices of the
// first examples.
func Forbidden(r *results.Results) string {
	var b strings.Builder
	for name, a := range r.Anomalies {
		if a.Count == 0 || (a.Forbidden == 0 && a.Judgement != guarantee.Forbidden) {
			continue
		}
		fmt.Fprintf(&b, "  %s ×%d: %s", name, a.Count, a.Why)
		for i, ex := range a.Examples {
			if i == 3 {
				break
			}
			fmt.Fprintf(&b, "\n    ops %v: %s", ex.Ops, ex.Note)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// logWriter sends progress lines and warnings to the test log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
