package runner

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verity-kafka/verity/nemesis"
	"github.com/verity-kafka/verity/verify/results"
)

// A run's reasons keep their causes through a rejudge; a results.json written before causes
// existed gets them from its reasons' words.
func TestRunUnknownKeepsCauses(t *testing.T) {
	withCauses := &results.Results{RunUnknownReasons: []string{"a", "b"},
		RunUnknownCauses: []results.UnknownCause{results.CauseClusterNotHealthy, results.CauseWorkloadError}}
	unhealthy := nemesis.Recovery{HealthyIn: 2 * time.Minute, Err: errors.New("broker 2 not registered")}.UnknownReason()
	older := &results.Results{RunUnknownReasons: []string{unhealthy, "the run did not complete as specified: y"}}
	for name, prev := range map[string]*results.Results{"with causes": withCauses, "written before causes": older} {
		res := &results.Results{Verdict: results.Pass}
		addRun(res, nil, runUnknown(prev))
		want := []results.UnknownCause{results.CauseClusterNotHealthy, results.CauseWorkloadError}
		if !slices.Equal(res.RunUnknownCauses, want) || !slices.Equal(res.UnknownCauses, want) || res.Verdict != results.Unknown {
			t.Errorf("%s: run causes %v, causes %v, verdict %s; want %v and unknown", name, res.RunUnknownCauses, res.UnknownCauses, res.Verdict, want)
		}
		if !slices.Equal(res.RunUnknownReasons, prev.RunUnknownReasons) {
			t.Errorf("%s: reasons %q, want %q", name, res.RunUnknownReasons, prev.RunUnknownReasons)
		}
	}
}

// A fault step that failed makes a pass unknown (nemesis-failed) and leaves a finding a fail;
// a recovered cluster, faults carried out and workloads as specified add nothing.
func TestExecutionUnknown(t *testing.T) {
	healthy := nemesis.Recovery{Healthy: true, HealthyIn: time.Second}
	if u := executionUnknown(healthy, nil, nil); len(u) != 0 {
		t.Fatalf("a clean execution gave %v", u)
	}
	stepErr := errors.New("step 2 (kill leader-of t/0 at 20s for 20s): no leader of t/0 known")
	for _, v := range []results.Verdict{results.Pass, results.Fail} {
		res := &results.Results{Verdict: v}
		addRun(res, nil, executionUnknown(healthy, stepErr, nil))
		want := results.Unknown
		if v == results.Fail {
			want = results.Fail
		}
		if res.Verdict != want || !slices.Equal(res.UnknownCauses, []results.UnknownCause{results.CauseNemesisFailed}) {
			t.Errorf("%s with a failed step: verdict %s, causes %v; want %s and [nemesis-failed]", v, res.Verdict, res.UnknownCauses, want)
		}
		if len(res.UnknownReasons) != 1 || !strings.Contains(res.UnknownReasons[0], "no leader of t/0 known") {
			t.Errorf("%s: reasons %q do not say which step failed", v, res.UnknownReasons)
		}
	}
}
