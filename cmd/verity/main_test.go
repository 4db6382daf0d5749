package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/runner"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/results"
)

const header = `{"verity_history":1,"started":"2026-01-01T00:00:00Z","seed":3,"config":{"scenario":"cli","producer":{"acks":"all","idempotence":true},"topic":{"replication_factor":3,"min_insync_replicas":2}}}`

// Histories: an acked write that the final read has (pass), that it lacks (fail), and one with
// no final read (unknown).
var (
	sendOK = `{"i":0,"t":1,"p":1,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"1-1"}}
{"i":1,"t":2,"p":1,"type":"ok","f":"send","value":{"topic":"t","partition":0,"offset":0,"value":"1-1"}}
`
	finalHas  = `{"i":2,"t":3,"p":9,"type":"ok","f":"final-read","value":{"topic":"t","partition":0,"isolation":"read_uncommitted","from":0,"end":1,"records":[{"topic":"t","partition":0,"offset":0,"value":"1-1"}]}}` + "\n"
	finalLost = `{"i":2,"t":3,"p":9,"type":"ok","f":"final-read","value":{"topic":"t","partition":0,"isolation":"read_uncommitted","from":0,"end":1,"records":[]}}` + "\n"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errw bytes.Buffer
	code = run(context.Background(), append([]string{"verity"}, args...), &out, &errw)
	return code, out.String(), errw.String()
}

func TestCheckExitCodes(t *testing.T) {
	pass := writeFile(t, header+"\n"+sendOK+finalHas)
	fail := writeFile(t, header+"\n"+sendOK+finalLost)
	unknown := writeFile(t, header+"\n"+sendOK)
	outDir := t.TempDir()
	cases := []struct {
		name    string
		args    []string
		code    int
		stdout  string // substring
		stderr  string // substring; an error must be one line
		results string // where results.json must be written
	}{
		{"pass", []string{"check", pass}, exitPass, "verity check: PASS", "", ""},
		{"fail", []string{"check", fail}, exitFail, "lost-write", "", ""},
		{"unknown", []string{"check", unknown}, exitUnknown, "unknown: no final reads", "", ""},
		{"--out", []string{"check", "--out", outDir, fail}, exitFail, "written: " + filepath.Join(outDir, "results.json"), "", outDir},
		{"--out holding results", []string{"check", "--out", outDir, pass}, exitUsage, "", "does not overwrite", ""},
		{"flags after the argument", []string{"check", fail, "--acks", "1"}, exitPass, "permitted", "", ""},
		{"--acks overrides the header", []string{"check", "--acks", "1", fail}, exitPass, "permitted", "", ""},
		{"--unclean overrides the header", []string{"check", "--unclean", fail}, exitPass, "permitted", "", ""},
		{"--min-isr and --rf", []string{"check", "--min-isr", "1", "--rf", "1", fail}, exitFail, "min.insync.replicas=1", "", ""},
		{"bad --acks", []string{"check", "--acks", "2", fail}, exitUsage, "", "--acks", ""},
		{"--isolation is not judged by", []string{"check", "--isolation", "read_committed", fail}, exitUsage, "", "isolation", ""},
		{"bad --unclean", []string{"check", "--unclean=maybe", fail}, exitUsage, "", "unclean", ""},
		{"header with a key the checker does not read", []string{"check", writeFile(t, strings.Replace(header, `"min_insync_replicas"`, `"min_isr"`, 1)+"\n"+sendOK+finalHas)},
			exitUsage, "", `unknown key "min_isr"`, ""},
		{"bad --min-isr", []string{"check", "--min-isr", "0", fail}, exitUsage, "", "--min-isr", ""},
		{"no history", []string{"check"}, exitUsage, "", "one argument", ""},
		{"two histories", []string{"check", pass, fail}, exitUsage, "", "one argument", ""},
		{"missing file", []string{"check", filepath.Join(t.TempDir(), "nope.jsonl")}, exitUsage, "", "cannot check", ""},
		{"not a history", []string{"check", writeFile(t, "hello\nworld\n")}, exitUsage, "", "cannot check", ""},
		{"malformed line", []string{"check", writeFile(t, header+"\n"+sendOK+"{oops}\n"+finalHas)}, exitUsage, "", "line 4", ""},
		{"--out not a directory", []string{"check", "--out", pass, pass}, exitUsage, "", "not a directory", ""},
		{"unknown flag", []string{"check", "--frobnicate", pass}, exitUsage, "", "frobnicate", ""},
		{"unknown command", []string{"frobnicate"}, exitUsage, "", "frobnicate", ""},
		{"no command", nil, exitUsage, "check", "", ""},
		{"help", []string{"check", "--help"}, exitPass, "verity check", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, stdout)
			}
			if tc.stderr != "" {
				if !strings.Contains(stderr, tc.stderr) {
					t.Errorf("stderr lacks %q: %q", tc.stderr, stderr)
				}
				if n := strings.Count(strings.TrimRight(stderr, "\n"), "\n"); n != 0 {
					t.Errorf("an error must be one line, got %d:\n%s", n+1, stderr)
				}
				if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "panic") {
					t.Errorf("a stack trace on stderr: %s", stderr)
				}
			}
			if tc.results != "" {
				r, err := results.Read(filepath.Join(tc.results, results.FileName))
				if err != nil {
					t.Fatal(err)
				}
				if r.Seed != 3 || r.Scenario != "cli" {
					t.Errorf("results %+v", r)
				}
				for _, f := range []string{"report.html", "junit.xml"} {
					if _, err := os.Stat(filepath.Join(tc.results, f)); err != nil {
						t.Errorf("--out lacks %s: %v", f, err)
					}
				}
			}
		})
	}
	// Without --out, check writes nothing: not beside the history, where a run's artifacts are.
	for _, h := range []string{pass, fail, unknown} {
		entries, err := os.ReadDir(filepath.Dir(h))
		if err != nil || len(entries) != 1 {
			t.Errorf("%s: the history's directory holds %v (%v); check must not write there", h, entries, err)
		}
	}
}

