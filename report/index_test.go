package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// fakeRun writes a run folder: a history header and results.json.
func fakeRun(t *testing.T, dir, scenario string, seed int64, started string, v results.Verdict, lost int, withRun bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	header := fmt.Sprintf(`{"verity_history":1,"started":%q,"seed":%d,"config":{"scenario":%q}}`+"\n", started, seed, scenario)
	if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(header), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &results.Results{Version: results.Version, Scenario: scenario, Seed: seed, Verdict: v,
		Anomalies: map[guarantee.Anomaly]results.Anomaly{},
		Stats:     results.Stats{Ops: map[string]results.Outcomes{"send": {OK: 6000}}, UnavailableMs: 1500},
		Timings:   results.Timings{ClusterReadyS: 20, RunS: 60, CheckS: 1}}
	if lost > 0 {
		r.Anomalies[guarantee.LostWrite] = results.Anomaly{Count: lost, Forbidden: lost, Judgement: guarantee.Forbidden}
	}
	if withRun {
		r.Run = &results.RunInfo{ID: "r", Started: started, KafkaImage: "verity/kafka:4.3.1", ToxiproxyImage: "verity/toxiproxy:2.12.0"}
	}
	if _, err := results.Write(dir, r); err != nil {
		t.Fatal(err)
	}
}

func TestIndex(t *testing.T) {
	root := t.TempDir()
	fakeRun(t, filepath.Join(root, "2026-11-28", "default"), "default", 1, "2026-11-28T02:00:00Z", results.Pass, 0, false)
	fakeRun(t, filepath.Join(root, "2026-11-29", "default"), "default", 1, "2026-11-29T02:00:00Z", results.Fail, 7, true)
	fakeRun(t, filepath.Join(root, "2026-11-30", "default"), "default", 1, "2026-11-30T02:00:00Z", results.Pass, 0, true)
	fakeRun(t, filepath.Join(root, "2026-11-30", "matrix", "acks=1", "run-1"), "acks1-leader-loss", 2, "2026-11-30T03:00:00Z", results.Unknown, 3, true)
	// A results.json without a history (verity check --out) is not a run folder.
	if err := os.MkdirAll(filepath.Join(root, "checked"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := results.Write(filepath.Join(root, "checked"), &results.Results{Version: results.Version}); err != nil {
		t.Fatal(err)
	}
	path, runs, skipped, err := WriteIndex(root)
	if err != nil || len(skipped) != 0 {
		t.Fatalf("WriteIndex: %v, skipped %v", err, skipped)
	}
	if len(runs) != 4 || runs[0].Scenario != "acks1-leader-loss" || runs[3].Dir != "2026-11-28/default" {
		t.Fatalf("runs, newest first: %+v", runs)
	}
	if runs[0].Throughput != 100 || runs[0].Lost != 3 || runs[3].Image != "" || runs[2].Image != "verity/kafka:4.3.1" {
		t.Errorf("figures: %+v", runs)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`Latest: <a href="2026-11-30/matrix/acks=1/run-1/report.html">acks1-leader-loss seed 2</a>`,
		`lost-write 7 (7 forbidden)`, `class="v-fail"`, "not recorded", "2026-11-28 02:00:00Z",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	if strings.Index(page, "2026-11-30 03:00:00Z") > strings.Index(page, "2026-11-28 02:00:00Z") {
		t.Error("runs are not newest first")
	}
	// The default scenario's trend: three verdicts, oldest first (pass, fail, pass).
	trend := page[strings.Index(page, "<td>default</td>"):]
	trend = trend[:strings.Index(trend, "</tr>")]
	if i, j, k := strings.Index(trend, "v-pass"), strings.Index(trend, "v-fail"), strings.LastIndex(trend, "v-pass"); !(i < j && j < k) {
		t.Errorf("trend of default: %s", trend)
	}
	for _, banned := range []string{"http://", "https://", "<script", "<link"} {
		if strings.Contains(page, banned) {
			t.Errorf("the index must be self-contained: it has %q", banned)
		}
	}
}
