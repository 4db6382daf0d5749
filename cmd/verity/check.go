package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func checkCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "re-judge a saved history offline, without touching the run's artifacts",
		ArgsUsage: "HISTORY",
		Description: "Reads history.jsonl, finds every anomaly, judges each against the guarantee Kafka documents for " +
			"the settings in the history's header (the flags below force others) and prints a summary. It writes " +
			"nothing unless --out names a directory, which then receives results.json, report.html and junit.xml " +
			"and must not hold any of them already. To regenerate a run's own artifacts, use 'verity report RUN_DIR'.",
		OnUsageError: onUsage,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write results.json, report.html and junit.xml into `DIR` (made if missing; never overwritten)"},
		}, knobFlags(useCheck)...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return check(ctx, cmd, cmd.Root().Writer)
		},
	}
}

// artifacts are the files check and report write.
func artifacts() []string { return []string{results.FileName, report.HTMLFile, report.JUnitFile} }

func check(ctx context.Context, cmd *cli.Command, stdout io.Writer) error {
	if cmd.NArg() != 1 {
		return &usageError{err: errors.New("check takes one argument, the history file: verity check HISTORY [--out DIR]"), cmd: "verity check"}
	}
	path := cmd.Args().First()
	set := knobSettings(cmd, useCheck)
	out := cmd.String("out")
	if out != "" {
		if err := freshDir(out); err != nil {
			return err
		}
	}
	// The flags' values are checked before the history is read: a bad one is a usage error.
	if _, err := scenarios.OverrideHeader(history.Config{}, set); err != nil {
		return &usageError{err: err, cmd: "verity check"}
	}
	opts := verify.Options{Overrides: scenarios.Flags(set)}
	if len(set) > 0 {
		opts.Adjust = func(c history.Config) (history.Config, error) { return scenarios.OverrideHeader(c, set) }
	}
	r, err := verify.CheckFile(ctx, path, opts)
	if err != nil {
		return checkError(ctx, cmd, err)
	}
	printSummary(stdout, "verity check", path, r)
	if out != "" {
		if err := writeArtifacts(ctx, stdout, out, r, path, report.Options{}); err != nil {
			return err
		}
	}
	return verdictExit(r)
}

// checkError turns an error of the check into the command's one line.
func checkError(ctx context.Context, cmd *cli.Command, err error) error {
	if ctx.Err() != nil {
		return &exitError{code: exitUsage, msg: cmd.Name + " interrupted"}
	}
	return &exitError{code: exitUsage, msg: "cannot check the history: " + oneLine(err.Error())}
}

// freshDir makes dir if it is missing and refuses one that holds a file check would write: a
// check never overwrites what a run (or an earlier check) made.
func freshDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("--out %s: cannot make the directory (%v); choose another", dir, err)}
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("--out %s: not a directory; choose another", dir)}
	}
	for _, name := range artifacts() {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return &exitError{code: exitUsage, msg: fmt.Sprintf("--out %s already holds %s, which check does not overwrite; "+
				"choose a new directory, or regenerate a run's artifacts with 'verity report %s'", dir, name, dir)}
		}
	}
	return nil
}

// writeArtifacts writes results.json, report.html and junit.xml for r into dir.
func writeArtifacts(ctx context.Context, stdout io.Writer, dir string, r *results.Results, history string, opts report.Options) error {
	written, err := results.Write(dir, r)
	if err != nil {
		return &exitError{code: exitUsage, msg: oneLine(err.Error())}
	}
	rep, err := report.Write(ctx, dir, r, history, opts)
	if err != nil {
		return &exitError{code: exitUsage, msg: oneLine(err.Error())}
	}
	fmt.Fprintf(stdout, "  written: %s, %s, %s\n", written, rep.HTML, rep.JUnit)
	return nil
}

