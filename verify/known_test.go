package verify

import (
	"slices"
	"testing"

	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// A forbidden duplicate on a partition every replica of which lost power at once, written with
// five requests in flight, is explained by a known issue: it stays forbidden and fails the run,
// and its entry, its example and the run's OnlyKnown say which issue it is. A duplicate the
// issue does not explain makes OnlyKnown nil, so that a new break never hides behind it.
func TestKnownIssueMarksItsFindings(t *testing.T) {
	dup := func(h *hb, part int32, v string) (send int64) {
		_, send = h.send(1, rec("t", part, v), OK, 0)
		h.finalBoth("t", part, 0, 2, at(rec("t", part, v), 0), at(rec("t", part, v), 1))
		return send
	}
	t.Run("every replica of the partition lost power", func(t *testing.T) {
		h := newHB()
		h.replicas("t", 0, 1, 2, 3)
		h.nemesisEvent("power-loss", `{"nodes":[1,2,3]}`, OK)
		send := dup(h, 0, "1-1")
		r := h.check(flushEach())
		d := r.Anomalies[guarantee.Duplicate]
		if r.Verdict != results.Fail || d.Forbidden != 1 || d.Known != 1 || !slices.Equal(d.KnownIssues, []guarantee.KnownIssue{guarantee.ResendAfterSnapshotReload}) {
			t.Fatalf("verdict %s, duplicate %+v: want fail, 1 forbidden, explained by %s", r.Verdict, d, guarantee.ResendAfterSnapshotReload)
		}
		if e := d.Examples[0]; e.KnownIssue != guarantee.ResendAfterSnapshotReload || !slices.Contains(e.Ops, send) {
			t.Errorf("example %+v: want the known issue and the send's op %d", e, send)
		}
		if got := r.OnlyKnown(); !slices.Equal(got, []guarantee.KnownIssue{guarantee.ResendAfterSnapshotReload}) {
			t.Errorf("OnlyKnown %v", got)
		}
	})
	t.Run("one request in flight", func(t *testing.T) {
		h := newHB()
		h.replicas("t", 0, 1, 2, 3)
		h.nemesisEvent("power-loss", `{"nodes":[1,2,3]}`, OK)
		dup(h, 0, "1-1")
		cfg := flushEach()
		cfg.Producer.Delivery.MaxInFlight = ptr(1)
		r := h.check(cfg)
		if d := r.Anomalies[guarantee.Duplicate]; d.Forbidden != 1 || d.Known != 0 || r.OnlyKnown() != nil {
			t.Errorf("duplicate %+v, OnlyKnown %v: want forbidden and explained by nothing", d, r.OnlyKnown())
		}
	})
	t.Run("a second duplicate where a replica kept its power", func(t *testing.T) {
		h := newHB()
		h.replicas("t", 0, 1, 2, 3)
		h.replicas("t", 1, 4, 5, 6)
		h.nemesisEvent("power-loss", `{"nodes":[1,2,3,4]}`, OK)
		dup(h, 0, "1-1")
		dup(h, 1, "1-2")
		r := h.check(flushEach())
		d := r.Anomalies[guarantee.Duplicate]
		if d.Forbidden != 2 || d.Known != 1 || len(d.ByRule) != 2 {
			t.Fatalf("duplicate %+v: want 2 forbidden, 1 of them known, split by rule", d)
		}
		if r.OnlyKnown() != nil {
			t.Errorf("OnlyKnown %v with a forbidden duplicate no known issue explains", r.OnlyKnown())
		}
	})
	// The producer settings that judge a finding are the writer's, as kafkaconf resolves them.
	if kafkaconf.ResolveProducer(*flushEach().Producer, kafkaconf.JavaClient()).MaxInFlight != 5 {
		t.Fatal("the test's producer does not keep five requests in flight")
	}
}
