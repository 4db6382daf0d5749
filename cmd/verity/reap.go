package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"
	"github.com/verity-kafka/verity/harness"
)

// reapCommand removes what killed runs left behind: every container, network and volume
// labelled io.verity.run (of one run with --run).
func reapCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:         "reap",
		Usage:        "remove every container, network and volume that Verity runs left behind",
		OnUsageError: onUsage,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "run", Usage: "only this run id (default: every run)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return &usageError{err: fmt.Errorf("reap takes no arguments, got %q", cmd.Args().First()), cmd: cmd.FullName()}
			}
			rm, err := harness.Reap(ctx, cmd.String("run"))
			if err != nil {
				return &exitError{code: exitUsage, msg: oneLine(err.Error())}
			}
			fmt.Fprintf(cmd.Root().Writer, "removed %d containers, %d networks, %d volumes labelled %s\n",
				rm.Containers, rm.Networks, rm.Volumes, harness.Label)
			return nil
		},
	}
}
