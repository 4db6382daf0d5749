package guarantee

import (
	"fmt"
	"slices"
	"strings"
)

// KnownIssue names a way Kafka breaks a promise the table calls forbidden, shown and explained
// before: the finding stays forbidden (the run fails, for the promise is broken), and it says
// which issue it is, so that a nightly can tell a known break from a new one.
type KnownIssue string

// The known issues.
const (
	// ResendAfterSnapshotReload: see KnownIssues.
	ResendAfterSnapshotReload KnownIssue = "resend-after-snapshot-reload"
	// ShareCountForgotten: see KnownIssues.
	ShareCountForgotten KnownIssue = "share-count-forgotten"
)

// Known is one known issue: the forbidden findings it explains and why they happen.
type Known struct {
	Issue KnownIssue
	// Anomalies are the families whose findings it explains.
	Anomalies []Anomaly
	// When is the condition in words, for listings; Match is it in code, over the same Facts
	// the table's rows read.
	When  string
	Match func(Facts) bool
	// About says what Kafka does, and Shown where it was shown (docs/guarantees.md links them).
	About string
	Shown string
}

// KnownIssues lists every known issue. A finding the table judges forbidden is explained by the
// first that lists its family and whose Match fits it.
func KnownIssues() []Known {
	return []Known{{
		Issue:     ResendAfterSnapshotReload,
		Anomalies: []Anomaly{Duplicate},
		When:      "an idempotent send with more than one request in flight, to a partition every replica of which lost power at once",
		Match:     resendAfterReload,
		About: "a leader that starts after every replica lost power recovers its producer state from the log and " +
			"reloads it from a producer snapshot, which keeps only each producer's last batch where memory kept five; " +
			"a retry of an earlier batch that was appended but not acknowledged is then answered " +
			"OUT_OF_ORDER_SEQUENCE_NUMBER instead of being recognised, and a client that recovers by bumping its epoch " +
			"(Kafka's Java client, KIP-360) or taking a new producer id (franz-go) sends its in-flight batches again " +
			"from sequence 0, so those already in the log are appended twice; with one request in flight the only " +
			"unanswered batch is the last, which the snapshot keeps",
		Shown: "power-loss-all-replicas-flush1 under Kafka's Java client (docs/evidence/catalogue-java-seed4)",
	}, {
		Issue:     ShareCountForgotten,
		Anomalies: []Anomaly{ShareCountRegressed, ShareOverDelivered},
		When:      "a share group's delivery count that did not rise, or deliveries past the limit, after a member holding the record crashed, in a run with faults, the share partition's leader unchanged",
		Match:     shareCountForgotten,
		About: "a share-partition leader drops a group's share partitions when the group's last member on that broker " +
			"disconnects (onGroupEmpty), at once, while the release of that member's records is still being written to " +
			"__share_group_state; a write that failed with a retriable error (the share coordinator down, moving, or cut " +
			"off) waits its back-off first. The next fetch rebuilds the share partition from the group's state without the " +
			"release, and acquisitions are never persisted, so the crashed member's records come back with the count " +
			"before their last delivery: a poison record that crashes its consumer goes round past the delivery limit",
		Shown: "share-power-loss on Kafka 4.3.1, then the built-in share-count-forgotten on 4.2.2, 4.3.1 and 4.4.0 " +
			"(docs/evidence/kafka-share-count-repeat-after-crash)",
	}}
}

// shareCountForgotten: a share finding about deliveries with a crash of a member that held the
// record in between, in a run whose faults could fail a state write, the leader unchanged (a
// change would have permitted it).
func shareCountForgotten(f Facts) bool { return f.HolderLeft && len(f.Faults.Kinds) > 0 }

// resendAfterReload: a plain idempotent send with more than one request in flight, on a
// partition whose every replica lost its power in one event.
func resendAfterReload(f Facts) bool {
	return f.HasWriter && f.WriterKind == WriterSend && f.Producer.Idempotent && f.Producer.MaxInFlight > 1 &&
		f.Faults.PowerLossNodes > 0 && f.Topic.RF > 0 && f.Faults.PowerLossNodes >= f.Topic.RF
}

// knownFor is the known issue that explains a forbidden finding of a under f; "" when none does.
func knownFor(a Anomaly, f Facts) KnownIssue {
	for _, k := range KnownIssues() {
		if slices.Contains(k.Anomalies, a) && k.Match(f) {
			return k.Issue
		}
	}
	return ""
}

// LookupKnown finds a known issue by name.
func LookupKnown(i KnownIssue) (Known, bool) {
	ks := KnownIssues()
	j := slices.IndexFunc(ks, func(k Known) bool { return k.Issue == i })
	if j < 0 {
		return Known{}, false
	}
	return ks[j], true
}

// UnmarshalText reads a known issue's name, so that results.json cannot name one the table
// does not know.
func (i *KnownIssue) UnmarshalText(b []byte) error {
	if _, ok := LookupKnown(KnownIssue(b)); ok {
		*i = KnownIssue(b)
		return nil
	}
	names := make([]string, 0, len(KnownIssues()))
	for _, k := range KnownIssues() {
		names = append(names, string(k.Issue))
	}
	return fmt.Errorf("known issue %q: want one of %s", b, strings.Join(names, ", "))
}
