package runner

import (
	"errors"
	"slices"
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
