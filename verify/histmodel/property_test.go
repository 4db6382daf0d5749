package histmodel

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// seeds is how many seeds each property runs: 2,000 per family, 200 under -short.
func seeds() uint64 {
	if testing.Short() {
		return 200
	}
	return 2000
}

// familySeeds is how many seeds a property runs for family a: the share families, like the
// stuck ones, 500 (100 under -short), every history of theirs having a share group's run;
// the others seeds().
func familySeeds(a guarantee.Anomaly) uint64 {
	if a.OfShareGroups() {
		return liveSeeds()
	}
	return seeds()
}

// maxReports bounds the failures one property reports, so that one wrong rule does not bury
// the others.
const maxReports = 3

// verdictFor is the verdict one finding judged j gives a history with nothing else to say.
func verdictFor(j guarantee.Judgement) results.Verdict {
	switch j {
	case guarantee.Forbidden:
		return results.Fail
	case guarantee.Permitted:
		return results.Pass
	}
	return results.Unknown
}

// cleanProblem says what is wrong with the results of a clean history, or "".
func cleanProblem(r *results.Results) string {
	var s []string
	for _, a := range findings(r) {
		s = append(s, fmt.Sprintf("%s: %d finding(s), first %+v", a, r.Anomalies[a].Count, r.Anomalies[a].Examples[0]))
	}
	if r.Verdict != results.Pass {
		s = append(s, fmt.Sprintf("verdict %s (unknown reasons %v)", r.Verdict, r.UnknownReasons))
	}
	for f, n := range liveFindings(r) {
		s = append(s, fmt.Sprintf("liveness %s: %d finding(s), first %+v", f, n, r.Liveness.Findings[f].Examples[0]))
	}
	return strings.Join(s, "; ")
}

