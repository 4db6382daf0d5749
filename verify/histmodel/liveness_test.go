package histmodel

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/results"
)

// liveSeeds is how many seeds each liveness property runs per family: 500, 100 under -short.
func liveSeeds() uint64 {
	if testing.Short() {
		return 100
	}
	return 500
}

// liveFindings lists the liveness families with findings in r, with their counts.
func liveFindings(r *results.Results) map[results.LivenessFamily]int {
	out := map[results.LivenessFamily]int{}
	if r.Liveness == nil {
		return out
	}
	for f, fs := range r.Liveness.Findings {
		if fs.Count > 0 {
			out[f] = fs.Count
		}
	}
	return out
}

// liveProblem says what is wrong with the liveness findings of r for inj, or "": with want,
// exactly one finding, of inj's family, whose evidence includes inj's ops; without, none.
func liveProblem(r *results.Results, inj *LiveInjection, want bool) string {
	var s []string
	for f, n := range liveFindings(r) {
		if want && f == inj.Family {
			continue
		}
		s = append(s, fmt.Sprintf("unexpected %s: %d finding(s), first %+v", f, n, r.Liveness.Findings[f].Examples[0]))
	}
	if want {
		got := r.Liveness.Findings[inj.Family]
		if got.Count != 1 {
			s = append(s, fmt.Sprintf("%s: %d findings, want 1 (examples %+v)", inj.Family, got.Count, got.Examples))
		} else if ex := got.Examples[0]; !containsAll(ex.Ops, inj.Ops) {
			s = append(s, fmt.Sprintf("%s evidence %v lacks some of %v (%s)", inj.Family, ex.Ops, inj.Ops, ex.Note))
		} else if d := time.Duration(ex.StuckMS*float64(time.Millisecond)) - inj.Wait; d < 0 || d > time.Second {
			// What passes after the last heal while the partition could serve is the wait, and
			// the few steps of 1 ms around it.
			s = append(s, fmt.Sprintf("%s stuck %.0f ms, want the wait %s and a few ms (%s)", inj.Family, ex.StuckMS, inj.Wait, ex.Note))
		}
	}
	return strings.Join(s, "; ")
}

func containsAll(have, want []int64) bool {
	for _, o := range want {
		if !slices.Contains(have, o) {
			return false
		}
	}
	return true
}

// safetyProblem says how a liveness mutator changed the safety side of r, or "": a stuck
// client is no anomaly, and the verdict stays the clean history's pass.
func safetyProblem(r *results.Results) string {
	var s []string
	for _, a := range findings(r) {
		s = append(s, fmt.Sprintf("safety %s: %d finding(s), first %+v", a, r.Anomalies[a].Count, r.Anomalies[a].Examples[0]))
	}
	if r.Verdict != results.Pass {
		s = append(s, fmt.Sprintf("verdict %s (unknown reasons %v)", r.Verdict, r.UnknownReasons))
	}
	return strings.Join(s, "; ")
}

// healAfter is how far into the stall the odd seeds' broker is started again, and how long
// the stalled partition has no leader first for seeds 2 mod 4: the stall is then longer than
// StuckAfter in the near miss too, and only its part after the heal, or while the partition
// could serve, counts.
const healAfter = 5 * time.Second

// runLive builds every liveness mutator's histories over the seeds (a broker killed as the
// stall begins and started healAfter into it for odd seeds, the partition without a leader
// for healAfter first for seeds 2 mod 4) and reports what problem says of each.
func runLive(t *testing.T, b LiveBuild, problem func(r *results.Results, inj *LiveInjection) string) {
	for _, mut := range LivenessMutators() {
		t.Run(string(mut.Family), func(t *testing.T) {
			t.Parallel()
			reported := 0
			for seed := range liveSeeds() {
				b := b
				switch seed % 4 {
				case 1, 3:
					b.HealAfter = healAfter
				case 2:
					b.UnavailableFor = healAfter
				}
				h, inj, err := BuildLive(seed, Options{Parts: randomParts(seed, Needs{})}, mut, b)
				if err != nil {
					t.Fatal(err)
				}
				r := check(t, h)
				if p := strings.Join(slices.DeleteFunc([]string{safetyProblem(r), problem(r, inj)}, func(s string) bool { return s == "" }), "; "); p != "" {
					t.Errorf("seed %d (%s): %s", seed, inj.Variant, p)
					if reported++; reported == maxReports {
						t.Fatal("more failures not shown")
					}
				}
			}
		})
	}
}

// TestPropertyStuck: a client that goes StuckAfter and two seconds without progress, with
// work available, after the last heal, is reported stuck, once, with the mutator's evidence;
// the safety findings and verdict stay those of the clean history, and with no bound stated
// the liveness verdict is not-stated.
func TestPropertyStuck(t *testing.T) {
	runLive(t, LiveBuild{}, func(r *results.Results, inj *LiveInjection) string {
		p := liveProblem(r, inj, true)
		if v := r.Liveness.Verdict; v != results.LivenessNotStated {
			p += fmt.Sprintf("; liveness verdict %s, want %s", v, results.LivenessNotStated)
		}
		return p
	})
}

// TestPropertyStuckNearMiss: the same with StuckAfter less two seconds is no finding.
func TestPropertyStuckNearMiss(t *testing.T) {
	runLive(t, LiveBuild{Near: true}, func(r *results.Results, inj *LiveInjection) string {
		return liveProblem(r, inj, false)
	})
}

// TestPropertyStuckBound: with max_stall stated at StuckAfter, the stuck client's stall
// breaks it: the run fails on liveness alone.
func TestPropertyStuckBound(t *testing.T) {
	bound := verify.StuckAfter.Milliseconds()
	runLive(t, LiveBuild{Bounds: &history.LivenessBounds{MaxStallMS: &bound}}, func(r *results.Results, inj *LiveInjection) string {
		var s []string
		if o := r.Outcome(); o != results.OutcomeLivenessFail {
			s = append(s, fmt.Sprintf("outcome %q, want %q", o, results.OutcomeLivenessFail))
		}
		if r.Liveness.Verdict != results.LivenessFail {
			s = append(s, fmt.Sprintf("liveness verdict %s (reasons %v), want fail", r.Liveness.Verdict, r.Liveness.Reasons))
		}
		ms := r.Liveness.Findings[results.MaxStall]
		if ms.Count == 0 || !slices.ContainsFunc(ms.Examples, func(f results.LivenessFinding) bool { return containsAll(f.Ops, inj.Ops) }) {
			s = append(s, fmt.Sprintf("no max-stall finding with evidence %v (%+v)", inj.Ops, ms.Examples))
		}
		return strings.Join(s, "; ")
	})
}

// TestEveryLivenessFamilyHasAMutator: one liveness mutator per stuck family, in its order.
func TestEveryLivenessFamilyHasAMutator(t *testing.T) {
	var listed []results.LivenessFamily
	for _, m := range LivenessMutators() {
		listed = append(listed, m.Family)
		if m.Inject == nil {
			t.Errorf("%s: the mutator injects nothing", m.Family)
		}
	}
	if !slices.Equal(listed, results.StuckFamilies()) {
		t.Errorf("liveness mutators for %v, want one for each of %v", listed, results.StuckFamilies())
	}
	if StuckWait <= verify.StuckAfter || NearWait >= verify.StuckAfter || NearWait < verify.MinStall || StuckWait-verify.StuckAfter < time.Second {
		t.Errorf("waits %s and %s do not straddle StuckAfter %s", StuckWait, NearWait, verify.StuckAfter)
	}
}
