package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

// sampleLiveness is a run that stated max_stall 25s and broke it: producer 3 stalled 40 s on
// verity-0 and was still stuck when the workload ended; one kill it did not recover from, one
// isolate both clients recovered from.
func sampleLiveness() *results.Liveness {
	l := &results.Liveness{
		Verdict: results.LivenessFail,
		Bounds: results.LivenessBounds{LivenessBounds: history.LivenessBounds{MaxStallMS: i64(25_000)},
			StuckAfterMS: 10_000, MinStallMS: 2_000},
		Reasons:    []string{"max_stall 25s broken by producer 3 on verity-0"},
		HorizonMS:  60_000,
		LastHealMS: f64(30_000),
		Clients: []results.ClientLiveness{
			{Client: "producer 3", Kind: results.KindProducer, Processes: []int{3}, Partitions: []string{"verity-0"}, Progress: 500,
				Stalls: []results.ClientStall{{Topic: "verity", Partition: 0, FromMS: 20_000, ToMS: 60_000, StuckMS: 20_000, Ops: []int64{120, 130}}}},
			{Client: "group g1", Kind: results.KindConsumer, Processes: []int{5, 6}, Partitions: []string{"verity-0"}, Progress: 800,
				Stalls: []results.ClientStall{{Topic: "verity", Partition: 0, FromMS: 5_000, ToMS: 9_800, Recovered: true, Ops: []int64{40, 52}}}},
		},
		Faults: []results.FaultRecovery{
			{Label: "isolate [2]", F: "start-partition", InjectedMS: 5_000, HealedMS: f64(8_000), HealedBy: "stop-partition",
				Recovery: results.Recovery{FromInjectionMS: 4_800, FromHealMS: f64(1_800), Recovered: true},
				Clients: []results.ClientRecovery{{Client: "group g1", Kind: results.KindConsumer,
					Recovery: results.Recovery{FromInjectionMS: 4_800, FromHealMS: f64(1_800), Recovered: true}}}},
			{Label: "kill [1]", F: "kill", InjectedMS: 20_000, HealedMS: f64(30_000), HealedBy: "start",
				Recovery: results.Recovery{FromInjectionMS: 40_000, FromHealMS: f64(30_000)},
				Clients: []results.ClientRecovery{{Client: "producer 3", Kind: results.KindProducer,
					Recovery: results.Recovery{FromInjectionMS: 40_000, FromHealMS: f64(30_000)}}}},
		},
		Recovery: &results.Recovery{FromInjectionMS: 40_000, FromHealMS: f64(30_000)},
		Findings: map[results.LivenessFamily]results.LivenessFindings{
			results.MaxStall: {Count: 1, Examples: []results.LivenessFinding{{Client: "producer 3", Kind: results.KindProducer, Topic: "verity",
				FromMS: 20_000, ToMS: 60_000, StuckMS: 20_000, Bound: "max_stall 25s", Ops: []int64{120, 130}, Note: "40.0 s without progress, more than max_stall 25s"}}},
			results.StuckProducer: {Count: 1, Examples: []results.LivenessFinding{{Client: "producer 3", Kind: results.KindProducer, Topic: "verity",
				FromMS: 20_000, ToMS: 60_000, StuckMS: 20_000, Ops: []int64{120, 130}, Note: "no progress for 30.0 s after the last heal"}}},
		},
	}
	s := &results.ProgressSeries{BucketMS: 1000}
	unseen, lag, prod, cons := make([]int64, 60), make([]int64, 60), make([]int64, 60), make([]int64, 60)
	for k := range 60 {
		if k >= 20 {
			unseen[k] = int64(10 * (k - 19))
		}
		if k >= 5 && k < 10 {
			lag[k] = int64(50 * (k - 4))
		}
		if k < 20 {
			prod[k] = 10
		}
		if k < 5 || k >= 10 {
			cons[k] = int64(5 + k%3)
		}
	}
	s.Unseen = []results.Series{{Name: "verity-0", Values: unseen}}
	s.Lag = []results.Series{{Name: "group g1", Values: lag}}
	s.Progress = []results.Series{{Name: "producer 3", Values: prod}, {Name: "group g1", Values: cons}}
	l.Series = s
	return l
}

