package report

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// matrixCells are acks {1, all} × min ISR {1, 2} × 3 runs under leader loss: acks=1 loses
// writes (permitted) in 2 of 3 runs; the acks=all cells keep everything.
func matrixCells() []Cell {
	var cells []Cell
	for _, acks := range []string{"1", "all"} {
		for _, minISR := range []string{"1", "2"} {
			for run := 1; run <= 3; run++ {
				r := &results.Results{Verdict: results.Pass, Scenario: "acks-minisr", Seed: int64(run),
					Anomalies: map[guarantee.Anomaly]results.Anomaly{},
					Stats: results.Stats{UnavailableMs: 600 * float64(run), LatencyMs: results.Percentiles{P99: 10 * float64(run)},
						Ops: map[string]results.Outcomes{"send": {OK: 600 * int64(run)}, "txn": {OK: 60}, "poll": {OK: 6000}}},
					Timings: results.Timings{RunS: 60}}
				r.Config.Client = &history.ClientInfo{Name: "sarama", Version: "v1.61.1"}
				if acks == "1" && run < 3 {
					r.Anomalies["lost-write"] = results.Anomaly{Count: run * 2, Judgement: guarantee.Permitted}
				}
				if acks == "all" && minISR == "1" && run == 2 {
					r.Verdict = results.Fail
					r.Anomalies["lost-write"] = results.Anomaly{Count: 1, Judgement: guarantee.Forbidden, Forbidden: 1}
					r.Anomalies["duplicate"] = results.Anomaly{Count: 2, Judgement: guarantee.Permitted}
					r.Anomalies["poll-skip"] = results.Anomaly{Count: 4, Judgement: guarantee.Forbidden, Forbidden: 4}
				}
				cells = append(cells, Cell{
					Axes:    []Axis{{"acks", acks}, {"min.insync.replicas", minISR}, {"fault", "kill-leader"}},
					Run:     run,
					Results: r,
					Report:  fmt.Sprintf("acks-%s_minisr-%s/run-%d/report.html", acks, minISR, run),
				})
			}
		}
	}
	return cells
}

func TestCompare(t *testing.T) {
	rows := Compare(matrixCells())
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	r := rows[0] // acks=1, min ISR 1
	if r.Runs != 3 || r.Lost.Total != 6 || r.Lost.Runs != 2 || r.Lost.Forbidden != 0 || r.Verdict() != "pass ×3" {
		t.Errorf("row 0: %+v, verdict %q", r, r.Verdict())
	}
	if got := r.Lost.String(r.Runs); got != "6 in 2/3 runs (permitted)" {
		t.Errorf("lost cell %q", got)
	}
	// Availability: 60 s runs unavailable 0.6, 1.2, 1.8 s: mean 98 %.
	if r.Availability < 97.99 || r.Availability > 98.01 || r.FromOps || r.P99 != 30 {
		t.Errorf("availability %.3f, p99 %.1f", r.Availability, r.P99)
	}
	// Acknowledged writes: 600, 1200, 1800 sends and 60 transactions in 60 s (polls are reads).
	if r.Throughput < 20.99 || r.Throughput > 21.01 {
		t.Errorf("throughput %.3f, want 21 writes/s", r.Throughput)
	}
	f := rows[2] // acks=all, min ISR 1
	if f.Verdict() != "1 fail, 2 pass" || f.Worst() != results.Fail || f.Lost.String(3) != "1 in 1/3 runs (forbidden)" ||
		f.Other.String(3) != "4 in 1/3 runs (forbidden)" || f.Duplicate.String(3) != "2 in 1/3 runs (permitted)" {
		t.Errorf("row 2: verdict %q, lost %q, other %q, dup %q", f.Verdict(), f.Lost.String(3), f.Other.String(3), f.Duplicate.String(3))
	}
	if Compare(nil) != nil {
		t.Error("rows from no cells")
	}
}

