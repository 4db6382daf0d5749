package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/verify/results"
	"github.com/verity-kafka/verity/verify/results/schematest"
)

// foreignHistory is a history another tool wrote, translated from docs/history.md alone: the
// output of Kafka's VerifiableProducer and VerifiableConsumer (a Java client), with sends whose
// partition the client chose later and errors that name none (partition -1), Java exception
// texts, and a header that names its own client and no scenario or seed.
const foreignHistory = "testdata/verifiable-java.jsonl"

// `verity check --out` judges it by the settings its header states, keeps its client's name,
// classes the Java errors as the Go clients' texts for them, names no partition "verity--1",
// and offers `verity check` on it rather than a `verity run` that cannot be carried out.
func TestCheckAHistoryFromElsewhere(t *testing.T) {
	b, err := os.ReadFile(foreignHistory)
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(string(b), "\n")
	schematest.Valid(t, schematest.HistoryHeader, []byte(header))

	out := t.TempDir()
	code, stdout, stderr := runCLI("check", "--out", out, foreignHistory)
	if code != exitPass {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitPass, stdout, stderr)
	}
	r, err := results.Read(filepath.Join(out, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != results.Pass || r.Scenario != "" || r.FromVerityRun() {
		t.Errorf("verdict %s, scenario %q (unknown reasons %v)", r.Verdict, r.Scenario, r.UnknownReasons)
	}
	if c := r.Config.Client; c == nil || c.Name != "kafka-java-verifiable" || c.Version != "4.3.0" {
		t.Errorf("client %+v, want kafka-java-verifiable 4.3.0", c)
	}
	if r.Stats.UnknownSends != 3 || r.Stats.UnknownLaterSeen != 1 {
		t.Errorf("unknown sends %d (later seen %d), want 3 (1)", r.Stats.UnknownSends, r.Stats.UnknownLaterSeen)
	}
	classes := map[string]results.ErrorCount{}
	for _, e := range r.Stats.Errors {
		classes[e.Error] = e
	}
	for _, want := range []string{"NOT_ENOUGH_REPLICAS", results.ClassTimeout, results.ClassConnectionLost} {
		e, ok := classes[want]
		if !ok || e.Count != 1 || e.ByPartition["verity (no partition)"] != 1 {
			t.Errorf("error class %s: %+v (all: %+v)", want, e, r.Stats.Errors)
		}
	}
	if len(classes) != 3 {
		t.Errorf("error classes %+v, want the three above", r.Stats.Errors)
	}
	if len(r.Stats.Unavailability) != 0 {
		t.Errorf("unavailability %+v: failures of no known partition are no partition's", r.Stats.Unavailability)
	}

	for _, f := range []string{results.FileName, "report.html", "junit.xml"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "verity--1") {
			t.Errorf("%s names the partition verity--1", f)
		}
		if f == results.FileName {
			continue
		}
		if strings.Contains(string(b), "verity run") || strings.Contains(string(b), "--seed") {
			t.Errorf("%s offers a verity run", f)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"verity check " + foreignHistory, "kafka-java-verifiable 4.3.0", "verity (no partition): 1"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
