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
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/runner"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
	"github.com/verity-kafka/verity/workloads"
)

// scenarioFlags choose a scenario and say where its artifacts go (run and matrix share them).
func scenarioFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "scenario", Aliases: []string{"s"}, Usage: "built-in scenario `NAME` (see 'verity list')", Value: "default"},
		&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "scenario YAML `FILE` instead of a built-in"},
		&cli.StringFlag{Name: "out", Usage: "write the artifacts into `DIR` (default: verity-out/<scenario>-<time>)"},
	}, logFlags()...)
}

// logFlags say how much a command that runs scenarios writes to stderr.
func logFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log what the harness, workloads and nemesis do to stderr"},
		&cli.BoolFlag{Name: "debug", Usage: "log everything to stderr, down to each request the franz-go clients write (for investigating a client)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress lines on stderr"},
	}
}

// repeatFlags are --runs (default runs) and --shard of a command that repeats runs over cells
// (what names them in the usage).
func repeatFlags(runs, what string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "runs", Usage: "runs `N` of each cell (run k uses the scenario's seed+k-1)", Value: runs},
		&cli.StringFlag{Name: "shard", Usage: "run only the `K/N`-th slice of " + what + " (every run keeps its seed); 'verity merge' joins the N outputs"},
	}
}

func runCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run a scenario on a fresh cluster and judge it",
		Description: "Starts a Kafka cluster with every link behind Toxiproxy, runs the scenario's workloads and faults, " +
			"heals, reads every partition back, judges the history against Kafka's documented guarantees and writes " +
			"history.jsonl, results.json, report.html, junit.xml and the nodes' logs into --out. Progress goes to stderr, " +
			"the verdict to stdout. Exit codes: 0 pass, 1 a guarantee violated, 2 usage or infrastructure error, 3 unknown, " +
			"4 every guarantee kept but a liveness bound the scenario states (expect.liveness, --max-stall, --recover-within) broken.",
		OnUsageError: onUsage,
		Flags:        append(scenarioFlags(), knobFlags(useRun)...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return &usageError{err: fmt.Errorf("run takes no arguments, got %q", cmd.Args().First()), cmd: "verity run"}
			}
			s, err := loadScenario(cmd)
			if err != nil {
				return err
			}
			s, notes, err := runner.Force(s, knobSettings(cmd, useRun))
			if err != nil {
				return &usageError{err: err, cmd: "verity run"}
			}
			out := cmd.String("out")
			if out == "" {
				out = filepath.Join("verity-out", fmt.Sprintf("%s-%s", s.Name, time.Now().Format("20060102-150405")))
			}
			stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
			opts := runner.Options{Out: out, Log: logger(cmd, stderr), Harness: harness.Spec{NoSignalCleanup: true, RunID: harness.NewRunID()}, Notes: notes}
			if !cmd.Bool("quiet") {
				opts.Progress = stderr
			}
			fmt.Fprintf(stderr, "verity: running %s (seed %d, %s, %d brokers) into %s, run id %s\n", s.Name, s.Seed, s.Duration, s.Topology.Nodes, out, opts.Harness.RunID)
			o2, err := runner.Run(ctx, s, opts)
			if err != nil {
				return &exitError{code: exitUsage, msg: oneLine(err.Error())}
			}
			printOutcome(stdout, o2)
			return verdictExit(o2.Results)
		},
	}
}

// loadScenario reads --file or the built-in --scenario.
func loadScenario(cmd *cli.Command) (scenarios.Resolved, error) {
	if f := cmd.String("file"); f != "" {
		if cmd.IsSet("scenario") {
			return scenarios.Resolved{}, &usageError{err: errors.New("give --scenario or --file, not both"), cmd: cmd.FullName()}
		}
		s, err := scenarios.Load(f)
		if err != nil {
			return s, &exitError{code: exitUsage, msg: oneLine(err.Error())}
		}
		return s, nil
	}
	s, err := scenarios.Builtin(cmd.String("scenario"))
	if err != nil {
		return scenarios.Resolved{}, &usageError{err: fmt.Errorf("%w (or give a YAML file with --file)", err), cmd: "verity list"}
	}
	r, err := s.Resolve()
	if err != nil {
		return r, &exitError{code: exitUsage, msg: oneLine(fmt.Sprintf("built-in %s: %v", s.Name, err))}
	}
	return r, nil
}