// report RUN_DIR judges the run's history again and rewrites its artifacts, keeping what only
// the run knew: its timings, notes and the reasons it could not be judged.
func TestReportRegeneratesARun(t *testing.T) {
	dir := filepath.Dir(writeFile(t, header+"\n"+sendOK+finalHas))
	prev := &results.Results{Version: results.Version, Verdict: results.Fail, Scenario: "cli", Seed: 3,
		Timings: results.Timings{ClusterReadyS: 8, RunS: 60, CheckS: 1}, RunNotes: []string{"from the run"}}
	if _, err := results.Write(dir, prev); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("report", dir)
	if code != exitPass || !strings.Contains(stdout, "verity report: PASS") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	r, err := results.Read(filepath.Join(dir, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != results.Pass || r.Timings.RunS != 60 || r.Timings.ClusterReadyS != 8 || !slices.Contains(r.Notes, "from the run") {
		t.Errorf("regenerated %+v", r)
	}
	for _, f := range []string{"report.html", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("report did not write %s: %v", f, err)
		}
	}
	// A run that could not be judged stays unknown when judged again.
	prev.RunUnknownReasons = []string{"the cluster did not recover"}
	if _, err := results.Write(dir, prev); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := runCLI("report", dir); code != exitUnknown || !strings.Contains(stdout, "the cluster did not recover") {
		t.Errorf("exit %d, stdout %s: want unknown with the run's reason", code, stdout)
	}
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"report"}, "one argument"},
		{[]string{"report", t.TempDir()}, "has no history.jsonl"},
	} {
		if code, _, stderr := runCLI(c.args...); code != exitUsage || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, stderr)
		}
	}
}

// stalled is a history whose producer goes 38 s without an acknowledgement while a send is
// pending, and keeps every safety promise.
const stalled = header + `
{"i":0,"t":1000000000,"p":1,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"1-1"}}
{"i":1,"t":1100000000,"p":1,"type":"ok","f":"send","value":{"topic":"t","partition":0,"offset":0,"value":"1-1"}}
{"i":2,"t":2000000000,"p":1,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"1-2"}}
{"i":3,"t":40000000000,"p":1,"type":"ok","f":"send","value":{"topic":"t","partition":0,"offset":1,"value":"1-2"}}
{"i":4,"t":41000000000,"p":1,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"1-3"}}
{"i":5,"t":41100000000,"p":1,"type":"ok","f":"send","value":{"topic":"t","partition":0,"offset":2,"value":"1-3"}}
{"i":6,"t":42000000000,"p":9,"type":"ok","f":"final-read","value":{"topic":"t","partition":0,"isolation":"read_uncommitted","from":0,"end":3,"records":[{"topic":"t","partition":0,"offset":0,"value":"1-1"},{"topic":"t","partition":0,"offset":1,"value":"1-2"},{"topic":"t","partition":0,"offset":2,"value":"1-3"}]}}
`

