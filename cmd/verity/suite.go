package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/runner"
	"github.com/verity-kafka/verity/scenarios"
)

func suiteCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "scenario", Aliases: []string{"s"}, Usage: "built-in scenario `NAMES` or globs, comma-separated (default,lab-*); default: every built-in"},
		&cli.StringFlag{Name: "tag", Usage: "every built-in with one of these `TAGS`, comma-separated (regression,sinks; see 'verity list')"},
		&cli.StringFlag{Name: "skip-tag", Usage: "leave out the built-ins chosen that carry one of these `TAGS` (slow: a quick nightly)"},
		&cli.StringFlag{Name: "out", Usage: "write the runs and tables into `DIR` (default: verity-out/suite-<time>)"},
	}
	flags = append(flags, logFlags()...)
	flags = append(flags, knobFlags(useMatrix)...)
	flags = append(flags, repeatFlags("1", "the suite's runs")...)
	return &cli.Command{
		Name:  "suite",
		Usage: "run a set of scenarios (every built-in by default) across axes, each run judged against its own scenario",
		Description: "Scenarios are chosen by name or glob (-s) and by tag (--tag); either chooses; --skip-tag leaves out those " +
			"that carry a tag (--skip-tag slow). Each is crossed with the axes " +
			"given (--client, --kafka-version and every knob 'verity matrix' takes as an axis) and each cell runs --runs times, " +
			"on clusters shared by the cells of one shape. A run meets its expectation when it gets its scenario's verdict and, " +
			"over its cell's runs, each positive control fires; a regression scenario (regress-*) runs its bad and fixed side " +
			"and is met when the bug is found again, as in 'verity matrix'. A cell whose client lacks a capability the scenario " +
			"requires, or whose setting the scenario cannot take, is not applicable. Prints the table (markdown) to stdout and " +
			"writes suite.md, suite.html, junit.xml (a case per run), suite.json and every run's artifacts into --out. With " +
			"--shard K/N only the runs i with i mod N = K-1 run; 'verity merge' joins the shards. Exit codes: 0 every run met " +
			"its expectation (or waits for the merge), 1 some run did not, 2 usage or infrastructure error or a run that did " +
			"not complete, 3 some run unknown.",
		OnUsageError: onUsage,
		Flags:        flags,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			spec, err := suiteSpec(cmd)
			if err != nil {
				return err
			}
			res, err := runner.RunSuite(ctx, spec)
			stdout := cmd.Root().Writer
			if res != nil && res.Markdown != "" {
				fmt.Fprint(stdout, res.Markdown)
			}
			if err != nil {
				return &exitError{code: exitUsage, msg: oneLine(err.Error())}
			}
			fmt.Fprintf(stdout, "\n%d runs in %s; %d cluster(s) started (start+remove %s in all)\n", len(res.Manifest.Runs),
				res.Wall.Round(time.Second), res.ClustersStarted, res.StartClose.Round(time.Second))
			fmt.Fprintf(stdout, "table: %s, %s, %s; runs under %s\n", res.MarkdownFile, res.HTMLFile, res.JUnitFile, spec.Out)
			return suiteExit(res.Manifest)
		},
	}
}

// suiteSpec reads the suite's command line into a spec, checked before anything runs.
func suiteSpec(cmd *cli.Command) (runner.SuiteSpec, error) {
	usage := func(err error) error { return &usageError{err: err, cmd: "verity suite"} }
	if cmd.NArg() > 0 {
		return runner.SuiteSpec{}, usage(fmt.Errorf("suite takes no arguments, got %q (name scenarios with -s)", cmd.Args().First()))
	}
	chosen, err := scenarios.Select(axisValues(cmd.String("scenario")), axisValues(cmd.String("tag")), axisValues(cmd.String("skip-tag")))
	if err != nil {
		return runner.SuiteSpec{}, usage(err)
	}
	var spec runner.SuiteSpec
	for _, s := range chosen {
		r, err := s.Resolve()
		if err != nil {
			return spec, &exitError{code: exitUsage, msg: oneLine(fmt.Sprintf("built-in %s: %v", s.Name, err))}
		}
		spec.Scenarios = append(spec.Scenarios, r)
	}
	spec.Set = knobSettings(cmd, useMatrix)
	for _, name := range runner.AxisNames() {
		if cmd.IsSet(name) {
			spec.Axes = append(spec.Axes, runner.MatrixAxis{Name: name, Values: axisValues(cmd.String(name))})
		}
	}
	if spec.Runs, err = strconv.Atoi(strings.TrimSpace(cmd.String("runs"))); err != nil || spec.Runs < 1 {
		return spec, usage(fmt.Errorf("--runs %q: want a whole number, 1 or more", cmd.String("runs")))
	}
	if cmd.IsSet("shard") {
		if spec.Shard, err = runner.ParseShard(cmd.String("shard")); err != nil {
			return spec, usage(fmt.Errorf("--shard: %w", err))
		}
	}
	spec.Out = cmd.String("out")
	if spec.Out == "" {
		spec.Out = filepath.Join("verity-out", "suite-"+time.Now().Format("20060102-150405"))
	}
	stderr := cmd.Root().ErrWriter
	spec.Harness, spec.Log = harness.Spec{NoSignalCleanup: true}, logger(cmd, stderr)
	if !cmd.Bool("quiet") {
		spec.Progress = stderr
	}
	if err := runner.CheckSuite(spec); err != nil {
		return spec, usage(err)
	}
	return spec, nil
}

// suiteExit is a suite's exit: 2 when a run did not complete, 1 when one did not meet its
// expectation, 3 when one could not be judged, else 0 (runs pending a merge included).
func suiteExit(m runner.SuiteManifest) error {
	switch j := m.Worst(); j {
	case report.JudgementIncomplete:
		return &exitError{code: exitUsage, msg: fmt.Sprintf("%d of %d runs did not complete (see the table)", m.Count(j), len(m.Runs))}
	case report.JudgementNotMet:
		return &exitError{code: exitFail, msg: fmt.Sprintf("%d of %d runs did not meet their scenario's expectation (see the table)", m.Count(j), len(m.Runs))}
	case report.JudgementUnknown:
		return &exitError{code: exitUnknown, msg: fmt.Sprintf("%d of %d runs could not be judged (verdict unknown)", m.Count(j), len(m.Runs))}
	}
	return nil
}
