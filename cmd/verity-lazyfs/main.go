// Command verity-lazyfs runs a program on the lazy filesystem (package lazyfs), which keeps
// through a power cut only what the program fsynced. It is a container's entrypoint: it runs as
// root, prepares the store, mounts it and runs the program as an ordinary user.
//
//	verity-lazyfs run -mount DIR -store DIR [-user NAME] -- CMD [ARGS...]
//	verity-lazyfs cut -store DIR
//	verity-lazyfs sync -store DIR
//	verity-lazyfs fault -store DIR -set FILE|-
//	verity-lazyfs fault -store DIR -clear
//	verity-lazyfs fault -store DIR -status
//
// run prints "lazyfs: power loss: dropped B bytes in F files" when the start follows a power cut
// and "lazyfs: mounted DIR over STORE/live (durable copy STORE/durable)" once mounted, on stderr.
// It forwards SIGTERM and SIGINT to the program and exits with its exit code (128+N when signal N
// ended it). cut marks the store: the next run drops what was not durable. sync asks the running
// daemon (SIGUSR1) to make everything durable, as a machine left running writes its page cache
// back, and waits until it has.
//
// fault -set reads disk fault rules (JSON, control.Faults: {"rules": [{"kind": "error", "op":
// "fsync", "path": "*/__cluster_metadata-0/*", "once": true}]}) from FILE or, with -, stdin, and
// has the running daemon (SIGUSR2) put them in force in place of any before; -clear ends them.
// Both wait until the daemon has done so. -status prints the status of the last rules set
// (control.FaultStatus, JSON), which the daemon keeps current in the store; it needs no daemon.
// Faults end with the daemon: a restart starts with none.
//
// Exit codes: 1 the filesystem failed, 2 bad usage (a fault rule that is not valid included).
// The standard flag package is enough for four subcommands and keeps the static binary small.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/verity-kafka/verity/lazyfs"
	"github.com/verity-kafka/verity/lazyfs/control"
)

const (
	exitFailed = 1
	exitUsage  = 2
	usage      = "usage: verity-lazyfs run -mount DIR -store DIR [-user NAME] -- CMD [ARGS...] | verity-lazyfs cut|sync -store DIR | verity-lazyfs fault -store DIR -set FILE|- | -clear | -status"
)

// usageError is bad usage; it ends the command with exitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg + "; " + usage }

func main() {
	os.Exit(run(context.Background(), os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr}))
}

type stdio struct {
	in          io.Reader
	out, errOut io.Writer
}

// run runs the command line args (without the program name) and returns the exit code.
func run(ctx context.Context, args []string, std stdio) int {
	stderr := std.errOut
	code, err := dispatch(ctx, args, std)
	if err == nil {
		return code
	}
	fmt.Fprintf(stderr, "verity-lazyfs: %v\n", err)
	if errors.As(err, new(*usageError)) {
		return exitUsage
	}
	return exitFailed
}

func dispatch(ctx context.Context, args []string, std stdio) (int, error) {
	if len(args) == 0 {
		return 0, &usageError{"no subcommand"}
	}
	fl := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	mount := fl.String("mount", "", "the directory to mount the filesystem on")
	store := fl.String("store", "", "the store directory (live/, durable/ and control files)")
	userName := fl.String("user", "", "the user to run the program as (default: this one)")
	setFile := fl.String("set", "", "fault: the file of rules to set (- for stdin)")
	clearFaults := fl.Bool("clear", false, "fault: end the faults in force")
	showStatus := fl.Bool("status", false, "fault: print the status of the last faults set")
	if err := fl.Parse(args[1:]); err != nil {
		return 0, &usageError{err.Error()}
	}
	if *store == "" {
		return 0, &usageError{"-store is required"}
	}
	given := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if args[0] != "fault" && (given["set"] || given["clear"] || given["status"]) {
		return 0, &usageError{"-set, -clear and -status are fault's"}
	}
	switch args[0] {
	case "fault":
		if *mount != "" || *userName != "" || fl.NArg() > 0 {
			return 0, &usageError{"fault takes -store and one of -set, -clear, -status only"}
		}
		if n := len(given) - 1; n != 1 {
			return 0, &usageError{"fault takes one of -set, -clear, -status"}
		}
		return 0, fault(ctx, *store, *setFile, *clearFaults, *showStatus, std)
	case "cut", "sync":
		if *mount != "" || *userName != "" || fl.NArg() > 0 {
			return 0, &usageError{args[0] + " takes -store only"}
		}
		if args[0] == "sync" {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			return 0, lazyfs.RequestSync(ctx, *store)
		}
		return 0, lazyfs.Cut(*store)
	case "run":
		if *mount == "" {
			return 0, &usageError{"-mount is required"}
		}
		if fl.NArg() == 0 {
			return 0, &usageError{"no program to run after --"}
		}
		acct, err := lookupUser(*userName)
		if err != nil {
			return 0, err
		}
		return serve(ctx, *mount, *store, acct, fl.Args(), std.errOut)
	}
	return 0, &usageError{fmt.Sprintf("unknown subcommand %q", args[0])}
}

