package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/runner"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/results"
)

// scenarioFlags choose a scenario and force settings onto it (run and matrix share them).
func scenarioFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "scenario", Aliases: []string{"s"}, Usage: "built-in scenario `NAME` (see 'verity list')", Value: "default"},
		&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "scenario YAML `FILE` instead of a built-in"},
		&cli.Int64Flag{Name: "seed", Usage: "seed `N` of every random choice (default: the scenario's)", HideDefault: true},
		&cli.DurationFlag{Name: "duration", Usage: "how long the workloads run, e.g. `60s` (default: the scenario's)", HideDefault: true},
		&cli.StringFlag{Name: "out", Usage: "write the artifacts into `DIR` (default: verity-out/<scenario>-<time>)"},
		&cli.IntFlag{Name: "nodes", Usage: "number of brokers `N`", HideDefault: true},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log what the harness, workloads and nemesis do to stderr"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress lines on stderr"},
	}
}

// overrideFlags are the single-valued configuration flags of run.
func overrideFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "acks", Usage: "acks `ACKS` of every producer (0, 1 or all)"},
		&cli.IntFlag{Name: "min-isr", Usage: "min.insync.replicas `N` of every topic", HideDefault: true},
		&cli.IntFlag{Name: "rf", Usage: "replication factor `N` of every topic", HideDefault: true},
		&cli.BoolFlag{Name: "unclean", Usage: "unclean.leader.election.enable on every topic (--unclean=false: off)"},
		&cli.BoolFlag{Name: "idempotence", Usage: "enable.idempotence on every producer (--idempotence=false: off)"},
		&cli.StringFlag{Name: "isolation", Usage: "isolation `LEVEL` of the consumers (read_committed or read_uncommitted)"},
	}
}

func runCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run a scenario on a fresh cluster and judge it",
		Description: "Starts a Kafka cluster with every link behind Toxiproxy, runs the scenario's workloads and faults, " +
			"heals, reads every partition back, judges the history against Kafka's documented guarantees and writes " +
			"history.jsonl, results.json, report.html, junit.xml and the nodes' logs into --out. Progress goes to stderr, " +
			"the verdict to stdout. Exit codes: 0 pass, 1 a guarantee violated, 2 usage or infrastructure error, 3 unknown.",
		OnUsageError: onUsage,
		Flags:        append(scenarioFlags(), overrideFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return &usageError{err: fmt.Errorf("run takes no arguments, got %q", cmd.Args().First()), cmd: "verity run"}
			}
			s, err := loadScenario(cmd)
			if err != nil {
				return err
			}
			if s, err = s.Override(runOverrides(cmd, true)); err != nil {
				return &usageError{err: err, cmd: "verity run"}
			}
			out := cmd.String("out")
			if out == "" {
				out = filepath.Join("verity-out", fmt.Sprintf("%s-%s", s.Name, time.Now().Format("20060102-150405")))
			}
			stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
			opts := runner.Options{Out: out, Log: logger(cmd, stderr), Harness: harness.Spec{NoSignalCleanup: true}}
			if !cmd.Bool("quiet") {
				opts.Progress = stderr
			}
			fmt.Fprintf(stderr, "verity: running %s (seed %d, %s, %d brokers) into %s\n", s.Name, s.Seed, s.Duration, s.Topology.Nodes, out)
			o2, err := runner.Run(ctx, s, opts)
			if err != nil {
				return &exitError{code: exitUsage, msg: oneLine(err.Error())}
			}
			printOutcome(stdout, o2)
			return verdictExit(o2.Verdict())
		},
	}
}

// loadScenario reads --file or the built-in --scenario.
func loadScenario(cmd *cli.Command) (scenarios.Scenario, error) {
	if f := cmd.String("file"); f != "" {
		if cmd.IsSet("scenario") {
			return scenarios.Scenario{}, &usageError{err: errors.New("give --scenario or --file, not both"), cmd: cmd.FullName()}
		}
		s, err := scenarios.Load(f)
		if err != nil {
			return s, &exitError{code: exitUsage, msg: oneLine(err.Error())}
		}
		return s, nil
	}
	s, err := scenarios.Builtin(cmd.String("scenario"))
	if err != nil {
		return s, &usageError{err: fmt.Errorf("%w (or give a YAML file with --file)", err), cmd: "verity list"}
	}
	return s, nil
}