func runClean(t *testing.T, parts func(seed uint64) Parts) {
	reported := 0
	for seed := range seeds() {
		p := parts(seed)
		h, _, err := Build(seed, Options{Parts: p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if problem := cleanProblem(check(t, h)); problem != "" {
			t.Errorf("seed %d, parts %+v: a clean history: %s", seed, p, problem)
			if reported++; reported == maxReports {
				t.Fatal("more failures not shown")
			}
		}
	}
}

// TestPropertyClean: a clean history, with any parts, holds no finding, safety or liveness,
// and passes.
func TestPropertyClean(t *testing.T) {
	t.Parallel()
	runClean(t, func(seed uint64) Parts { return randomParts(seed, Needs{}) })
}

// TestPropertyCleanLeaderUnknown: samples that name no leader (-1) at the current epoch,
// while a killed leader's successor is not known yet, are no metadata loss.
func TestPropertyCleanLeaderUnknown(t *testing.T) {
	t.Parallel()
	runClean(t, func(seed uint64) Parts {
		p := randomParts(seed, Needs{ISR: true})
		p.Nemesis, p.LeaderUnknown = true, true
		return p
	})
}

// TestEveryFamilyHasAMutator: the mutator table has one entry per family of the guarantee
// table, in its order, so that a family added there fails here until it has a mutator.
func TestEveryFamilyHasAMutator(t *testing.T) {
	var listed []guarantee.Anomaly
	for _, m := range Mutators() {
		listed = append(listed, m.Family)
		if m.Inject == nil {
			t.Errorf("%s: the mutator injects nothing", m.Family)
		}
	}
	if !slices.Equal(listed, guarantee.Anomalies()) {
		t.Errorf("mutators for %v, want one for each of %v", listed, guarantee.Anomalies())
	}
	for _, a := range guarantee.Anomalies() {
		if _, ok := MutatorFor(a); !ok {
			t.Errorf("%s: no mutator", a)
		}
	}
}

// mutatedProblem says what is wrong with the results r of a history into which inj was
// injected, or "". The history must hold one finding, of the injected family (and one of each
// family it implies); its evidence
// must include every op the mutator names (the checker may cite more context: an
// acknowledgement beside the send, the sink's final state); its judgement and the verdict must
// be what the guarantee table says of the injection's circumstances.
func mutatedProblem(r *results.Results, inj *Injection) string {
	want := guarantee.Judge(inj.Family, inj.Facts).Judgement
	var s []string
	for _, a := range inj.Implied {
		if got := r.Anomalies[a]; got.Count != 1 || got.Judgement != guarantee.Judge(a, inj.Facts).Judgement {
			s = append(s, fmt.Sprintf("implied %s: %d finding(s) judged %s, want 1 judged %s", a, got.Count, got.Judgement,
				guarantee.Judge(a, inj.Facts).Judgement))
		}
	}
	for _, a := range findings(r) {
		if a != inj.Family && !slices.Contains(inj.Implied, a) {
			s = append(s, fmt.Sprintf("unexpected %s: %d finding(s), first %+v", a, r.Anomalies[a].Count, r.Anomalies[a].Examples[0]))
		}
	}
	got := r.Anomalies[inj.Family]
	switch {
	case got.Count != 1:
		s = append(s, fmt.Sprintf("%s: %d findings, want 1 (examples %+v)", inj.Family, got.Count, got.Examples))
	case got.Judgement != want:
		s = append(s, fmt.Sprintf("%s judged %s, want %s (why: %s)", inj.Family, got.Judgement, want, got.Why))
	default:
		ex := got.Examples[0]
		for _, o := range inj.Ops {
			if !slices.Contains(ex.Ops, o) {
				s = append(s, fmt.Sprintf("%s evidence %v lacks op %d (want all of %v; %s)", inj.Family, ex.Ops, o, inj.Ops, ex.Note))
				break
			}
		}
	}
	if v := verdictFor(want); r.Verdict != v {
		s = append(s, fmt.Sprintf("verdict %s, want %s (unknown reasons %v)", r.Verdict, v, r.UnknownReasons))
	}
	return strings.Join(s, "; ")
}

// TestPropertyMutated: for every family, a history with one injected anomaly of it holds
// exactly that finding, with the mutator's evidence and the table's judgement.
func TestPropertyMutated(t *testing.T) {
	for _, mut := range Mutators() {
		t.Run(string(mut.Family), func(t *testing.T) {
			t.Parallel() // the families share nothing; two cores halve the minute
			reported := 0
			for seed := range familySeeds(mut.Family) {
				h, inj, err := Build(seed, Options{Parts: randomParts(seed, Needs{})}, &mut)
				if err != nil {
					t.Fatal(err)
				}
				if problem := mutatedProblem(check(t, h), inj); problem != "" {
					t.Errorf("seed %d (%s): %s", seed, inj.Variant, problem)
					if reported++; reported == maxReports {
						t.Fatal("more failures not shown")
					}
				}
			}
		})
	}
}

// TestPropertyCleanShare: a clean history with a share group — members that poll, accept,
// release, reject and renew, sometimes crash holding records or stall past their locks, and
// a final drain — holds no finding, and each share partition's start offset is its end.
func TestPropertyCleanShare(t *testing.T) {
	t.Parallel()
	reported := 0
	for seed := range liveSeeds() {
		p := randomParts(seed, Needs{Share: true})
		h, _, err := Build(seed, Options{Parts: p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		problem := cleanProblem(check(t, h))
		if problem == "" {
			problem = shareDrainProblem(h)
		}
		if problem != "" {
			t.Errorf("seed %d, parts %+v: a clean history: %s", seed, p, problem)
			if reported++; reported == maxReports {
				t.Fatal("more failures not shown")
			}
		}
	}
}

// shareDrainProblem says, or "", where h's share group did nothing to judge (no record
// acquired) or its drain stopped short: a partition whose start offset is not the end its
// read_uncommitted final reads reached, so that the clean property does not pass on a group
// the checker could not judge.
func shareDrainProblem(h *History) string {
	polled := false
	ends, starts := map[int32]int64{}, map[int32]int64{}
	for _, op := range h.Ops {
		switch {
		case op.Type != history.OK:
		case op.F == history.FSharePoll:
			sp, err := history.ParseSharePoll(op.Value.Raw)
			polled = polled || (err == nil && len(sp.Records) > 0)
		case op.F == history.FShareState:
			if st, err := history.ParseShareState(op.Value.Raw); err == nil && st.StartOffset != nil {
				starts[st.Partition] = *st.StartOffset
			}
		case op.F == history.FFinalRead && op.Value.FinalRead.Topic == topicShare && op.Value.FinalRead.Isolation == history.ReadUncommitted:
			ends[op.Value.FinalRead.Partition] = max(ends[op.Value.FinalRead.Partition], op.Value.FinalRead.End)
		}
	}
	if !polled {
		return "the share group acquired no record"
	}
	if !maps.Equal(starts, ends) {
		return fmt.Sprintf("share partition start offsets %v, want the ends %v", starts, ends)
	}
	return ""
}

// TestPropertyShareNearMiss: each share family's near miss holds no finding, or (the
// count-regressed one, across a leader change of an unpersisted acquisition) the one finding
// its rule permits, with the mutator's evidence.
func TestPropertyShareNearMiss(t *testing.T) {
	for _, mut := range NearMisses() {
		t.Run(string(mut.Family), func(t *testing.T) {
			t.Parallel()
			reported := 0
			for seed := range liveSeeds() {
				h, inj, err := Build(seed, Options{Parts: randomParts(seed, Needs{})}, &mut)
				if err != nil {
					t.Fatal(err)
				}
				r := check(t, h)
				var problem string
				switch {
				case inj.Clean:
					problem = cleanProblem(r)
				case guarantee.Judge(inj.Family, inj.Facts).Judgement != guarantee.Permitted:
					problem = fmt.Sprintf("the near miss is judged %s by its facts, want permitted", guarantee.Judge(inj.Family, inj.Facts).Judgement)
				default:
					problem = mutatedProblem(r, inj)
				}
				if problem != "" {
					t.Errorf("seed %d (%s): %s", seed, inj.Variant, problem)
					if reported++; reported == maxReports {
						t.Fatal("more failures not shown")
					}
				}
			}
		})
	}
}