// fault sets the rules in the file setFile (stdin for "-"), clears them or prints their status.
func fault(ctx context.Context, store, setFile string, clearFaults, showStatus bool, std stdio) error {
	if showStatus {
		st, err := lazyfs.ReadFaultStatus(store)
		if err != nil {
			return err
		}
		b, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(std.out, "%s\n", b)
		return err
	}
	req := control.FaultRequest{Action: control.ActionClear}
	if !clearFaults {
		rules, err := readFaults(setFile, std.in)
		if err != nil {
			return err
		}
		req = control.FaultRequest{Action: control.ActionSet, Rules: rules}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return lazyfs.RequestFaults(ctx, store, req)
}

// readFaults reads and checks the rules in the file name (stdin for "-"); a rule that is not
// valid, or a field that is not a rule's, is bad usage.
func readFaults(name string, stdin io.Reader) ([]control.DiskFault, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, &usageError{fmt.Sprintf("-set %s: %v", name, err)}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f control.Faults
	if err := dec.Decode(&f); err != nil {
		return nil, &usageError{fmt.Sprintf("-set %s: not the JSON of fault rules: %v", name, err)}
	}
	if err := f.Validate(); err != nil {
		return nil, &usageError{fmt.Sprintf("-set %s: %v", name, err)}
	}
	return f.Rules, nil
}

// account is who the program runs as; cred is nil for the user verity-lazyfs runs as.
type account struct {
	uid, gid   int
	name, home string
	cred       *syscall.Credential
}

func lookupUser(name string) (account, error) {
	if name == "" {
		return account{uid: os.Getuid(), gid: os.Getgid()}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return account{}, &usageError{fmt.Sprintf("-user %s: %v", name, err)}
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return account{}, fmt.Errorf("reading user %s: %w", name, err)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	gids, err := u.GroupIds()
	if err != nil {
		return account{}, fmt.Errorf("reading the groups of user %s: %w", name, err)
	}
	for _, g := range gids {
		if n, err := strconv.Atoi(g); err == nil {
			cred.Groups = append(cred.Groups, uint32(n))
		}
	}
	return account{uid: uid, gid: gid, name: u.Username, home: u.HomeDir, cred: cred}, nil
}

// serve prepares the store, mounts it, runs the program on it and unmounts once it exits.
func serve(ctx context.Context, mount, store string, acct account, argv []string, stderr io.Writer) (int, error) {
	drop, err := lazyfs.Prepare(store, acct.uid, acct.gid)
	if err != nil {
		return 0, err
	}
	if drop.Cut {
		fmt.Fprintf(stderr, "lazyfs: power loss: dropped %d bytes in %d files\n", drop.Bytes, drop.Files)
	}
	if err := os.MkdirAll(mount, 0o755); err != nil {
		return 0, fmt.Errorf("making the mount point: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	srv, err := lazyfs.Mount(ctx, mount, store, lazyfs.Options{Logger: logger})
	if err != nil {
		return 0, err
	}
	// Listening before the pid is announced: SIGUSR1's and SIGUSR2's default action would end
	// the daemon.
	requests := make(chan os.Signal, 2)
	signal.Notify(requests, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(requests)
	if err := lazyfs.Announce(store); err != nil {
		return 0, errors.Join(err, srv.Unmount())
	}
	fmt.Fprintf(stderr, "lazyfs: mounted %s over %s (durable copy %s)\n", mount,
		filepath.Join(store, "live"), filepath.Join(store, "durable"))
	code, runErr := runProgram(mount, acct, argv, requests, func(sig os.Signal) {
		if sig == syscall.SIGUSR2 {
			if err := srv.AnswerFaults(); err != nil {
				logger.Warn("lazyfs: faults", "err", err)
			}
			return
		}
		if err := srv.AnswerSync(store); err != nil {
			logger.Warn("lazyfs: sync", "err", err)
		}
	})
	if err := srv.Unmount(); err != nil {
		return 0, errors.Join(runErr, err)
	}
	return code, runErr
}

// runProgram runs argv as acct, forwarding SIGTERM and SIGINT, calling answer with each signal
// from requests, and returns its exit code.
func runProgram(mount string, acct account, argv []string, requests <-chan os.Signal, answer func(os.Signal)) (int, error) {
	if err := os.Chown(mount, acct.uid, acct.gid); err != nil {
		return 0, fmt.Errorf("giving the mount to the user: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = os.Environ()
	if acct.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: acct.cred}
		cmd.Env = append(cmd.Env, "HOME="+acct.home, "USER="+acct.name)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case sig := <-requests:
				answer(sig)
			case <-done:
				return
			}
		}
	}()
	return exitCode(cmd.Wait())
}

func exitCode(err error) (int, error) {
	var ee *exec.ExitError
	if err == nil {
		return 0, nil
	}
	if !errors.As(err, &ee) {
		return 0, fmt.Errorf("waiting for the program: %w", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ee.ExitCode(), nil
}
