package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/urfave/cli/v3"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads"
	"github.com/verity-kafka/verity/workloads/kclient/remote"
)

// clientCommand is the remote client protocol's tools: serve a Go client over it, and hold a
// client program to it.
func clientCommand(onUsage cli.OnUsageErrorFunc) *cli.Command {
	return &cli.Command{
		Name:         "client",
		Usage:        "serve a Go client over the remote client protocol, or check a client program against it (docs/client-protocol.md)",
		OnUsageError: onUsage,
		Commands: []*cli.Command{
			{
				Name:  "serve",
				Usage: "speak the remote client protocol on standard input and output with one of Verity's Go clients",
				Description: "The protocol's reference program: it reads requests on standard input, answers on standard output, " +
					"and exits when its input ends. Its log goes to standard error.",
				OnUsageError: onUsage,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "client", Value: string(kafkaconf.DefaultClient), Usage: "the Go `CLIENT` to serve: " + clientNames()},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if cmd.NArg() > 0 {
						return &usageError{err: fmt.Errorf("serve takes no arguments, got %q", cmd.Args().First()), cmd: cmd.FullName()}
					}
					name, err := kafkaconf.ParseClient(cmd.String("client"))
					if err != nil {
						return &usageError{err: err, cmd: cmd.FullName()}
					}
					log := slog.New(slog.NewTextHandler(cmd.Root().ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))
					if err := workloads.ServeClient(ctx, name, os.Stdin, cmd.Root().Writer, log); err != nil && ctx.Err() == nil {
						return &exitError{code: exitUsage, msg: oneLine(err.Error())}
					}
					return nil
				},
			},
			{
				Name:      "check",
				Usage:     "hold a client program to the remote client protocol's rules",
				ArgsUsage: "-- PROGRAM [ARG...]",
				Description: "Starts the program once per rule, speaks to it on its standard input and output with brokers " +
					"that never answer (no Kafka cluster is needed), and prints each rule with ok or FAIL and why. " +
					"Exit 0 when the program keeps every rule, 1 otherwise. The program's standard error is shown with --verbose.",
				OnUsageError: onUsage,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "verbose", Usage: "show the program's standard error"},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if cmd.NArg() == 0 {
						return &usageError{err: fmt.Errorf("check needs the program to check: verity client check -- PROGRAM [ARG...]"), cmd: cmd.FullName()}
					}
					var stderr io.Writer = io.Discard
					if cmd.Bool("verbose") {
						stderr = cmd.Root().ErrWriter
					}
					report, ok := remote.Report(remote.Check(ctx, cmd.Args().Slice(), stderr))
					fmt.Fprint(cmd.Root().Writer, report)
					if !ok {
						return &exitError{code: exitFail, msg: "the program breaks the protocol's rules above"}
					}
					return nil
				},
			},
		},
	}
}

func clientNames() string {
	var s string
	for i, c := range kafkaconf.Clients() {
		if i > 0 {
			s += ", "
		}
		s += string(c.Name)
	}
	return s
}
