package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/runner"
)

func matrixCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	flags := append(scenarioFlags(), knobFlags(useMatrix)...)
	flags = append(flags, repeatFlags("3", "the runs")...)
	return &cli.Command{
		Name:  "matrix",
		Usage: "run a scenario over configurations × faults × runs and compare them in one table",
		Description: "Every combination of the axes' values is a cell; each cell runs --runs times. Cells that need the " +
			"same cluster share one (each run on fresh topics). Prints the comparison table (markdown) to stdout and writes " +
			"matrix.md, matrix.html, junit.xml, matrix.json and every run's artifacts into --out. With --shard K/N only the " +
			"runs i with i mod N = K-1 run (in the order cells × runs), for N CI jobs; 'verity merge' joins them. Exit codes: 0 every run passed, 1 a guarantee " +
			"violated in some run, 2 usage or infrastructure error, 3 some run unknown. A regression scenario (regress-*) with no " +
			"axis given runs its bad and its fixed side; then 0 means the bug was found again (its anomalies in at least 2 of 3 " +
			"bad runs, none and a pass in every fixed run), 1 that it was not.",
		OnUsageError: onUsage,
		Flags:        flags,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return &usageError{err: fmt.Errorf("matrix takes no arguments, got %q", cmd.Args().First()), cmd: "verity matrix"}
			}
			base, err := loadScenario(cmd)
			if err != nil {
				return err
			}
			if base, err = base.Override(knobSettings(cmd, useMatrix)); err != nil {
				return &usageError{err: err, cmd: "verity matrix"}
			}
			var axes []runner.MatrixAxis
			for _, name := range runner.AxisNames() {
				if cmd.IsSet(name) {
					axes = append(axes, runner.MatrixAxis{Name: name, Values: axisValues(cmd.String(name))})
				}
			}
			if len(axes) == 0 && base.Regression != nil {
				axes = runner.RegressionAxes(*base.Regression)
			}
			if len(axes) == 0 {
				return &usageError{err: fmt.Errorf("no axis given: name at least one of --%s", strings.Join(runner.AxisNames(), ", --")), cmd: "verity matrix"}
			}
			out := cmd.String("out")
			if out == "" {
				out = filepath.Join("verity-out", fmt.Sprintf("matrix-%s-%s", base.Name, time.Now().Format("20060102-150405")))
			}
			runs, err := strconv.Atoi(strings.TrimSpace(cmd.String("runs")))
			if err != nil {
				return &usageError{err: fmt.Errorf("--runs: %q: want a whole number", cmd.String("runs")), cmd: "verity matrix"}
			}
			var shard runner.Shard
			if cmd.IsSet("shard") {
				if shard, err = runner.ParseShard(cmd.String("shard")); err != nil {
					return &usageError{err: fmt.Errorf("--shard: %w", err), cmd: "verity matrix"}
				}
			}
			stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
			spec := runner.MatrixSpec{Base: base, Axes: axes, Runs: runs, Out: out, Shard: shard,
				Harness: harness.Spec{NoSignalCleanup: true}, Log: logger(cmd, stderr)}
			if !cmd.Bool("quiet") {
				spec.Progress = stderr
			}
			if spec.Runs < 1 {
				return &usageError{err: fmt.Errorf("--runs %d: want at least 1", spec.Runs), cmd: "verity matrix"}
			}
			if err := runner.CheckMatrix(spec); err != nil {
				return &usageError{err: err, cmd: "verity matrix"}
			}
			res, err := runner.RunMatrix(ctx, spec)
			if res != nil && res.Markdown != "" {
				fmt.Fprint(stdout, res.Markdown)
			}
			if err != nil {
				return &exitError{code: exitUsage, msg: oneLine(err.Error())}
			}
			failed := 0
			for _, r := range res.Runs {
				if r.Err != nil {
					failed++
					fmt.Fprintf(stdout, "\nrun %d of %v did not complete: %s\n", r.Run, r.Axes, oneLine(r.Err.Error()))
				}
			}
			fmt.Fprintf(stdout, "\n%d runs in %s; %d cluster(s) started (start+remove %s in all); reusing clusters saved about %s\n",
				len(res.Runs), res.Wall.Round(time.Second), res.ClustersStarted, res.StartClose.Round(time.Second), res.Saved().Round(time.Second))
			fmt.Fprintf(stdout, "table: %s, %s, %s; runs under %s\n", res.MarkdownFile, res.HTMLFile, res.JUnitFile, out)
			if failed > 0 {
				return &exitError{code: exitUsage, msg: fmt.Sprintf("%d of %d runs did not complete (see above)", failed, len(res.Runs))}
			}
			if r := base.Regression; r != nil && slices.ContainsFunc(axes, func(a runner.MatrixAxis) bool { return a.Name == r.Knob }) {
				// A regression matrix is judged by its sides: the bad side must fail.
				found := runner.JudgeRegression(*r, res.Runs)
				fmt.Fprint(stdout, "\n"+found.String())
				if err := runner.WriteRegression(out, found); err != nil {
					return &exitError{code: exitUsage, msg: oneLine(err.Error())}
				}
				if !found.Reproduced {
					return &exitError{code: exitFail, msg: "regression " + r.Bug + " not found again (see above)"}
				}
				return nil
			}
			return outcomeExit(res.Worst())
		},
	}
}
