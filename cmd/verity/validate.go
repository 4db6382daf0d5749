package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/runner"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/results"
)

// validateCommand checks scenario files as run --file would take them, and plans their runs
// (the header each would write), without an engine or a cluster.
func validateCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:         "validate",
		Usage:        "check scenario YAML files without starting anything",
		ArgsUsage:    "FILE...",
		Description:  "Each file is read, defaulted and validated as 'verity run --file' reads it, and its run is planned; every problem is printed. Exit 0 when every file is valid, 2 otherwise.",
		OnUsageError: onUsage,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() == 0 {
				return &usageError{err: errors.New("validate takes one or more scenario files"), cmd: cmd.FullName()}
			}
			w := cmd.Root().Writer
			bad := 0
			for _, f := range cmd.Args().Slice() {
				msg, err := validateFile(f)
				if err != nil {
					bad++
					fmt.Fprintf(cmd.Root().ErrWriter, "verity: %s: %s\n", f, oneLine(err.Error()))
					continue
				}
				fmt.Fprintf(w, "%s: ok: %s\n", f, msg)
			}
			if bad > 0 {
				return &exitError{code: exitUsage}
			}
			return nil
		},
	}
}

// validateFile loads, validates and plans one scenario file, and says what it would run.
func validateFile(path string) (string, error) {
	s, err := scenarios.Load(path)
	if err != nil {
		return "", err
	}
	if err := runner.Plan(s); err != nil {
		return "", err
	}
	return fmt.Sprintf("scenario %s, seed %d, %s on %d broker(s), client %s, expects %s",
		s.Name, s.Seed, s.Duration, s.Topology.Nodes, s.Client.Name, s.Expect.Verdict), nil
}

// versionCommand says what this binary is: its module version and commit, the Go that built it,
// the clients linked into it and the images it runs.
func versionCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:         "version",
		Usage:        "print Verity's version, the clients linked into it and the images it runs",
		OnUsageError: onUsage,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return &usageError{err: fmt.Errorf("version takes no arguments, got %q", cmd.Args().First()), cmd: cmd.FullName()}
			}
			w := cmd.Root().Writer
			fmt.Fprintf(w, "verity %s\n", results.BuildVersion())
			for _, c := range kafkaconf.Clients() {
				fmt.Fprintf(w, "client %s %s (%s)\n", c.Name, c.Version(), c.Module)
			}
			for _, r := range kafkaconf.Releases() {
				official, standIn := harness.KafkaImages(r.Version)
				def := ""
				if r.Version == kafkaconf.DefaultKafkaVersion {
					def = " (the default)"
				}
				fmt.Fprintf(w, "kafka %s image %s, else the stand-in %s%s\n", r.Version, official, standIn, def)
			}
			fmt.Fprintf(w, "toxiproxy image %s, else the stand-in %s\n", harness.OfficialToxiproxyImage, harness.StandInToxiproxyImage)
			return nil
		},
	}
}