func logger(cmd *cli.Command, stderr io.Writer) *slog.Logger {
	level := slog.LevelError + 1 // nothing: progress lines and the verdict say what a user needs
	switch {
	case cmd.Bool("debug"):
		level = workloads.WireLevel
	case cmd.Bool("verbose"):
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

// verdictExit is the exit of a command that judged one history, by its outcome: a safety fail
// first, then a stated liveness bound broken; unknown (safety or a stated bound unjudged) is
// never pass.
func verdictExit(r *results.Results) error {
	if r == nil {
		return &exitError{code: exitUnknown}
	}
	return outcomeExit(r.Outcome())
}

// outcomeExit is the exit of a command whose (worst) outcome is o.
func outcomeExit(o results.Outcome) error {
	switch o {
	case results.OutcomePass:
		return nil
	case results.OutcomeFail:
		return &exitError{code: exitFail}
	case results.OutcomeLivenessFail:
		return &exitError{code: exitLiveness}
	}
	return &exitError{code: exitUnknown}
}

// printOutcome writes the verdict, what the scenario expected, and where the artifacts are.
func printOutcome(w io.Writer, o *runner.Outcome) {
	r := o.Results
	printSummary(w, "verity run", o.History, r)
	s := o.Scenario
	fmt.Fprintf(w, "  scenario %s, seed %d: expected %s", s.Name, s.Seed, s.Expect.Verdict)
	if len(s.Expect.Likely) > 0 {
		fmt.Fprintf(w, " with %s likely", guarantee.Join(s.Expect.Likely))
	}
	if l := s.Expect.Liveness; l.Bounds() != nil {
		fmt.Fprintf(w, ", liveness %s", l.BoundsText())
		if c, ok := kafkaconf.LookupClient(s.Client.Name); ok && len(l.Lacks(c)) > 0 {
			fmt.Fprintf(w, " (known to break under %s: %s)", c.Name, l.Why)
		}
	}
	fmt.Fprintf(w, "; got %s", r.Verdict)
	if o := r.Outcome(); string(o) != string(r.Verdict) {
		fmt.Fprintf(w, ", outcome %s", o)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  wall time %s (cluster ready in %s)\n", o.Wall.Round(100*time.Millisecond), o.ClusterReady.Round(100*time.Millisecond))
	fmt.Fprintf(w, "  artifacts: %s (history.jsonl, results.json, report.html, junit.xml, logs/)\n", o.Dir)
}

func listCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "list the built-in scenarios, the faults a scenario file may use and the clients",
		ArgsUsage: "[NAME]",
		Description: "Without arguments: every built-in scenario (what it expects, its tags, what it provokes), every tag, every fault, and every client " +
			"with the version linked, the transaction protocols it speaks and its capabilities. " +
			"With --yaml NAME (or --yaml -s NAME): that scenario as YAML, every default written out, a start for a file of your own.",
		OnUsageError: onUsage,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "yaml", Usage: "print the scenario `NAME`d as an argument (or by --scenario) as YAML"},
			&cli.StringFlag{Name: "scenario", Aliases: []string{"s"}, Usage: "with --yaml: the scenario `NAME` (default: default)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			w := cmd.Root().Writer
			if !cmd.Bool("yaml") {
				if cmd.NArg() > 0 || cmd.IsSet("scenario") {
					return &usageError{err: errors.New("a scenario name only goes with --yaml: verity list --yaml NAME"), cmd: "verity list"}
				}
				return listAll(w)
			}
			name, err := yamlName(cmd)
			if err != nil {
				return err
			}
			s, err := scenarios.Builtin(name)
			if err != nil {
				return &usageError{err: err, cmd: "verity list"}
			}
			r, err := s.Resolve()
			if err != nil {
				return &exitError{code: exitUsage, msg: oneLine(err.Error())}
			}
			b, err := r.YAML()
			if err != nil {
				return &exitError{code: exitUsage, msg: oneLine(err.Error())}
			}
			_, err = w.Write(b)
			return err
		},
	}
}

