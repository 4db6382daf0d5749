// Command verity runs Kafka clusters under faults, records what clients saw, and judges the
// history against what Kafka documents.
//
// Subcommands: run (one scenario on a fresh cluster), matrix (configurations × faults × runs on
// shared clusters, or one shard of them), suite (many scenarios across axes, each run judged
// against its own scenario, or one shard of them), merge (the shards' outputs as one matrix or
// suite), index (a page over many runs), list (built-in scenarios, their tags, faults), check (a
// saved history, writing nothing it was not asked to), report (a run's saved history judged
// again, its artifacts regenerated), reap (leftovers of killed runs), validate (scenario files
// checked without starting anything), version.
//
// The command line is built with github.com/urfave/cli/v3: it gives each subcommand its own
// flags, help and usage errors, so that adding run or matrix is adding one *cli.Command; it
// depends on nothing beyond the standard library and is actively maintained. The standard flag
// package has no subcommands, and cobra would bring pflag and more along.
//
// Exit codes (every subcommand): 0 pass, 1 a forbidden anomaly, 2 unreadable input or bad
// usage, 3 unknown (the history could not be fully checked), 4 every guarantee kept but a
// stated liveness bound broken. A command over many runs (matrix, merge) ends with the worst
// outcome any run had, in the order fail, fail (liveness), unknown, pass.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/urfave/cli/v3"
)

// Exit codes.
const (
	exitPass    = 0
	exitFail    = 1
	exitUsage   = 2
	exitUnknown = 3
	// exitLiveness: every safety promise kept, a stated liveness bound broken.
	exitLiveness = 4
)

func main() {
	// testcontainers prints a banner on its first engine connection through its own global
	// logger; a command line tool keeps stderr for its one-line messages.
	tclog.SetDefault(tclog.NewNoopLogger())
	// A closed pipe on stdout or stderr (verity run | head) must not kill the process before it
	// removes its cluster: ignored, the writes fail and the run goes on to its cleanup.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// exitError ends a subcommand with an exit code; its message, if any, is printed as one line.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// usageError is bad usage: a missing argument, an unknown or malformed flag. cmd names the
// command whose help says how to use it.
type usageError struct {
	err error
	cmd string
}

func (e *usageError) Error() string { return e.err.Error() }

// run runs the command line args and returns the exit code. It never panics on user input and
// prints errors as one line on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.Run(ctx, args)
	var ee *exitError
	var ue *usageError
	switch {
	case err == nil:
		return exitPass
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(stderr, "verity: "+ee.msg)
		}
		return ee.code
	case errors.As(err, &ue):
		cmd := ue.cmd
		if cmd == "" {
			cmd = "verity"
		}
		fmt.Fprintf(stderr, "verity: %s (see '%s --help')\n", oneLine(ue.Error()), cmd)
		return exitUsage
	default:
		// urfave/cli's own parse errors arrive here when no OnUsageError caught them.
		fmt.Fprintf(stderr, "verity: %s (see 'verity --help')\n", oneLine(err.Error()))
		return exitUsage
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func newApp(stdout, stderr io.Writer) *cli.Command {
	onUsage := func(_ context.Context, cmd *cli.Command, err error, _ bool) error {
		return &usageError{err: err, cmd: cmd.FullName()}
	}
	return &cli.Command{
		Name:  "verity",
		Usage: "run Kafka under faults and judge what clients saw against Kafka's documented guarantees",
		Description: "Exit codes: 0 pass, 1 a forbidden anomaly, 2 unreadable input or bad usage, " +
			"3 unknown (the history could not be fully checked, or a stated liveness bound could not be judged), " +
			"4 every guarantee kept but a stated liveness bound broken.",
		Writer:         stdout,
		ErrWriter:      stderr,
		OnUsageError:   onUsage,
		ExitErrHandler: func(context.Context, *cli.Command, error) {}, // run maps errors to codes
		Commands: []*cli.Command{
			runCommand(onUsage),
			listCommand(onUsage),
			matrixCommand(onUsage),
			suiteCommand(onUsage),
			mergeCommand(onUsage),
			indexCommand(onUsage),
			checkCommand(onUsage),
			reportCommand(onUsage),
			reapCommand(onUsage),
			validateCommand(onUsage),
			clientCommand(onUsage),
			versionCommand(onUsage),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return &usageError{err: fmt.Errorf("unknown command %q", cmd.Args().First())}
			}
			_ = cli.ShowAppHelp(cmd)
			return &exitError{code: exitUsage}
		},
	}
}
