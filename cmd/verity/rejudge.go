package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v3"

	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/runner"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/results"
)

// reportCommand judges a run's saved history again and regenerates its artifacts in place: the
// one command that writes into a run's directory after the run.
func reportCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "judge a run's saved history again and regenerate its results.json, report.html and junit.xml",
		ArgsUsage: "RUN_DIR",
		Description: "Reads RUN_DIR/history.jsonl (as 'verity run' wrote it), judges it with this version's checker, and " +
			"writes results.json, report.html and junit.xml into RUN_DIR, keeping what only the run knew from the " +
			"results.json there (its timings, its notes, why it could not be judged). Exit codes as for check.",
		OnUsageError: onUsage,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return &usageError{err: errors.New("report takes one argument, a run's directory: verity report RUN_DIR"), cmd: "verity report"}
			}
			dir := cmd.Args().First()
			hist := filepath.Join(dir, runner.HistoryFile)
			if _, err := os.Stat(hist); err != nil {
				return &exitError{code: exitUsage, msg: fmt.Sprintf("%s has no %s: give the directory of a run", dir, runner.HistoryFile)}
			}
			var prev *results.Results
			if _, err := os.Stat(filepath.Join(dir, results.FileName)); err == nil {
				p, err := results.Read(filepath.Join(dir, results.FileName))
				if err != nil {
					return &exitError{code: exitUsage, msg: oneLine(err.Error()) + "; move it away to judge the history afresh"}
				}
				prev = p
			}
			r, err := runner.Rejudge(ctx, dir, prev, verify.Options{})
			if err != nil {
				return checkError(ctx, cmd, err)
			}
			stdout := cmd.Root().Writer
			printSummary(stdout, "verity report", hist, r)
			if err := writeArtifacts(ctx, stdout, dir, r, hist, report.Options{Rerun: runner.RerunCommand(dir, r.Scenario, r.Seed), Expectation: runner.SavedExpectation(dir)}); err != nil {
				return err
			}
			return verdictExit(r)
		},
	}
}
