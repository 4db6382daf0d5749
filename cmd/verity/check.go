package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func checkCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "re-check a saved history offline and write results.json",
		ArgsUsage: "HISTORY",
		Description: "Reads history.jsonl, finds every anomaly, judges each against the guarantee Kafka documents for " +
			"the configuration in the history's header (flags override it), prints a summary and writes results.json.",
		OnUsageError: onUsage,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write results.json to `DIR` (default: the history's directory)"},
			&cli.StringFlag{Name: "acks", Usage: "judge every producer as acks=`ACKS` (0, 1 or all)"},
			&cli.BoolFlag{Name: "idempotence", Usage: "judge every producer with enable.idempotence on (--idempotence=false: off)"},
			&cli.IntFlag{Name: "min-isr", Usage: "judge every topic with min.insync.replicas=`N`", HideDefault: true},
			&cli.IntFlag{Name: "rf", Usage: "judge every topic with replication factor `N`", HideDefault: true},
			&cli.BoolFlag{Name: "unclean", Usage: "judge every topic with unclean.leader.election.enable on (--unclean=false: off)"},
			&cli.StringFlag{Name: "isolation", Usage: "isolation `LEVEL` of reads that name none (read_committed or read_uncommitted)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return check(ctx, cmd, cmd.Root().Writer)
		},
	}
}

// overrides reads the judging flags the user set.
func overrides(cmd *cli.Command) (guarantee.Overrides, error) {
	var o guarantee.Overrides
	if cmd.IsSet("acks") {
		a, err := guarantee.ParseAcks(cmd.String("acks"))
		if err != nil {
			return o, &usageError{err: fmt.Errorf("--acks: %w", err), cmd: "verity check"}
		}
		o.Acks = &a
	}
	if cmd.IsSet("idempotence") {
		v := cmd.Bool("idempotence")
		o.Idempotence = &v
	}
	for _, f := range []struct {
		name string
		dst  **int
	}{{"min-isr", &o.MinISR}, {"rf", &o.RF}} {
		if cmd.IsSet(f.name) {
			v := cmd.Int(f.name)
			if v < 1 {
				return o, &usageError{err: fmt.Errorf("--%s %d: want a number of replicas, 1 or more", f.name, v), cmd: "verity check"}
			}
			*f.dst = &v
		}
	}
	if cmd.IsSet("unclean") {
		v := cmd.Bool("unclean")
		o.Unclean = &v
	}
	if cmd.IsSet("isolation") {
		v := cmd.String("isolation")
		if v != guarantee.ReadCommitted && v != guarantee.ReadUncommitted {
			return o, &usageError{err: fmt.Errorf("--isolation %q: want read_committed or read_uncommitted", v), cmd: "verity check"}
		}
		o.Isolation = &v
	}
	return o, nil
}

func check(ctx context.Context, cmd *cli.Command, stdout io.Writer) error {
	if cmd.NArg() != 1 {
		return &usageError{err: errors.New("check takes one argument, the history file: verity check HISTORY [--out DIR]"), cmd: "verity check"}
	}
	path := cmd.Args().First()
	ov, err := overrides(cmd)
	if err != nil {
		return err
	}
	out := cmd.String("out")
	if out == "" {
		out = filepath.Dir(path)
	}
	// An --out directory that does not exist yet is made, as `run --out` will; a path that
	// exists but is not a directory is a usage error.
	if err := os.MkdirAll(out, 0o755); err != nil {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("--out %s: cannot make the directory (%v); choose another", out, err)}
	}
	if st, err := os.Stat(out); err != nil || !st.IsDir() {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("--out %s: not a directory; choose another", out)}
	}
	r, err := verify.CheckFile(ctx, path, ov, verify.Options{})
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: exitUsage, msg: "check interrupted"}
		}
		return &exitError{code: exitUsage, msg: "cannot check the history: " + oneLine(err.Error())}
	}
	written, err := results.Write(out, r)
	if err != nil {
		return &exitError{code: exitUsage, msg: oneLine(err.Error())}
	}
	printSummary(stdout, path, r)
	fmt.Fprintf(stdout, "results: %s\n", written)
	switch r.Verdict {
	case results.Pass:
		return nil
	case results.Fail:
		return &exitError{code: exitFail}
	}
	return &exitError{code: exitUnknown}
}

// printSummary writes a short human summary: the verdict, each anomaly found with its
// judgement and reason, and why a verdict is unknown.
func printSummary(w io.Writer, path string, r *results.Results) {
	parts := len(r.Stats.Partitions)
	head := fmt.Sprintf("verity check: %s  %s (ops: %d, partitions with final reads: %d)", strings.ToUpper(string(r.Verdict)), path, r.History.Ops, parts)
	if r.Scenario != "" {
		head += ", scenario " + r.Scenario
	}
	fmt.Fprintln(w, head)
	names := make([]string, 0, len(r.Anomalies))
	for name, a := range r.Anomalies {
		if a.Count > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
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
	for _, why := range r.UnknownReasons {
		fmt.Fprintf(w, "  unknown: %s\n", why)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}
