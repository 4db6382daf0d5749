package verify

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// The verdict: fail when any anomaly the table forbids was found; unknown when the history
// could not be fully checked (final reads missing or incomplete, a torn history that ends
// before them, findings under settings no guarantee covers); pass otherwise.

func verdictOf(r *results.Results) results.Verdict {
	for _, a := range r.Anomalies {
		if a.Forbidden > 0 || (a.Judgement == guarantee.Forbidden && a.Count > 0) {
			return results.Fail
		}
	}
	if len(r.UnknownReasons) > 0 {
		return results.Unknown
	}
	return results.Pass
}

// unknownReasons lists what kept the history from being fully checked.
func (c *Checker) unknownReasons() []results.UnknownReason {
	var out []results.UnknownReason
	add := func(cause results.UnknownCause, text string) {
		out = append(out, results.UnknownReason{Cause: cause, Text: text})
	}
	if c.ops == 0 {
		return []results.UnknownReason{{Cause: results.CauseHistoryMalformed, Text: "the history has no ops"}}
	}
	if c.oversized {
		add(results.CauseHistoryMalformed, fmt.Sprintf("the history has more than %d ops; the rest were not checked", uint64(none)))
	}
	out = append(out, c.shareUnknown()...)
	if unread := c.sinksUnread(); len(unread) > 0 {
		add(results.CauseSinkNotJudged, fmt.Sprintf("the final state of sink(s) %s was not read: their side effects were not checked", strings.Join(unread, ", ")))
	}
	for _, why := range c.sinks.unknown {
		add(results.CauseSinkNotJudged, why)
	}
	anyFinal := false
	for _, p := range c.parts.ps[1:] {
		anyFinal = anyFinal || p.final[isoRU].done() || p.final[isoRC].done()
	}
	if !anyFinal {
		if c.torn > 0 {
			add(results.CauseFinalReadIncomplete, fmt.Sprintf("no final reads: the history ends at a torn line %d, before them", c.torn))
			return out
		}
		add(results.CauseFinalReadIncomplete, "no final reads in the history: nothing to judge lost writes against")
		return out
	}
	var missing, incomplete, noRC, holes []string
	for _, p := range c.parts.ps[1:] {
		ru, rc := &p.final[isoRU], &p.final[isoRC]
		switch {
		case p.needsFinal && !ru.done() && !rc.done():
			missing = append(missing, p.String())
			continue
		case p.committedTxn && p.needsFinal && !rc.done():
			noRC = append(noRC, p.String())
		}
		for iso, fc := range []*finalCov{ru, rc} {
			if !fc.done() {
				continue
			}
			name := isoName(int8(iso))
			switch {
			case fc.incomplete:
				incomplete = append(incomplete, fmt.Sprintf("%s (%s, op %d)", p.String(), name, c.opIndex(fc.incOrd)))
			case !fc.complete():
				holes = append(holes, fmt.Sprintf("%s (%s)", p.String(), name))
			}
		}
	}
	if len(missing) > 0 {
		add(results.CauseFinalReadIncomplete, "no final read of "+nameList(missing))
	}
	if len(incomplete) > 0 {
		add(results.CauseFinalReadIncomplete, "incomplete final reads of "+nameList(incomplete))
	}
	if len(holes) > 0 {
		add(results.CauseFinalReadIncomplete, "final reads with gaps between their ranges: "+nameList(holes))
	}
	if len(noRC) > 0 {
		add(results.CauseFinalReadIncomplete, "transactions wrote to partitions with no read_committed final read: "+nameList(noRC))
	}
	if len(c.unjudged) > 0 {
		var beyond []string
		for _, tp := range slices.Sorted(maps.Keys(c.unjudged)) {
			p := c.parts.ps[tp]
			end := ""
			if rc := &p.final[isoRC]; len(rc.scans) > 0 {
				end = fmt.Sprintf("; the scan ends at offset %d", rc.last().end)
			}
			beyond = append(beyond, fmt.Sprintf("%s (%d records%s)", p.String(), c.unjudged[tp], end))
		}
		add(results.CauseFinalReadIncomplete, "committed transactional records lie past the end of the read_committed final read "+
			"(which stops at the last stable offset) or were never placed, so their read_committed visibility "+
			"is unknown: "+nameList(beyond))
	}
	return out
}

// nameList joins names, shortening long lists.
func nameList(names []string) string {
	const show = 6
	if len(names) <= show {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:show], ", "), len(names)-show)
}
