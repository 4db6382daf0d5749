// Package harnesstest starts real clusters inside Go tests: skipped under -short, a failure (never
// a skip) under CI (CI=true, 1, yes or on) when no Docker engine answers, removed by t.Cleanup,
// with node logs under the test's artifact directory.
package harnesstest

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/verity-kafka/verity/harness"
)

// RequireDocker skips t under -short; otherwise it fails t (under CI, see IsCI) or skips it
// (elsewhere) when no Docker engine answers, so that a CI run without an engine can never look
// green.
func RequireDocker(t testing.TB) {
	t.Helper()
	requireDocker(t, testing.Short(), os.Getenv("CI"), harness.Ping)
}

// requireDocker is RequireDocker with its inputs passed in, so that a test can run it without
// -short, with any CI value and any engine.
func requireDocker(t testing.TB, short bool, ci string, ping func(context.Context) error) {
	t.Helper()
	if short {
		t.Skip("needs Docker and a real Kafka cluster; skipped under -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := ping(ctx)
	switch onEngine(ci, err) {
	case engineFail:
		t.Fatalf("CI=%s and Docker is not usable: %v", ci, err)
	case engineSkip:
		t.Skipf("Docker is not usable (%v); run `make engine` first, or `make test` which does", err)
	}
}

// engineAction is what a test that needs Docker does after asking the engine.
type engineAction int

const (
	engineUse  engineAction = iota // the engine answered: go on
	engineSkip                     // no engine, not CI: skip, a developer may not have one
	engineFail                     // no engine under CI: fail, so that the run cannot look green
)

// onEngine decides what a test that needs Docker does, given the CI environment variable's value
// and the error of pinging the engine (nil when it answered).
func onEngine(ci string, pingErr error) engineAction {
	switch {
	case pingErr == nil:
		return engineUse
	case IsCI(ci):
		return engineFail
	}
	return engineSkip
}

// IsCI reports whether v, the value of the CI environment variable, says the tests run under CI.
// CI systems set it to different spellings of true: whatever strconv.ParseBool takes as true
// (1, t, true), and yes, y and on, in any case and with surrounding blanks. Anything else,
// including an unset variable, is not CI.
func IsCI(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	switch v {
	case "yes", "y", "on":
		return true
	}
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// Start starts a cluster for t and removes it when t ends (pass, fail or panic). Node logs go to
// t.ArtifactDir() (kept with -artifacts) unless spec.ArtifactDir is set.
func Start(t testing.TB, spec harness.Spec) *harness.Cluster {
	t.Helper()
	RequireDocker(t)
	if spec.ArtifactDir == "" {
		if tt, ok := t.(interface{ ArtifactDir() string }); ok {
			spec.ArtifactDir = tt.ArtifactDir()
		} else {
			spec.ArtifactDir = t.TempDir()
		}
	}
	if spec.Logger == nil {
		spec.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	ctx := context.Background()
	c, err := harness.Start(ctx, spec)
	if err != nil {
		t.Fatalf("starting the cluster: %v", err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Close(cctx); err != nil {
			t.Errorf("removing the cluster: %v", err)
		}
	})
	t.Logf("cluster %s ready in %s (bootstrap %v, images %s)", c.RunID(), c.ReadyIn.Round(time.Millisecond), c.Bootstrap(), c.Images().Why)
	return c
}

// testWriter sends slog output to t.Log while the test runs.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p[:len(p)-min(1, len(p))]))
	return len(p), nil
}

// Main is TestMain for a package whose tests start clusters: it runs the tests, then fails the
// package if a run that was not there before the tests is still labelled io.verity.run, since
// every test must remove what it started. Runs already there (another Verity run on the same
// engine, or an earlier crash's leftovers) are not this package's and are only mentioned; a
// Verity run started on the same engine while the tests run would be counted.
//
//	func TestMain(m *testing.M) { os.Exit(harnesstest.Main(m)) }
func Main(m *testing.M) int {
	flag.Parse() // testing.Short needs the flags before m.Run parses them
	var before map[string]harness.Removed
	checking := !testing.Short() && harness.Ping(context.Background()) == nil
	if checking {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var err error
		before, err = harness.LeftoversByRun(ctx)
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "checking for leftovers before the tests: %v\n", err)
			return 1
		}
		if len(before) > 0 {
			fmt.Fprintf(os.Stderr, "runs labelled %s before the tests, not counted as theirs: %s\n", harness.Label, strings.Join(slices.Sorted(maps.Keys(before)), ", "))
		}
	}
	code := m.Run()
	if !checking {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	left, err := LeftSince(ctx, before)
	if err != nil {
		fmt.Fprintf(os.Stderr, "checking for leftovers: %v\n", err)
		return 1
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: leftovers labelled %s after the tests: %s (run `make clean`)\n", harness.Label, strings.Join(left, "; "))
		return 1
	}
	fmt.Fprintf(os.Stderr, "no container, network or volume of these tests' runs is left\n")
	return code
}

// LeftSince describes each run labelled io.verity.run now that was not in before (a
// harness.LeftoversByRun taken earlier) or that has more than it had, sorted; none when everything
// started since is removed.
func LeftSince(ctx context.Context, before map[string]harness.Removed) ([]string, error) {
	after, err := harness.LeftoversByRun(ctx)
	if err != nil {
		return nil, err
	}
	var left []string
	for id, r := range after {
		if b, ok := before[id]; !ok || r.Containers > b.Containers || r.Networks > b.Networks || r.Volumes > b.Volumes {
			// More under a run ID that was already there: the tests reused the ID (fixed IDs
			// such as t-reap) and left something under it.
			left = append(left, fmt.Sprintf("%s %+v", id, r))
		}
	}
	slices.Sort(left)
	return left, nil
}