// printSummary writes a short human summary: the verdict, each anomaly found with its
// judgement and reason, and why a verdict is unknown.
func printSummary(w io.Writer, command, path string, r *results.Results) {
	parts := len(r.Stats.Partitions)
	head := fmt.Sprintf("%s: %s  %s (ops: %d, partitions with final reads: %d)", command, strings.ToUpper(string(r.Outcome())), path, r.History.Ops, parts)
	if r.Scenario != "" {
		head += ", scenario " + r.Scenario
	}
	fmt.Fprintln(w, head)
	var names []guarantee.Anomaly
	for _, name := range report.Families(r) {
		if r.Anomalies[name].Count > 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		fmt.Fprintln(w, "  no anomalies")
	}
	for _, name := range names {
		a := r.Anomalies[name]
		fmt.Fprintf(w, "  %-20s %6d  %-9s %s\n", name, a.Count, a.Judgement, a.Why)
		if a.Forbidden > 0 && a.Forbidden < a.Count {
			fmt.Fprintf(w, "  %-20s %6s  (%d forbidden, %d otherwise judged: see by_rule)\n", "", "", a.Forbidden, a.Count-a.Forbidden)
		}
		if len(a.Examples) > 0 && a.Examples[0].Note != "" {
			fmt.Fprintf(w, "  %-20s %6s  e.g. %s\n", "", "", a.Examples[0].Note)
		}
	}
	s := r.Stats
	send := s.Ops["send"]
	fmt.Fprintf(w, "  sends ok/fail/info %d/%d/%d, unknown later seen %d, unavailable %.0f ms, send latency p50 %.1f ms p99 %.1f ms\n",
		send.OK, send.Fail, send.Info, s.UnknownLaterSeen, s.UnavailableMs, s.LatencyMs.P50, s.LatencyMs.P99)
	if len(s.Stalls) > 0 {
		st := s.Stalls[0]
		fmt.Fprintf(w, "  longest stall %.0f ms on %s (%.1f s to %.1f s): a write pending, none acknowledged\n",
			s.LongestStallMs, history.PartitionName(st.Topic, st.Partition), st.StartMs/1000, st.EndMs/1000)
	}
	if line := livenessLine(r.Liveness); line != "" {
		fmt.Fprintf(w, "  liveness: %s\n", line)
	}
	if sh := s.Share; sh != nil {
		fmt.Fprintf(w, "  share group: %s\n", shareLine(sh))
	}
	var errs []string
	for _, e := range s.Errors {
		if e.F == "send" && len(errs) < 4 {
			errs = append(errs, fmt.Sprintf("%d %s %s", e.Count, e.Outcome, e.Error))
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(w, "  send errors: %s\n", strings.Join(errs, ", "))
	}
	for _, why := range r.UnknownReasons {
		fmt.Fprintf(w, "  unknown: %s\n", why)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if len(r.Overrides) > 0 {
		fmt.Fprintf(w, "  judged with %s forced over the header\n", strings.Join(r.Overrides, " "))
	}
}

// livenessLine says in one line what the liveness check found: the verdict on the stated bounds
// and their breaches, the clients stuck after the last heal (which break no stated bound), and
// the worst recovery from a fault; empty when there is none of these.
func livenessLine(l *results.Liveness) string {
	if l == nil {
		return ""
	}
	var parts []string
	if l.Verdict != results.LivenessNotStated && l.Verdict != "" {
		s := fmt.Sprintf("%s (%s)", l.Verdict, l.Bounds.LivenessBounds.String())
		switch why := l.Breaches(); {
		case l.Verdict == results.LivenessFail && len(why) > 0:
			s += ": " + strings.Join(why, "; ")
		case l.Verdict == results.LivenessUnknown && len(l.Reasons) > 0:
			s += ": " + strings.Join(l.Reasons, "; ")
		}
		parts = append(parts, s)
	}
	var stuck []string
	for _, f := range results.StuckFamilies() {
		if n := l.Findings[f].Count; n > 0 {
			stuck = append(stuck, fmt.Sprintf("%d %s", n, f))
		}
	}
	if len(stuck) > 0 {
		parts = append(parts, strings.Join(stuck, ", ")+" (informational)")
	}
	if rc := l.Recovery; rc != nil {
		s := fmt.Sprintf("worst recovery %.1f s from injection", rc.FromInjectionMS/1000)
		if rc.FromHealMS != nil {
			s += fmt.Sprintf(", %.1f s from heal", *rc.FromHealMS/1000)
		}
		if !rc.Recovered {
			s += " (not recovered by the end of the workload: at least this)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// shareLine summarises a share group's stats: "4785 records, 6346 deliveries (counts 1: 4784,
// 2: 1228, 3: 334); delivered again after release 1574, crash 9; acknowledged ok 6266, fail 0,
// unknown 0".
func shareLine(sh *results.ShareStats) string {
	var counts []string
	for n := 1; len(counts) < len(sh.ByCount); n++ {
		if v, ok := sh.ByCount[strconv.Itoa(n)]; ok {
			counts = append(counts, fmt.Sprintf("%d: %d", n, v))
		}
		if n > 1000 {
			break
		}
	}
	var again []string
	for _, c := range results.ShareCauses() {
		if v := sh.Redeliveries[c]; v > 0 {
			again = append(again, fmt.Sprintf("%s %d", c, v))
		}
	}
	var acked results.Outcomes
	for _, o := range sh.Acks {
		acked.OK, acked.Fail, acked.Info = acked.OK+o.OK, acked.Fail+o.Fail, acked.Info+o.Info
	}
	line := fmt.Sprintf("%d records, %d deliveries (counts %s)", sh.Records, sh.Deliveries, strings.Join(counts, ", "))
	if len(again) > 0 {
		line += "; delivered again after " + strings.Join(again, ", ")
	}
	if sh.ArchivedUnseen > 0 {
		line += fmt.Sprintf("; %d archived at the limit by deliveries no member was handed", sh.ArchivedUnseen)
	}
	return line + fmt.Sprintf("; acknowledged ok %d, fail %d, unknown %d", acked.OK, acked.Fail, acked.Info)
}