// yamlName is the scenario list --yaml prints: the argument or --scenario, not both.
func yamlName(cmd *cli.Command) (string, error) {
	switch {
	case cmd.NArg() > 1:
		return "", &usageError{err: fmt.Errorf("list --yaml takes one scenario name, got %d", cmd.NArg()), cmd: "verity list"}
	case cmd.NArg() == 1 && cmd.IsSet("scenario") && cmd.String("scenario") != cmd.Args().First():
		return "", &usageError{err: fmt.Errorf("two scenarios named: %q and --scenario %q; give one", cmd.Args().First(), cmd.String("scenario")), cmd: "verity list"}
	case cmd.NArg() == 1:
		return cmd.Args().First(), nil
	case cmd.IsSet("scenario"):
		return cmd.String("scenario"), nil
	}
	return "default", nil
}

// listAll writes the built-ins, each with what the guarantee table expects of it, its tags and
// what it provokes, then the tags, the faults, the clients, the Kafka releases and the feature
// levels.
func listAll(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tEXPECTS\tTAGS\tDESCRIPTION")
	for _, s := range scenarios.Builtins() {
		exp := string(s.Expect.Verdict)
		if len(s.Expect.Likely) > 0 {
			exp += ", " + guarantee.Join(s.Expect.Likely) + " likely"
		}
		if b := s.Expect.Liveness.BoundsText(); b != "" {
			exp += ", " + b
		}
		desc := s.Description
		if s.Client.Name != kafkaconf.DefaultClient {
			desc = fmt.Sprintf("[%s] %s", s.Client.Name, desc)
		}
		tags := make([]string, len(s.Tags))
		for i, t := range s.Tags {
			tags[i] = string(t)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, exp, strings.Join(tags, ","), desc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TAG\tWHAT IT MARKS (verity suite --tag)")
	for _, t := range scenarios.TagSpecs() {
		fmt.Fprintf(tw, "%s\t%s\n", t.Tag, t.Doc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tKIND\tTARGET\tPARAMS\tWHAT IT DOES")
	for _, f := range scenarios.FaultSpecs() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Name, f.Kind, f.TargetText(), f.ParamsText(), f.Doc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT\tVERSION\tTRANSACTIONS\tGROUPS\tCAPABILITIES")
	for _, c := range kafkaconf.Clients() {
		protos := make([]string, len(c.TxnProtocols))
		for i, p := range c.TxnProtocols {
			protos[i] = string(p)
		}
		caps := make([]string, len(c.Capabilities))
		for i, cp := range c.Capabilities {
			caps[i] = string(cp)
		}
		groups := make([]string, len(c.GroupProtocols))
		for i, g := range c.GroupProtocols {
			groups[i] = string(g)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, c.Version(), strings.Join(protos, ", "), strings.Join(groups, ", "), strings.Join(caps, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KAFKA\tWHAT SETS IT APART")
	for _, r := range kafkaconf.Releases() {
		fmt.Fprintf(tw, "%s\t%s\n", r.Version, r.Doc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FEATURE\tKNOB\tWHAT ITS LEVEL CHANGES")
	for _, f := range kafkaconf.Features() {
		knob := "-"
		if f.Flag != "" {
			knob = "--" + f.Flag
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, knob, f.Doc)
	}
	return tw.Flush()
}
