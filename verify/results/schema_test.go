package results_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/metrics"
	"github.com/verity-kafka/verity/runner"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
	"github.com/verity-kafka/verity/verify/results/schematest"
)

// A history with a lost acks=all write: results with an example, a forbidden count, op indices.
const lostHistory = `{"verity_history":1,"started":"2026-01-01T00:00:00Z","seed":3,"config":{"scenario":"s","controllers":[1,2,3],"producer":{"acks":"all","idempotence":true},"topic":{"replication_factor":3,"min_insync_replicas":2}}}
{"i":0,"t":1,"p":1,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"1-1"}}
{"i":1,"t":2,"p":1,"type":"ok","f":"send","value":{"topic":"t","partition":0,"offset":0,"value":"1-1"}}
{"i":2,"t":3,"p":9,"type":"ok","f":"final-read","value":{"topic":"t","partition":0,"isolation":"read_uncommitted","from":0,"end":1,"records":[]}}
`

func checkText(t *testing.T, text string) *results.Results {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := verify.CheckFile(context.Background(), path, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResultsMatchTheirSchema(t *testing.T) {
	r := checkText(t, lostHistory)
	if r.Verdict != results.Fail || r.Anomalies["lost-write"].Count != 1 {
		t.Fatalf("the history must fail with one lost write: %s %+v", r.Verdict, r.Anomalies["lost-write"])
	}
	r.Timings = results.Timings{ClusterReadyS: 12.5, RunS: 60, CheckS: 0.1}
	lost := r.Anomalies["lost-write"]
	for _, k := range guarantee.KnownIssues() { // the schema names every known issue
		lost.KnownIssues = append(lost.KnownIssues, k.Issue)
		lost.Examples[0].KnownIssue = k.Issue
	}
	lost.Known = 1
	for _, k := range []results.EdgeKind{results.EdgeWR, results.EdgeWW, results.EdgeProcess, results.EdgeRealtime} {
		lost.Examples[0].Cycle = append(lost.Examples[0].Cycle, results.CycleStep{From: 3, To: 9, Kind: k, Value: "1-1", Isolation: "read_committed"})
	}
	r.Anomalies["lost-write"] = lost
	for _, c := range results.UnknownCauses() {
		r.RunUnknownReasons, r.RunUnknownCauses = append(r.RunUnknownReasons, "why"), append(r.RunUnknownCauses, c)
		r.AddUnknown(results.UnknownReason{Cause: c, Text: "why"})
	}
	r.Run = &results.RunInfo{ID: "3cb8fd6a", VerityVersion: results.BuildVersion(), Started: "2026-01-01T00:00:00Z",
		KafkaImage: "verity/kafka:4.3.1", KafkaImageID: "sha256:" + strings.Repeat("ab", 32),
		ToxiproxyImage: "verity/toxiproxy:2.12.0", Host: results.HostInfo{Cores: 2, MemoryBytes: 24 << 30, EngineVersion: "20.10.24"}}
	r.BrokerMetrics = &results.BrokerMetrics{File: "metrics.jsonl", Source: "test", IntervalMS: 1000, Samples: 30, Unanswered: 3,
		Alerts: metrics.Outcome{Checked: 3, Fired: 1}}
	for _, m := range metrics.AlertMetrics() {
		r.BrokerMetrics.Alerts.Findings = append(r.BrokerMetrics.Alerts.Findings, metrics.Finding{Metric: m, Node: 1, Topic: "t",
			FromMS: 1000, ToMS: 9000, Samples: 5, Ops: []int64{3, 9}, Text: "silent"})
	}
	dir := t.TempDir()
	path, err := results.Write(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	schematest.Valid(t, schematest.Results, b)

	// The schema is strict: what a writer must not produce is refused.
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for name, spoil := range map[string]func(map[string]any){
		"an unknown field":   func(d map[string]any) { d["Verdict"] = "pass" },
		"an unknown verdict": func(d map[string]any) { d["verdict"] = "ok" },
		"an unknown anomaly": func(d map[string]any) {
			d["anomalies"].(map[string]any)["lost-writes"] = map[string]any{"count": 0, "judgement": "permitted", "why": ""}
		},
		"an unknown cause": func(d map[string]any) { d["unknown_causes"] = []string{"flaky"} },
		"an unknown known issue": func(d map[string]any) {
			d["anomalies"].(map[string]any)["lost-write"].(map[string]any)["known_issues"] = []string{"flaky-broker"}
		},
		"a negative count":       func(d map[string]any) { d["anomalies"].(map[string]any)["lost-write"].(map[string]any)["count"] = -1 },
		"a run without its id":   func(d map[string]any) { delete(d["run"].(map[string]any), "id") },
		"timings without a unit": func(d map[string]any) { d["timings"].(map[string]any)["run"] = 60 },
	} {
		var spoilt map[string]any
		_ = json.Unmarshal(b, &spoilt)
		spoil(spoilt)
		out, _ := json.Marshal(spoilt)
		if err := schematest.Check(schematest.Results, out); err == nil {
			t.Errorf("%s passed the schema", name)
		}
	}
}

// The header every built-in scenario's run writes (as runner.Header predicts it) matches the
// history header's schema, and a header with a key the checker does not read does not.
func TestHeadersMatchTheirSchema(t *testing.T) {
	for _, s := range scenarios.Builtins() {
		rs, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := runner.Header(rs)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(history.Header{Version: 1, Started: "2026-01-01T00:00:00Z", Seed: s.Seed, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		if err := schematest.Check(schematest.HistoryHeader, b); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	first := strings.SplitN(lostHistory, "\n", 2)[0]
	schematest.Valid(t, schematest.HistoryHeader, []byte(first))
	bad := strings.Replace(first, `"min_insync_replicas":2`, `"min_isr":2`, 1)
	if err := schematest.Check(schematest.HistoryHeader, []byte(bad)); err == nil {
		t.Error("a header with min_isr (a key the checker refuses) passed the schema")
	}
}
