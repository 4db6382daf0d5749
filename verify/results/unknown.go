package results

import "slices"

// UnknownCause is why a verdict is unknown, in a fixed vocabulary, so that a nightly can tell a
// harness problem from a cluster that did not recover without reading the reasons' text.
type UnknownCause string

// The causes, in the order a table shows them.
const (
	// CauseHistoryMalformed: the history could not be read whole (no ops, malformed lines,
	// more ops than the checker takes).
	CauseHistoryMalformed UnknownCause = "history-malformed"
	// CauseFinalReadIncomplete: a partition's final reads are missing, incomplete, have gaps,
	// or stop before records whose visibility the verdict needs.
	CauseFinalReadIncomplete UnknownCause = "final-read-incomplete"
	// CauseSinkNotJudged: a sink's final state was not read, or its outbox could not be judged.
	CauseSinkNotJudged UnknownCause = "sink-not-judged"
	// CauseNoGuarantee: a finding under settings no documented guarantee covers.
	CauseNoGuarantee UnknownCause = "no-documented-guarantee"
	// CauseClusterNotHealthy: the cluster was not healthy after the faults were healed.
	CauseClusterNotHealthy UnknownCause = "cluster-not-healthy"
	// CauseNemesisFailed: a fault of the scenario's plan was not injected or not healed, so
	// the run did not test what its scenario says.
	CauseNemesisFailed UnknownCause = "nemesis-failed"
	// CauseWorkloadError: the run's workloads, final reads or sinks did not complete as
	// specified.
	CauseWorkloadError UnknownCause = "workload-error"
	// CauseHarnessError: the harness could not carry the run out (the engine failed, the
	// cluster did not start, the history could not be checked), so nothing was judged; a suite
	// gives it to the runs that did not complete for a reason other than an interruption.
	CauseHarnessError UnknownCause = "harness-error"
)

// UnknownCauses lists every cause in table order.
func UnknownCauses() []UnknownCause {
	return []UnknownCause{CauseHistoryMalformed, CauseFinalReadIncomplete, CauseSinkNotJudged, CauseNoGuarantee,
		CauseClusterNotHealthy, CauseNemesisFailed, CauseWorkloadError, CauseHarnessError}
}

// UnknownReason is one reason a verdict is unknown: its cause and the words that explain it.
type UnknownReason struct {
	Cause UnknownCause
	Text  string
}

// AddUnknown adds reasons to r's unknown_reasons and their causes to unknown_causes (each
// cause once, in table order), and makes a pass unknown.
func (r *Results) AddUnknown(us ...UnknownReason) {
	for _, u := range us {
		r.UnknownReasons = append(r.UnknownReasons, u.Text)
		if !slices.Contains(r.UnknownCauses, u.Cause) {
			r.UnknownCauses = append(r.UnknownCauses, u.Cause)
		}
	}
	slices.SortFunc(r.UnknownCauses, func(a, b UnknownCause) int {
		return slices.Index(UnknownCauses(), a) - slices.Index(UnknownCauses(), b)
	})
	if len(us) > 0 && r.Verdict == Pass {
		r.Verdict = Unknown
	}
}