// renderLiveness writes the report of the sample results, passing on safety and with the
// sample liveness, over a generated history. With -artifacts the page stays for a look at its
// plots (go test ./report -run TestReportLiveness -artifacts -outputdir DIR).
func renderLiveness(t *testing.T) (page, string) {
	t.Helper()
	dir := t.ArtifactDir()
	hist, cfg := sampleHistory(t, dir)
	res := sampleResults(hist, cfg)
	res.Verdict = results.Pass
	delete(res.Anomalies, "lost-write")
	res.Liveness = sampleLiveness()
	w, err := Write(context.Background(), dir, res, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	return parsePage(t, w.HTML), dir
}

func TestReportLiveness(t *testing.T) {
	p, dir := renderLiveness(t)
	if got := text(p.byID("verdict-value")); got != "fail (liveness)" {
		t.Errorf("verdict shows %q", got)
	}
	if v := text(p.byID("verdict")); !strings.Contains(v, "max_stall 25s broken: 40.0 s without progress") {
		t.Errorf("the verdict line does not name the breached bound: %s", v)
	}
	if c, _ := attr(p.byID("verdict"), "class"); c != "fail" {
		t.Errorf("verdict class %q", c)
	}
	if got := text(p.byID("liveness-verdict")); got != "fail" {
		t.Errorf("liveness verdict %q", got)
	}
	if got := text(p.byID("liveness-bounds")); got != "max_stall 25s" {
		t.Errorf("bounds %q", got)
	}
	sec := text(p.byID("liveness"))
	for _, want := range []string{"stuck after 10s", "shorter than 2s", "last heal at 30.0 s", "None found: stuck-consumer"} {
		if !strings.Contains(sec, want) {
			t.Errorf("liveness section lacks %q", want)
		}
	}
	for _, fam := range []results.LivenessFamily{results.MaxStall, results.StuckProducer} {
		row := text(p.byID("liveness-" + string(fam)))
		if !strings.Contains(row, "ops 120, 130") || !strings.Contains(row, "verity-0") {
			t.Errorf("row of %s: %s", fam, row)
		}
	}
	opsPage, err := os.ReadFile(filepath.Join(dir, OpsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{livenessAnchor(results.MaxStall, 0), livenessAnchor(results.StuckProducer, 0)} {
		if !strings.Contains(p.raw, `href="ops.html#`+id+`"`) || !bytes.Contains(opsPage, []byte(`<section id="`+id+`">`)) {
			t.Errorf("finding %s does not link to its ops", id)
		}
	}
	if !bytes.Contains(opsPage, []byte(`<tr class="proof"><td class="num">130</td>`)) {
		t.Error("ops.html does not mark the stall's ops")
	}

	rec := p.byID("recovery")
	if rec == nil {
		t.Fatal("no recovery table")
	}
	var rows []string
	walk(rec, func(n *html.Node) {
		if n.Data == "tr" {
			var cells []string
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode {
					cells = append(cells, text(c))
				}
			}
			rows = append(rows, strings.Join(cells, " | "))
		}
	})
	if len(rows) != 3 || !strings.Contains(rows[0], "group g1") || !strings.Contains(rows[0], "producer 3") {
		t.Fatalf("recovery rows %q", rows)
	}
	if want := "isolate [2] | 5.0 s | 8.0 s (stop-partition) | 4.8 s / 1.8 s | 4.8 s / 1.8 s |  | "; rows[1] != want {
		t.Errorf("isolate row %q, want %q", rows[1], want)
	}
	if !strings.Contains(rows[2], "kill [1]") || strings.Count(rows[2], "not recovered (≥40.0 s)") != 2 {
		t.Errorf("kill row %q", rows[2])
	}

	for _, id := range []string{"plot-unseen", "plot-lag", "plot-progress"} {
		img := p.byID(id)
		if img == nil {
			t.Errorf("no %s", id)
			continue
		}
		src, _ := attr(img, "src")
		svg, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(src, "data:image/svg+xml;base64,"))
		if err != nil || !bytes.Contains(svg, []byte("</svg>")) {
			t.Errorf("%s is not an SVG", id)
		}
		if id == "plot-progress" && (!bytes.Contains(svg, []byte("producer 3")) || !bytes.Contains(svg, []byte("stuck after the last heal"))) {
			t.Error("the progress plot lacks its rows or legend")
		}
	}
}

// Results written before liveness was judged render its section as not judged.
func TestReportLivenessNotJudged(t *testing.T) {
	p, _ := renderSample(t)
	if got := text(p.byID("liveness-verdict")); !strings.Contains(got, "not judged") {
		t.Errorf("nil liveness shows %q", got)
	}
	if p.byID("recovery") != nil || p.byID("plot-progress") != nil {
		t.Error("nil liveness shows a recovery table or plots")
	}
}

// The suite's table gains the liveness columns once a run was judged for liveness: the bounds
// stated and the verdicts, marked known when a known issue explains the failures.
func TestSuiteLiveness(t *testing.T) {
	live := func(v results.LivenessVerdict, j Judgement) SuiteRun {
		r := &results.Results{Verdict: results.Pass, Scenario: "s", Anomalies: map[guarantee.Anomaly]results.Anomaly{}, Liveness: sampleLiveness()}
		r.Liveness.Verdict = v
		return SuiteRun{Run: 1, Results: r, Judgement: j}
	}
	unstated := live(results.LivenessNotStated, JudgementMet)
	unstated.Results.Liveness.Bounds.MaxStallMS = nil
	unstated.Results.Liveness.Recovery = nil
	rows := []SuiteRow{
		{Scenario: "stall", Runs: []SuiteRun{live(results.LivenessFail, JudgementKnownIssue), live(results.LivenessFail, JudgementKnownIssue)}},
		{Scenario: "quiet", Runs: []SuiteRun{unstated}},
		{Scenario: "old", Runs: []SuiteRun{{Run: 1, Results: &results.Results{Verdict: results.Pass}, Judgement: JudgementMet}}},
	}
	for i, want := range [][2]string{
		{"max_stall 25s: fail ×2 (known)", "p50 40.0 s · max ≥40.0 s (not recovered ×2) · after heal max 30.0 s"},
		{"-", "n/a"},
		{"-", "-"},
	} {
		if got := [2]string{rows[i].liveness(), rows[i].recovered()}; got != want {
			t.Errorf("row %s: %q, want %q", rows[i].Scenario, got, want)
		}
	}
	md := SuiteMarkdown(rows)
	if !strings.Contains(md, "| write availability | liveness | recovered in | wall time |") || !strings.Contains(md, "fail (liveness) ×2") {
		t.Errorf("markdown:\n%s", md)
	}
	if strings.Contains(SuiteMarkdown(rows[2:]), "liveness") {
		t.Error("a suite without liveness results has its columns")
	}
}