func TestCompareMarkdown(t *testing.T) {
	md := CompareMarkdown(matrixCells())
	lines := strings.Split(strings.TrimSpace(md), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines:\n%s", len(lines), md)
	}
	want := "| acks | min.insync.replicas | fault | client | runs | lost | duplicate | reordered | other anomalies | write availability | acked writes/s | p99 latency | verdict |"
	if lines[0] != want {
		t.Errorf("header\n%s\nwant\n%s", lines[0], want)
	}
	if !strings.HasPrefix(lines[1], "| --- |") || strings.Count(lines[1], "---") != 13 {
		t.Errorf("separator %q", lines[1])
	}
	if want := "| 1 | 1 | kill-leader | sarama v1.61.1 | 3 | 6 in 2/3 runs (permitted) | 0 | 0 | 0 | 98.0 % | 21 | 30.0 ms | pass ×3 |"; lines[2] != want {
		t.Errorf("row\n%s\nwant\n%s", lines[2], want)
	}
	// A client axis is the client column; a history without a client says so.
	cells := matrixCells()[:1]
	cells[0].Axes = append(cells[0].Axes, Axis{"client", "franz-go"})
	if md := CompareMarkdown(cells); strings.Count(md, "| client |") != 1 || !strings.Contains(md, "| franz-go |") {
		t.Errorf("client axis:\n%s", md)
	}
	cells = matrixCells()[:1]
	cells[0].Results.Config.Client = nil
	if md := CompareMarkdown(cells); !strings.Contains(md, "| not recorded |") {
		t.Errorf("history without a client:\n%s", md)
	}
	// Without the run's length, availability is the share of writes that succeeded, marked.
	cells = []Cell{{Axes: []Axis{{"acks", "all"}}, Results: &results.Results{Verdict: results.Pass,
		Stats: results.Stats{Ops: map[string]results.Outcomes{"send": {OK: 90, Fail: 5, Info: 5}}}}}}
	md = CompareMarkdown(cells)
	if !strings.Contains(md, "| 90.0 %* |") || !strings.Contains(md, "\\* share of writes") {
		t.Errorf("ops-based availability not marked:\n%s", md)
	}
}

// A table of sink runs has the sinks' columns; their findings are not "other".
func TestCompareSinks(t *testing.T) {
	var cells []Cell
	for _, mode := range []string{"naive", "unique-key"} {
		r := &results.Results{Verdict: results.Pass, Anomalies: map[guarantee.Anomaly]results.Anomaly{
			guarantee.EffectMissing: {Judgement: guarantee.Forbidden}}, Timings: results.Timings{RunS: 60}}
		if mode == "naive" {
			r.Anomalies[guarantee.EffectDuplicate] = results.Anomaly{Count: 7, Judgement: guarantee.Permitted}
		} else {
			r.Anomalies[guarantee.EffectDuplicate] = results.Anomaly{Judgement: guarantee.Forbidden}
		}
		cells = append(cells, Cell{Axes: []Axis{{"sink", mode}}, Run: 1, Results: r})
	}
	md := CompareMarkdown(cells)
	if !strings.Contains(md, "| effect duplicate | effect missing | other anomalies |") ||
		!strings.Contains(md, "| naive | not recorded | 1 | 0 | 0 | 0 | 7 (permitted) | 0 | 0 |") {
		t.Errorf("sink table:\n%s", md)
	}
	if md := CompareMarkdown(matrixCells()); strings.Contains(md, "effect") {
		t.Errorf("a table without sinks shows their columns:\n%s", md)
	}
	if strings.Contains(md, "outbox") {
		t.Errorf("a table without an outbox shows its columns:\n%s", md)
	}

	// An outbox row adds the outbox's columns; the other rows could not show them: n/a.
	ob := &results.Results{Verdict: results.Pass, Anomalies: map[guarantee.Anomaly]results.Anomaly{
		guarantee.EffectDuplicate: {Judgement: guarantee.Forbidden}, guarantee.EffectMissing: {Judgement: guarantee.Forbidden},
		guarantee.OutboxLost: {Judgement: guarantee.Forbidden}, guarantee.OutboxDuplicate: {Count: 3, Judgement: guarantee.Permitted}},
		Timings: results.Timings{RunS: 60}}
	cells[0].Results.Anomalies[guarantee.OutboxLost] = results.Anomaly{Unchecked: "no sink with an outbox"}
	cells[0].Results.Anomalies[guarantee.OutboxDuplicate] = results.Anomaly{Unchecked: "no sink with an outbox"}
	md = CompareMarkdown(append(cells, Cell{Axes: []Axis{{"sink", "outbox"}}, Run: 1, Results: ob}))
	if !strings.Contains(md, "| outbox lost | outbox duplicate |") ||
		!strings.Contains(md, "| naive | not recorded | 1 | 0 | 0 | 0 | 7 (permitted) | 0 | n/a | n/a | 0 |") ||
		!strings.Contains(md, "| outbox | not recorded | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 3 (permitted) | 0 |") {
		t.Errorf("outbox table:\n%s", md)
	}
}

