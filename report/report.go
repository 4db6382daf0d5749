package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/metrics"
	"github.com/verity-kafka/verity/verify/results"
)

// File names a report writes in a run's directory.
const (
	HTMLFile  = "report.html"
	JUnitFile = "junit.xml"
)

// Options tune a report; the zero value is the default.
type Options struct {
	// Bucket is the width of a time bucket; default one second.
	Bucket time.Duration
	// MaxPartitionPlots bounds the leader/ISR plots (every partition stays in the table);
	// default 24.
	MaxPartitionPlots int
	// Rerun is the command that repeats the run, shown under the verdict; default
	// "verity run --scenario NAME --seed N" (which misses any flag the run was given). A
	// history no Verity run wrote (results.FromVerityRun) has no run to repeat: the report
	// shows checkCommand instead, and ignores Rerun.
	Rerun string
	// Expectation is what the scenario expected, in words (Scenario.Expect), shown under the
	// verdict; empty: not shown.
	Expectation string
	// Metrics are the run's broker metrics when the caller has read them already; nil: the
	// page reads the file the results name.
	Metrics *metrics.File

	// opsPage holds the ids of the example sections ops.html has (Write sets it), which the
	// page's examples link to; files are the run's other files the page links to, relative to
	// its folder.
	opsPage map[string]bool
	files   []string
}

// checkCommand is the command that judges r's history again, which a report offers in place
// of a rerun for a history that no Verity run wrote.
func checkCommand(r *results.Results) string {
	path := "HISTORY"
	if r.History != nil && r.History.Path != "" {
		path = r.History.Path
	}
	if strings.ContainsAny(path, " \t\n'\"$`\\;&|<>()*?[]{}~#!") {
		// Quoted for a POSIX shell, so that the command can be pasted as it is shown.
		path = "'" + strings.ReplaceAll(path, "'", `'\''`) + "'"
	}
	return "verity check " + path
}

// MetricsNotSampled begins the run note that says why a run has no broker metrics.
const MetricsNotSampled = "broker metrics not sampled: "

// runFiles lists the files of a run's folder a reader of its report wants next to it: the
// history, the results, the JUnit file and every node's and proxy's log.
func runFiles(dir string) []string {
	var out []string
	for _, f := range []string{"history.jsonl", "results.json", JUnitFile, "scenario.yaml", "metrics.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			out = append(out, f)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	for _, l := range logs {
		out = append(out, "logs/"+filepath.Base(l))
	}
	return out
}

func (o Options) withDefaults() Options {
	if o.Bucket <= 0 {
		o.Bucket = time.Second
	}
	if o.MaxPartitionPlots <= 0 {
		o.MaxPartitionPlots = 24
	}
	return o
}

// Written says what Write wrote.
type Written struct {
	HTML, JUnit string
	// Ops is ops.html, the ops around each anomaly example; empty when there was none.
	Ops string
	// Warnings are problems with the history that the page shows (it could not be opened, a
	// line was malformed): the report is still written from results.json.
	Warnings []string
}

// Write writes report.html and junit.xml for r into dir, reading the history at historyPath
// (empty: results' own history path) for the plots. A history that cannot be read does not stop
// the report — the page says so, and Written.Warnings lists why — since results.json holds the
// verdict and its evidence; only failing to write a file is an error.
func Write(ctx context.Context, dir string, r *results.Results, historyPath string, opts Options) (Written, error) {
	opts = opts.withDefaults()
	if historyPath == "" && r.History != nil {
		historyPath = r.History.Path
	}
	var w Written
	var tl *Timeline
	// The ops around each anomaly example are gathered in the timeline's one pass over the
	// history.
	windows := slices.Concat(opWindows(r), livenessWindows(r), metricWindows(r))
	if opts.Metrics == nil {
		m, err := readMetrics(dir, r)
		if err != nil {
			w.Warnings = append(w.Warnings, err.Error())
		}
		opts.Metrics = m
	}
	if historyPath == "" {
		w.Warnings = append(w.Warnings, "no history given: the page has no plots")
	} else {
		var err error
		tl, err = readTimeline(ctx, historyPath, opts.Bucket, func(op *history.Op) { take(windows, op) })
		if err != nil {
			if ctx.Err() != nil {
				return w, fmt.Errorf("writing the report: %w", ctx.Err())
			}
			w.Warnings = append(w.Warnings, err.Error())
		}
	}
	if tl != nil && len(windows) > 0 {
		ops, err := renderOps(r, windows)
		if err != nil {
			return w, err
		}
		if w.Ops, err = writeFile(dir, OpsFile, ops); err != nil {
			return w, err
		}
		opts.opsPage = map[string]bool{}
		for _, win := range windows {
			opts.opsPage[win.ID] = true
		}
	}
	opts.files = runFiles(dir)
	if historyPath != "" && filepath.Dir(historyPath) != filepath.Clean(dir) {
		opts.files = slices.DeleteFunc(opts.files, func(f string) bool { return f == "history.jsonl" })
	}
	if !slices.Contains(opts.files, JUnitFile) {
		opts.files = append(opts.files, JUnitFile) // written below, beside the page
	}
	var page bytes.Buffer
	if err := RenderHTML(&page, r, tl, opts, w.Warnings); err != nil {
		return w, err
	}
	var junit bytes.Buffer
	if err := WriteJUnit(&junit, r); err != nil {
		return w, err
	}
	var err error
	if w.HTML, err = writeFile(dir, HTMLFile, page.Bytes()); err != nil {
		return w, err
	}
	if w.JUnit, err = writeFile(dir, JUnitFile, junit.Bytes()); err != nil {
		return w, err
	}
	return w, nil
}

// writeFile writes b to dir/name through a temporary file, so that a reader never sees half a
// file.
func writeFile(dir, name string, b []byte) (string, error) {
	path := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	cleanup := func(e error) (string, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing %s: %w", path, e)
	}
	// CreateTemp makes the file private; reports are for people and CI to read.
	if err := tmp.Chmod(0o644); err != nil {
		return cleanup(err)
	}
	if _, err := tmp.Write(b); err != nil {
		return cleanup(err)
	}
	if err := tmp.Close(); err != nil {
		return cleanup(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}
