package metrics

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func obs(i, t int64, leader int32, isr ...int) Observation {
	return Observation{Index: i, TimeMS: t, Topic: "t", Partition: 0, Leader: leader, ISR: isr, Replicas: []int{1, 2, 3}, MinISR: 2}
}

// samples of node every second from..to (ms), reading v for m.
func every(node int, from, to int64, m Name, v float64) []Sample {
	var out []Sample
	for t := from; t <= to; t += 1000 {
		out = append(out, Sample{TimeMS: t, Node: node, Values: map[Name]float64{m: v, UnderReplicated: 1}})
	}
	return out
}

func TestCheck(t *testing.T) {
	// The watch sees partition t-0 led by 1 below min ISR from 10 s to 30 s.
	below := []Observation{obs(1, 0, 1, 1, 2, 3), obs(5, 10_000, 1, 1), obs(9, 20_000, 1, 1), obs(12, 30_000, 1, 1, 2, 3)}
	tests := []struct {
		name                      string
		obs                       []Observation
		samples                   []Sample
		checked, fired, unsampled int
		findings                  int
		wantText                  string
	}{
		{"gauge raised: fired", below, every(1, 0, 40_000, UnderMinISR, 1), 2, 2, 0, 0, ""},
		{"gauge silent on the leader: a finding", below, every(1, 0, 40_000, UnderMinISR, 0), 2, 1, 0, 1,
			"UnderMinIsrPartitionCount (Value) stayed 0 on broker 1, the leader of t-0"},
		{"another broker raised it: still a finding", below,
			append(every(1, 0, 40_000, UnderMinISR, 0), every(2, 0, 40_000, UnderMinISR, 1)...), 2, 1, 0, 1, "broker 1"},
		{"leader never answered: unsampled, no finding", below,
			[]Sample{{TimeMS: 15_000, Node: 1, Error: "paused"}, {TimeMS: 16_000, Node: 1, Error: "paused"}}, 0, 0, 2, 0, ""},
		{"too short to judge", []Observation{obs(1, 10_000, 1, 1), obs(2, 13_000, 1, 1, 2, 3)},
			every(1, 0, 40_000, UnderMinISR, 0), 0, 0, 0, 0, ""},
		{"no leader: not judged", []Observation{obs(1, 10_000, -1), obs(2, 30_000, -1)},
			every(1, 0, 40_000, UnderMinISR, 0), 0, 0, 0, 0, ""},
		{"leader change ends a stretch", []Observation{obs(1, 10_000, 1, 1), obs(2, 20_000, 2, 2), obs(3, 30_000, 2, 1, 2, 3)},
			append(every(1, 0, 40_000, UnderMinISR, 1), every(2, 0, 40_000, UnderMinISR, 0)...), 4, 3, 0, 1, "broker 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.samples, tc.obs, time.Second)
			// Each stretch is judged for both alerts (below min ISR is also under-replicated),
			// and every sample reads UnderReplicated 1.
			if got.Checked != tc.checked || got.Fired != tc.fired || got.Unsampled != tc.unsampled || len(got.Findings) != tc.findings {
				t.Fatalf("checked/fired/unsampled/findings = %d/%d/%d/%d, want %d/%d/%d/%d: %+v",
					got.Checked, got.Fired, got.Unsampled, len(got.Findings), tc.checked, tc.fired, tc.unsampled, tc.findings, got.Findings)
			}
			for _, f := range got.Findings {
				if !strings.Contains(f.Text, tc.wantText) {
					t.Errorf("finding %q lacks %q", f.Text, tc.wantText)
				}
				if len(f.Ops) != 2 || f.Ops[0] > f.Ops[1] || f.Samples < 2 {
					t.Errorf("finding %+v must name its first and last observation and at least 2 samples", f)
				}
			}
		})
	}
	// The finding names the observations that prove it.
	got := Check(every(1, 0, 40_000, UnderMinISR, 0), below, time.Second)
	if f := got.Findings[0]; f.Metric != UnderMinISR || f.Ops[0] != 5 || f.Ops[1] != 9 || f.FromMS != 10_000 || f.ToMS != 30_000 {
		t.Errorf("finding = %+v, want under-min-ISR on ops 5..9 from 10 s to 30 s", f)
	}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	path := t.TempDir() + "/metrics.jsonl"
	w, err := Create(path, Header{IntervalMS: 1000, Source: "test", Metrics: All()})
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{{TimeMS: 5, Node: 1, Values: map[Name]float64{UnderMinISR: 2}}, {TimeMS: 6, Node: 2, Error: "paused"}}
	for _, s := range want {
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, got := f.Header, f.Samples
	if h.Version != Version || h.IntervalMS != 1000 || len(h.Metrics) != len(All()) || len(got) != 2 ||
		got[0].Values[UnderMinISR] != 2 || got[1].Error != "paused" {
		t.Fatalf("read back %+v %+v", h, got)
	}
	buf.WriteString(`{"verity_metrics":1,"interval_ms":1000,"source":"x","metrics":[]}` + "\n" + `{"t_ms":1,"node":1,"values":{"no_such":1}}` + "\n")
	if _, err := Read(&buf); err == nil || !strings.Contains(err.Error(), `unknown metric "no_such"`) {
		t.Errorf("unknown metric read as %v", err)
	}
}

func TestAllNamesDistinct(t *testing.T) {
	seen := map[Name]bool{}
	for _, m := range All() {
		if seen[m.Name] || m.MBean == "" || m.Attribute == "" || (m.Kind != Gauge && m.Kind != Counter) {
			t.Errorf("metric %+v: repeated or incomplete", m)
		}
		seen[m.Name] = true
	}
	for _, a := range alerts {
		if m, ok := Lookup(a.metric); !ok || m.Kind != Gauge {
			t.Errorf("alert on %s: must be a listed gauge", a.metric)
		}
	}
}