// A history that keeps every safety promise but breaks a stated liveness bound exits 4, and
// says which bound and where; without the bound it passes, its stall reported, never judged.
func TestCheckLivenessExit(t *testing.T) {
	path := writeFile(t, stalled)
	code, stdout, stderr := runCLI("check", "--max-stall", "25s", path)
	if code != exitLiveness {
		t.Fatalf("exit %d, want %d (liveness); stdout:\n%s\nstderr: %s", code, exitLiveness, stdout, stderr)
	}
	for _, want := range []string{"verity check: FAIL (LIVENESS)", "no anomalies",
		"liveness: fail (max_stall 25s): max_stall 25s broken: producer 1 on t-0", "judged with --max-stall=25s forced over the header"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if code, stdout, _ := runCLI("check", "--max-stall", "40s", path); code != exitPass || !strings.Contains(stdout, "liveness: pass (max_stall 40s)") {
		t.Errorf("a bound the stall keeps: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = runCLI("check", path)
	if code != exitPass || !strings.Contains(stdout, "verity check: PASS") {
		t.Errorf("no bound stated: exit %d, want %d\n%s", code, exitPass, stdout)
	}
	if strings.Contains(stdout, "liveness: fail") || strings.Contains(stdout, "liveness: pass") {
		t.Errorf("no bound stated, yet a liveness verdict:\n%s", stdout)
	}
	if code, _, stderr := runCLI("check", "--max-stall", "500ms", path); code != exitUsage || !strings.Contains(stderr, "want more than 1s") {
		t.Errorf("a bound shorter than a stall: exit %d, %s", code, stderr)
	}
}

// A run's outcome names the liveness bound its scenario states, the client known to break it,
// and the outcome when it is not the verdict.
func TestPrintOutcomeLiveness(t *testing.T) {
	s, err := scenarios.Builtin("unanswering-leader")
	if err != nil {
		t.Fatal(err)
	}
	s.Client.Name = kafkaconf.Sarama
	r := &results.Results{Verdict: results.Pass, History: &results.HistoryInfo{}, Liveness: &results.Liveness{Verdict: results.LivenessFail,
		Bounds: results.LivenessBounds{LivenessBounds: *s.Expect.Liveness.Bounds()}}}
	var b bytes.Buffer
	printOutcome(&b, &runner.Outcome{Scenario: scenarios.Resolved{Scenario: s}, Results: r, Dir: "out"})
	for _, want := range []string{"verity run: FAIL (LIVENESS)", "liveness: fail (max_stall 25s)",
		"expected pass, liveness max_stall 25s (known to break under sarama: " + s.Expect.Liveness.Why + "); got pass, outcome fail (liveness)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("outcome lacks %q:\n%s", want, b.String())
		}
	}
}

// The liveness line: nothing without findings, stuck clients as informational, the worst
// recovery from injection and heal.
func TestLivenessLine(t *testing.T) {
	if got := livenessLine(&results.Liveness{Verdict: results.LivenessNotStated}); got != "" {
		t.Errorf("nothing to say, got %q", got)
	}
	l := &results.Liveness{Verdict: results.LivenessNotStated,
		Findings: map[results.LivenessFamily]results.LivenessFindings{results.StuckProducer: {Count: 1}},
		Recovery: &results.Recovery{FromInjectionMS: 12300, FromHealMS: new(4100.0), Recovered: true}}
	if got, want := livenessLine(l), "1 stuck-producer (informational); worst recovery 12.3 s from injection, 4.1 s from heal"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	l = &results.Liveness{Verdict: results.LivenessUnknown, Reasons: []string{"recover_within 10s: no fault took effect"},
		Bounds: results.LivenessBounds{LivenessBounds: history.LivenessBounds{RecoverWithinMS: new(int64(10000))}}}
	if got, want := livenessLine(l), "unknown (recover_within 10s): recover_within 10s: no fault took effect"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
