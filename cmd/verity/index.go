package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/verity-kafka/verity/report"
)

// indexCommand writes index.html over every run folder below a directory.
func indexCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:      "index",
		Usage:     "write DIR/index.html over every run folder below DIR: newest first, per scenario a trend",
		ArgsUsage: "DIR",
		Description: "A run folder is one with results.json beside history.jsonl (verity run's --out, each run of a matrix or a suite). " +
			"The page lists every run (time, scenario, seed, verdict, anomalies, client, throughput, unavailability, wall " +
			"time, Kafka image) with a link to its report, links the latest, and draws per scenario its verdicts and " +
			"figures over the runs. It is one file with no external links.",
		OnUsageError: onUsage,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() != 1 {
				return &usageError{err: errors.New("index takes one directory"), cmd: cmd.FullName()}
			}
			path, runs, skipped, err := report.WriteIndex(cmd.Args().First())
			if err != nil {
				return &exitError{code: exitUsage, msg: oneLine(err.Error())}
			}
			for _, s := range skipped {
				fmt.Fprintf(cmd.Root().ErrWriter, "verity: skipped %s\n", oneLine(s))
			}
			fmt.Fprintf(cmd.Root().Writer, "%s: %d run(s)\n", path, len(runs))
			return nil
		},
	}
}