func TestCompareHTML(t *testing.T) {
	page, err := CompareHTML("acks × min ISR under leader loss", matrixCells())
	if err != nil {
		t.Fatal(err)
	}
	root, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	p := pageOf(root, page)
	table := p.byID("comparison")
	if table == nil {
		t.Fatal("no comparison table")
	}
	rows := 0
	walk(table, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "tr" {
			rows++
		}
		if n.Type == html.ElementNode && n.Data == "a" {
			if href, _ := attr(n, "href"); strings.Contains(href, "://") {
				t.Errorf("external link %q", href)
			}
		}
	})
	if rows != 5 {
		t.Errorf("%d rows, want header + 4", rows)
	}
	if !strings.Contains(text(table), "1 fail, 2 pass") || !strings.Contains(text(table), "run 3") {
		t.Errorf("table text: %s", text(table))
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") || len(p.elements("script")) > 0 {
		t.Error("the comparison page is not self-contained")
	}
}

func pageOf(root *html.Node, raw string) page { return page{root: root, raw: raw} }

// livenessCells are three rows of runs judged for liveness: recovered in 9.8, 12.1 and 5.0 s
// (one of them a liveness failure); no fault at all; a run still stalled at the end next to
// one that took 3 s after its heal.
func livenessCells() []Cell {
	run := func(axis string, rec *results.Recovery, v results.LivenessVerdict) Cell {
		r := &results.Results{Verdict: results.Pass, Scenario: "live", Anomalies: map[guarantee.Anomaly]results.Anomaly{},
			Liveness: &results.Liveness{Verdict: v, Recovery: rec}}
		return Cell{Axes: []Axis{{"fault", axis}, {clientAxis, "franz-go"}}, Results: r}
	}
	rec := func(from float64, heal float64, ok bool) *results.Recovery {
		return &results.Recovery{FromInjectionMS: from, FromHealMS: &heal, Recovered: ok}
	}
	return []Cell{
		run("kill", rec(9_800, 500, true), results.LivenessPass),
		run("kill", rec(12_100, 900, true), results.LivenessFail),
		run("kill", rec(5_000, 0, true), results.LivenessPass),
		run("none", nil, results.LivenessNotStated),
		run("none", nil, results.LivenessNotStated),
		run("pause", rec(40_000, 30_000, false), results.LivenessNotStated),
		run("pause", rec(10_000, 3_000, true), results.LivenessNotStated),
	}
}

func TestCompareLiveness(t *testing.T) {
	rows := Compare(livenessCells())
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, want := range []struct{ recovered, verdict string }{
		{"p50 9.8 s · max 12.1 s", "1 fail (liveness), 2 pass"},
		{"n/a", "pass ×2"},
		{"p50 10.0 s · max ≥40.0 s (not recovered ×1) · after heal max 30.0 s", "pass ×2"},
	} {
		if got := RecoveryText(rows[i].Recoveries); got != want.recovered {
			t.Errorf("row %d recovered in %q, want %q", i, got, want.recovered)
		}
		if got := rows[i].Verdict(); got != want.verdict {
			t.Errorf("row %d verdict %q, want %q", i, got, want.verdict)
		}
	}
	if rows[0].Worst() != results.Fail {
		t.Error("a liveness failure does not colour its row as failed")
	}
	if got := RecoveryText([]results.Recovery{{FromInjectionMS: 2_500, Recovered: true}}); got != "2.5 s" {
		t.Errorf("one run: %q", got)
	}
	md := CompareMarkdown(livenessCells())
	if !strings.Contains(md, "| recovered in | verdict |") || !strings.Contains(md, "| p50 9.8 s · max 12.1 s | 1 fail (liveness), 2 pass |") {
		t.Errorf("markdown:\n%s", md)
	}
	if strings.Contains(CompareMarkdown(matrixCells()), "recovered in") {
		t.Error("results without liveness get a recovered-in column")
	}
}