// runOverrides reads the flags that force settings onto the scenario: seed and duration, and
// with config the single-valued configuration flags of run (matrix reads those as axes).
func runOverrides(cmd *cli.Command, config bool) scenarios.Overrides {
	var o scenarios.Overrides
	if cmd.IsSet("seed") {
		v := cmd.Int64("seed")
		o.Seed = &v
	}
	if cmd.IsSet("duration") {
		v := cmd.Duration("duration")
		o.Duration = &v
	}
	if !config {
		return o
	}
	if cmd.IsSet("acks") {
		v := cmd.String("acks")
		o.Acks = &v
	}
	if cmd.IsSet("isolation") {
		v := cmd.String("isolation")
		o.Isolation = &v
	}
	for _, f := range []struct {
		name string
		dst  **int
	}{{"min-isr", &o.MinISR}, {"rf", &o.RF}, {"nodes", &o.Nodes}} {
		if cmd.IsSet(f.name) {
			v := cmd.Int(f.name)
			*f.dst = &v
		}
	}
	for _, f := range []struct {
		name string
		dst  **bool
	}{{"unclean", &o.Unclean}, {"idempotence", &o.Idempotence}} {
		if cmd.IsSet(f.name) {
			v := cmd.Bool(f.name)
			*f.dst = &v
		}
	}
	return o
}

func logger(cmd *cli.Command, stderr io.Writer) *slog.Logger {
	level := slog.LevelError + 1 // nothing: progress lines and the verdict say what a user needs
	if cmd.Bool("verbose") {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

func verdictExit(v results.Verdict) error {
	switch v {
	case results.Pass:
		return nil
	case results.Fail:
		return &exitError{code: exitFail}
	}
	return &exitError{code: exitUnknown}
}

// printOutcome writes the verdict, what the scenario expected, and where the artifacts are.
func printOutcome(w io.Writer, o *runner.Outcome) {
	r := o.Results
	printSummary(w, o.History, r)
	s := o.Scenario
	fmt.Fprintf(w, "  scenario %s, seed %d: expected %s", s.Name, s.Seed, s.Expect.Verdict)
	if len(s.Expect.Likely) > 0 {
		fmt.Fprintf(w, " with %s likely", strings.Join(s.Expect.Likely, ", "))
	}
	fmt.Fprintf(w, "; got %s\n", r.Verdict)
	fmt.Fprintf(w, "  wall time %s (cluster ready in %s)\n", o.Wall.Round(100*time.Millisecond), o.ClusterReady.Round(100*time.Millisecond))
	fmt.Fprintf(w, "  artifacts: %s (history.jsonl, results.json, report.html, junit.xml, logs/)\n", o.Dir)
}

func listCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:         "list",
		Usage:        "list the built-in scenarios and the faults a scenario file may use",
		OnUsageError: onUsage,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "yaml", Usage: "print the scenario `NAME`d by --scenario as YAML, a start for a file of your own"},
			&cli.StringFlag{Name: "scenario", Aliases: []string{"s"}, Usage: "with --yaml: the scenario `NAME`", Value: "default"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			w := cmd.Root().Writer
			if cmd.Bool("yaml") {
				s, err := scenarios.Builtin(cmd.String("scenario"))
				if err != nil {
					return &usageError{err: err, cmd: "verity list"}
				}
				b, err := s.YAML()
				if err != nil {
					return &exitError{code: exitUsage, msg: oneLine(err.Error())}
				}
				_, err = w.Write(b)
				return err
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCENARIO\tEXPECTS\tDESCRIPTION")
			for _, s := range scenarios.Builtins() {
				exp := s.Expect.Verdict
				if len(s.Expect.Likely) > 0 {
					exp += ", " + strings.Join(s.Expect.Likely, ", ") + " likely"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, exp, s.Description)
			}
			_ = tw.Flush()
			fmt.Fprintln(w)
			tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "FAULT\tKIND\tWHAT IT DOES")
			for _, f := range scenarios.FaultSpecs() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, f.Kind, f.Doc)
			}
			return tw.Flush()
		},
	}
}
