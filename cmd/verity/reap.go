package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"
	"github.com/verity-kafka/verity/harness"
)

// reapCommand removes what runs left behind: the containers, networks and volumes labelled
// io.verity.run of runs whose process is gone (of one run with --run; of live ones too with --all).
func reapCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:  "reap",
		Usage: "remove the containers, networks and volumes that Verity runs whose process is gone left behind",
		Description: "A run's resources carry its id (label " + harness.Label + ") and the host and pid of the process that " +
			"started it (" + harness.OwnerLabel + "). Runs whose process still runs on this host, or that another host " +
			"started (a shared engine), are kept unless --all. Every run found is listed by id.",
		OnUsageError: onUsage,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "run", Usage: "only the run with this `ID` (default: every run)"},
			&cli.BoolFlag{Name: "all", Usage: "remove the runs of live processes and of other hosts too"},
			&cli.BoolFlag{Name: "dry-run", Usage: "list what would be removed, remove nothing"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return &usageError{err: fmt.Errorf("reap takes no arguments, got %q", cmd.Args().First()), cmd: cmd.FullName()}
			}
			opts := harness.ReapOptions{Run: cmd.String("run"), All: cmd.Bool("all"), DryRun: cmd.Bool("dry-run")}
			runs, err := harness.Reap(ctx, opts)
			w := cmd.Root().Writer
			var total harness.Removed
			kept := 0
			for _, r := range runs {
				owner := r.Owner
				if owner == "" {
					owner = "owner not recorded"
				}
				switch {
				case r.Kept():
					kept++
					fmt.Fprintf(w, "run %s (%s): kept, %s; --all removes it\n", r.ID, owner, r.Alive)
				case opts.DryRun:
					fmt.Fprintf(w, "run %s (%s): would remove %s\n", r.ID, owner, counts(r.Found))
				default:
					fmt.Fprintf(w, "run %s (%s): removed %s\n", r.ID, owner, counts(r.Removed))
				}
				total.Add(r.Removed)
			}
			if err != nil {
				return &exitError{code: exitUsage, msg: oneLine(err.Error())}
			}
			switch {
			case len(runs) == 0:
				fmt.Fprintf(w, "nothing labelled %s\n", harness.Label)
			case !opts.DryRun:
				fmt.Fprintf(w, "removed %s of %d run(s); %d kept\n", counts(total), len(runs)-kept, kept)
			}
			return nil
		},
	}
}

func counts(r harness.Removed) string {
	return fmt.Sprintf("%d containers, %d networks, %d volumes", r.Containers, r.Networks, r.Volumes)
}
