package verify

import (
	"github.com/verity-kafka/verity/history"
	"slices"
	"testing"

	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func flushEach() history.Config {
	c := strict()
	c.Topic.FlushMessages = ptr(int64(1))
	return c
}

func minISR1() history.Config {
	c := strict()
	c.Topic.MinInsyncReplicas = ptr(1)
	return c
}

// A fault counts once its completion says it happened (ok) or may have (info); never at its
// invoke, never when it failed, never for being in the config's schedule.
func TestFaultsCountWhenTheyTookEffect(t *testing.T) {
	lostOne := func(h *hb) (inv, done int64) {
		return h.send(1, rec("t", 0, "1-1"), OK, 0)
	}
	runCases(t, []tcase{
		{
			name: "disk loss completed ok: permitted with min ISR 1",
			cfg:  minISR1,
			build: func(h *hb) {
				lostOne(h)
				h.nemesisEvent("disk-loss", `{"nodes":[1]}`, OK)
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1, permitted: true, ops: []int64{0, 1, 5}}},
			verdict: results.Pass,
		},
		{
			name: "disk loss completed info (it may have happened): permitted",
			cfg:  minISR1,
			build: func(h *hb) {
				lostOne(h)
				h.nemesisEvent("disk-loss", `{"nodes":[1]}`, Info)
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
		{
			name: "disk loss that failed did not happen: forbidden",
			cfg:  minISR1,
			build: func(h *hb) {
				lostOne(h)
				h.nemesisEvent("disk-loss", `{"nodes":[1]}`, Fail)
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1, ops: []int64{0, 1, 5}}},
			verdict: results.Fail,
		},
		{
			name: "disk loss invoked, never completed: forbidden",
			cfg:  minISR1,
			build: func(h *hb) {
				lostOne(h)
				h.add(nemesisInvoke("disk-loss", `{"nodes":[1]}`))
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "disk loss only in the config's fault schedule: forbidden",
			cfg: func() history.Config {
				c := minISR1()
				c.Faults = []string{"disk-loss", "unclean-election"}
				return c
			},
			build: func(h *hb) {
				lostOne(h)
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "unclean election that failed: forbidden",
			build: func(h *hb) {
				lostOne(h)
				h.nemesisEvent("unclean-election", `{}`, Fail)
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1}},
			verdict: results.Fail,
		},
		{
			name: "unclean election completed ok: permitted",
			build: func(h *hb) {
				lostOne(h)
				h.nemesisEvent("unclean-election", `{}`, OK)
				h.final("t", 0, RU, 0, 0)
			},
			want:    map[guarantee.Anomaly]want{guarantee.LostWrite: {count: 1, permitted: true}},
			verdict: results.Pass,
		},
	})
}

// results' "faults" lists the kinds that took effect, not the schedule nor failed attempts.
func TestResultsFaultsListWhatTookEffect(t *testing.T) {
	cases := []struct {
		name  string
		build func(h *hb)
		want  []string
	}{
		{"ok and info count", func(h *hb) {
			h.nemesisEvent("kill", `{"nodes":[1]}`, OK)
			h.nemesisEvent("wipe", `{"nodes":[2]}`, Info)
		}, []string{"disk-loss", "kill"}},
		{"a failed fault does not", func(h *hb) {
			h.nemesisEvent("disk-loss", `{"nodes":[1]}`, Fail)
		}, nil},
		{"an invoke alone does not", func(h *hb) {
			h.add(nemesisInvoke("unclean-election", `{}`))
		}, nil},
		{"the config's schedule does not", func(h *hb) {}, nil},
		{"heals and the end of a run are not faults", func(h *hb) {
			h.nemesisEvent("kill", `{"nodes":[1]}`, OK)
			for _, f := range []string{"start", "resume", "heal", "heal-all", "healthy", "service-start"} {
				h.nemesisEvent(f, `{"nodes":[1]}`, OK)
			}
		}, []string{"kill"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHB()
			h.send(1, rec("t", 0, "1-1"), OK, 0)
			tc.build(h)
			h.finalBoth("t", 0, 0, 1, at(rec("t", 0, "1-1"), 0))
			cfg := strict()
			cfg.Faults = []string{"disk-loss", "unclean-election", "kill"}
			r := h.check(cfg)
			if !slices.Equal(r.Faults, tc.want) {
				t.Errorf("faults %v, want %v", r.Faults, tc.want)
			}
		})
	}
}

// A disk loss or unclean election changes the judgement only of the partitions whose replicas
// it touched, as the ISR observations show them; the lost disks compared with min ISR are
// counted per partition.
func TestFaultsScopedToReplicas(t *testing.T) {
	const (
		P = "permitted"
		F = "forbidden"
	)
	cases := []struct {
		name   string
		cfg    func() history.Config
		faults func(h *hb)
		// observe1: whether t-1's replicas are observed.
		unobserved1  bool
		want0, want1 string
	}{
		{"a disk loss on t-0's replica only", minISR1, func(h *hb) {
			h.nemesisEvent("disk-loss", `{"nodes":[1]}`, OK)
		}, false, P, F},
		{"one lost disk in each partition is one per partition, below min ISR 2", strict, func(h *hb) {
			h.nemesisEvent("disk-loss", `{"nodes":[1]}`, OK)
			h.nemesisEvent("disk-loss", `{"nodes":[4]}`, OK)
		}, false, F, F},
		{"two lost disks of t-0 reach min ISR 2", strict, func(h *hb) {
			h.nemesisEvent("disk-loss", `{"nodes":[1,2]}`, OK)
		}, false, P, F},
		{"a disk loss on nodes not named touches every partition", minISR1, func(h *hb) {
			h.nemesisEvent("disk-loss", `{}`, OK)
		}, false, P, P},
		{"a partition whose replicas were never observed counts every disk loss", minISR1, func(h *hb) {
			h.nemesisEvent("disk-loss", `{"nodes":[1]}`, OK)
		}, true, P, P},
		{"a power loss on two of t-0's replicas at once reaches min ISR 2", strict, func(h *hb) {
			h.nemesisEvent("power-loss", `{"nodes":[1,2]}`, OK)
			h.nemesisEvent("start", `{"nodes":[1,2],"fault":"power-loss","dropped":{"1":{"files":1,"bytes":10}}}`, OK)
		}, false, P, F},
		{"power losses of one replica at a time stay below min ISR 2", strict, func(h *hb) {
			h.nemesisEvent("power-loss", `{"nodes":[1]}`, OK)
			h.nemesisEvent("power-loss", `{"nodes":[2]}`, OK)
		}, false, F, F},
		{"a power loss that failed did not happen", strict, func(h *hb) {
			h.nemesisEvent("power-loss", `{"nodes":[1,2,3]}`, Fail)
		}, false, F, F},
		{"with flush.messages=1 even every replica's power loss is within the guarantee", flushEach, func(h *hb) {
			h.nemesisEvent("power-loss", `{"nodes":[1,2,3,4,5,6]}`, OK)
		}, false, F, F},
		{"a power loss on nodes not named touches every partition", minISR1, func(h *hb) {
			h.nemesisEvent("power-loss", `{}`, OK)
		}, false, P, P},
		{"an unclean election of one partition", strict, func(h *hb) {
			h.nemesisEvent("unclean-election", `{"topic":"t","partition":0}`, OK)
		}, false, P, F},
		{"an unclean election on nodes", strict, func(h *hb) {
			h.nemesisEvent("unclean-election", `{"nodes":[5]}`, OK)
		}, false, F, P},
		{"an unclean election naming nothing touches every partition", strict, func(h *hb) {
			h.nemesisEvent("unclean-election", `{}`, OK)
		}, false, P, P},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHB()
			h.replicas("t", 0, 1, 2, 3)
			if !tc.unobserved1 {
				h.replicas("t", 1, 4, 5, 6)
			}
			_, d0 := h.send(1, rec("t", 0, "1-1"), OK, 0)
			_, d1 := h.send(1, rec("t", 1, "1-2"), OK, 0)
			tc.faults(h)
			f0 := h.final("t", 0, RU, 0, 0)
			f1 := h.final("t", 1, RU, 0, 0)
			r := h.check(tc.cfg())
			lw := r.Anomalies[guarantee.LostWrite]
			if lw.Count != 2 {
				t.Fatalf("lost-write %+v", lw)
			}
			got := map[int32]string{}
			for _, e := range lw.Examples {
				got[*e.Partition] = e.Judgement.String()
				switch *e.Partition {
				case 0:
					if !slices.Contains(e.Ops, d0) || !slices.Contains(e.Ops, f0) {
						t.Errorf("t-0 example ops %v lack %d and %d", e.Ops, d0, f0)
					}
				case 1:
					if !slices.Contains(e.Ops, d1) || !slices.Contains(e.Ops, f1) {
						t.Errorf("t-1 example ops %v lack %d and %d", e.Ops, d1, f1)
					}
				}
			}
			if got[0] != tc.want0 || got[1] != tc.want1 {
				t.Errorf("t-0 %s, t-1 %s; want %s, %s (by rule %+v)", got[0], got[1], tc.want0, tc.want1, lw.ByRule)
			}
		})
	}
}
