package runner_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verity-kafka/verity/harness/harnesstest"
	"github.com/verity-kafka/verity/runner/runtest"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/results"
)

func TestMain(m *testing.M) { os.Exit(harnesstest.Main(m)) }

// TestRunDefault runs the default scenario (shortened) end to end on a real cluster: the leader
// of p0 is killed, and acks=all, min ISR 2, idempotence must lose nothing.
func TestRunDefault(t *testing.T) {
	s := scenarios.Default()
	s.Duration = scenarios.Duration(30 * time.Second)
	s.Faults.Timeline[0].At, s.Faults.Timeline[0].For = scenarios.Duration(10*time.Second), scenarios.Duration(10*time.Second)
	dir := t.TempDir()
	o := runtest.Run(t, s, runtest.Options{Out: dir})
	if o.Verdict() != results.Pass {
		t.Fatalf("verdict %s", o.Verdict())
	}
	for _, f := range []string{"history.jsonl", "results.json", "report.html", "junit.xml", "scenario.yaml", "logs/node-1.log", "logs/proxy-client.log"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("artifact %s: %v", f, err)
		}
	}
	// scenario.yaml is the scenario as it ran: it loads back to the same settings.
	again, err := scenarios.Load(filepath.Join(dir, "scenario.yaml"))
	if err != nil || again.Seed != s.Seed || again.Duration != s.Duration || again.Faults.Timeline[0].At != s.Faults.Timeline[0].At {
		t.Errorf("scenario.yaml: %v; loaded %+v", err, again)
	}
	var r results.Results
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("results.json: %v", err)
	}
	if r.Seed != s.Seed || r.Scenario != "default" || !strings.Contains(strings.Join(r.Faults, ","), "kill") {
		t.Errorf("results: seed %d scenario %q faults %v: want the run's seed, name and the kill", r.Seed, r.Scenario, r.Faults)
	}
	if r.Stats.Ops["send"].OK == 0 || len(r.Stats.Partitions) != 3 {
		t.Errorf("stats %+v: want acknowledged sends and final reads of 3 partitions", r.Stats)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !strings.Contains(string(page), "kill [") || strings.Count(string(page), "<img") < 3 {
		t.Error("report.html lacks the kill in its fault table or its plots")
	}
}

// TestPositiveControlDuplicates: non-idempotent producers with retries while the leader's
// acknowledgements are lost must append retried records twice, and the checker must find
// them (permitted for this configuration, so the verdict stays pass). A checker that never
// finds duplicates fails this test.
func TestPositiveControlDuplicates(t *testing.T) {
	s, err := scenarios.Builtin("plain-ack-loss")
	if err != nil {
		t.Fatal(err)
	}
	// One ack-loss window of the two, to keep the test short.
	s.Duration = scenarios.Duration(25 * time.Second)
	s.Faults.Timeline = s.Faults.Timeline[:1]
	o := runtest.Run(t, s, runtest.Options{Out: t.TempDir()})
	dup := o.Results.Anomalies["duplicate"]
	t.Logf("duplicates: %d (%s); verdict %s", dup.Count, dup.Judgement, o.Verdict())
	if dup.Count == 0 {
		t.Fatal("no duplicate found: the positive control did not fire")
	}
	if dup.Judgement != "permitted" || len(dup.Examples) == 0 || len(dup.Examples[0].Ops) < 2 {
		t.Errorf("duplicate %+v: want permitted, with the ops that prove it", dup)
	}
}
