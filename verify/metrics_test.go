package verify

import (
	"encoding/json"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/metrics"
	"github.com/verity-kafka/verity/verify/results"
)

// TestBrokerMetrics: the check hands the history's ISR observations, on the history's time
// base, to the metrics check, and the finding names the observations' op indices.
func TestBrokerMetrics(t *testing.T) {
	build := func() *hb {
		h := newHB()
		obs := func(ms int64, isr ...int) int64 {
			h.now = ms*1_000_000 - 1_000_000 // add steps 1 ms
			b, _ := json.Marshal(ISREvent{Topic: "t", Partition: 0, ISR: isr, MinISR: ptr(2), Replicas: []int{1, 2, 3}, Leader: ptr(int32(1))})
			return h.add(history.Op{Process: history.NemesisP(), Type: history.Info, F: "isr", Value: history.Payload{Raw: b}})
		}
		obs(0, 1, 2, 3)
		obs(10_000, 1) // below min ISR from 10 s
		obs(20_000, 1)
		obs(30_000, 1, 2, 3)
		return h
	}
	samples := func(v float64) *metrics.File {
		f := &metrics.File{Header: metrics.Header{Version: metrics.Version, IntervalMS: 1000}}
		for ms := int64(0); ms <= 40_000; ms += 1000 {
			f.Samples = append(f.Samples, metrics.Sample{TimeMS: ms, Node: 1, Values: map[metrics.Name]float64{metrics.UnderMinISR: v, metrics.UnderReplicated: v}})
		}
		return f
	}
	check := func(m *metrics.File) *results.Results {
		h := build()
		c := New(strict(), Options{Metrics: m, MetricsFile: "metrics.jsonl"})
		for i := range h.ops {
			c.Add(&h.ops[i])
		}
		return c.Results()
	}
	if r := check(nil); r.BrokerMetrics != nil {
		t.Fatalf("no metrics given, yet broker_metrics %+v", r.BrokerMetrics)
	}
	fired := check(samples(1)).BrokerMetrics
	if fired == nil || fired.Alerts.Checked != 2 || fired.Alerts.Fired != 2 || len(fired.Alerts.Findings) != 0 || fired.Samples != 41 {
		t.Fatalf("raised gauges: %+v", fired)
	}
	silent := check(samples(0)).BrokerMetrics
	if len(silent.Alerts.Findings) != 2 {
		t.Fatalf("silent gauges: want both alerts found silent, got %+v", silent.Alerts)
	}
	for _, f := range silent.Alerts.Findings {
		if f.Ops[0] != 1 || f.Ops[1] != 2 || f.FromMS != 10_000 || f.ToMS != 30_000 || f.Node != 1 {
			t.Errorf("finding %+v: want ops 1..2 from 10 s to 30 s on broker 1", f)
		}
	}
}
