package report

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/results"
)

// A history no Verity run wrote (its header names no scenario) has no run to repeat: its
// report offers `verity check` on the history instead of a `verity run` that cannot be carried
// out, in report.html and junit.xml, even when a caller passes a rerun command.
func TestReportOfAHistoryFromElsewhere(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "verifiable.jsonl")
	r := sampleResults(hist, history.Config{})
	r.Scenario, r.Seed = "", 0
	w, err := Write(context.Background(), dir, r, "", Options{Rerun: "verity run --scenario  --seed 0"})
	if err != nil {
		t.Fatal(err)
	}
	p := parsePage(t, w.HTML)
	if strings.Contains(p.raw, "verity run") || strings.Contains(p.raw, "--seed") || p.byID("rerun") != nil {
		t.Error("the report offers a verity run that cannot be carried out")
	}
	if got, want := text(p.byID("judged-by")), "verity check "+hist; got != want {
		t.Errorf("judged by %q, want %q", got, want)
	}
	if got := text(p.byID("scenario")); got != "none: not written by a Verity run" {
		t.Errorf("scenario shows %q", got)
	}
	if got := text(p.elements("h1")[0]); got != "Verity report: verifiable.jsonl" {
		t.Errorf("heading %q", got)
	}

	doc := parseJUnit(t, r)
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if c.Name != "verdict" {
				continue
			}
			if c.Failure == nil || strings.Contains(c.Failure.Text, "--seed") || !strings.Contains(c.Failure.Text, "verity check "+hist) {
				t.Errorf("the verdict's failure %+v", c.Failure)
			}
			if c.Classname != "verity.history" {
				t.Errorf("class %q", c.Classname)
			}
		}
	}

	// A run's history still offers its rerun.
	run := sampleResults(hist, history.Config{})
	w, err = Write(context.Background(), t.TempDir(), run, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	p = parsePage(t, w.HTML)
	if got := text(p.byID("rerun")); got != "verity run --scenario acks1-leader-loss --seed 918273" || p.byID("judged-by") != nil {
		t.Errorf("a run's report offers %q", got)
	}
	if !run.FromVerityRun() || r.FromVerityRun() {
		t.Error("FromVerityRun")
	}
}

// A record whose partition is not known is named as such in the ops' texts, not as "t--1".
func TestOpTextOfNoPartition(t *testing.T) {
	op := history.Op{F: history.FSend, Type: history.Info, Value: history.Payload{Send: &history.Record{Topic: "t", Partition: history.NoPartition, Value: "1-1"}}}
	if got := opText(&op); got != "send 1-1 → t (no partition)" {
		t.Errorf("op text %q", got)
	}
	if got := exampleText(results.Example{Topic: "t", Partition: new(history.NoPartition), Ops: []int64{3}}); strings.Contains(got, "t--1") {
		t.Errorf("example text %q", got)
	}
}

// The command shown can be pasted into a shell as it is.
func TestCheckCommandQuotesThePath(t *testing.T) {
	for path, want := range map[string]string{
		"":                        "verity check HISTORY",
		"runs/h.jsonl":            "verity check runs/h.jsonl",
		"/tmp/my runs/it's.jsonl": `verity check '/tmp/my runs/it'\''s.jsonl'`,
	} {
		r := &results.Results{History: &results.HistoryInfo{Path: path}}
		if got := checkCommand(r); got != want {
			t.Errorf("%q: %s, want %s", path, got, want)
		}
	}
}
