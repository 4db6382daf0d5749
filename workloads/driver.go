package workloads

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

// A Go binary links one version of a module, so a client at another version than the one linked
// into Verity runs in a driver: a binary of Verity's own workloads built with that version of
// the client's module (a replace directive in a throwaway module), cached by client, version
// and a hash of Verity's source. The runner starts it for the workload phase; the driver runs
// the workloads and streams their ops, as history lines, on its standard output; the runner
// appends each to the run's history as it arrives, beside the nemesis's. Topics, sinks and the
// final read stay in the runner with the linked client: they measure, they are not under test.

// driverJob is what the runner sends the driver on its standard input.
type driverJob struct {
	Header       history.Header         `json:"header"`
	Spec         Spec                   `json:"spec"`
	Brokers      []string               `json:"brokers"`
	Postgres     string                 `json:"postgres,omitempty"`
	Ledger       string                 `json:"ledger,omitempty"`
	RunTag       string                 `json:"run_tag"`
	KafkaVersion kafkaconf.KafkaVersion `json:"kafka_version,omitempty"`
	// LogLevel is the runner's: the driver logs nothing the runner would drop.
	LogLevel slog.Level `json:"log_level"`
	// Result is the file the driver writes its driverResult to before it exits.
	Result string `json:"result"`
}

// driverResult is what the workloads did, as the driver saw it.
type driverResult struct {
	Workloads
	Elapsed time.Duration `json:"elapsed"`
	Errors  []string      `json:"errors,omitempty"`
}

// driven reports whether spec's workloads run in a driver: its client pinned to a version other
// than the linked one.
func (spec Spec) driven() (kafkaconf.Client, bool) {
	c, err := spec.client()
	return c, err == nil && !c.IsProgram() && len(spec.ClientCommand) == 0 && spec.ClientVersion != "" && spec.ClientVersion != c.Version()
}

// modulePath is Verity's module path, known from this package's import path.
func modulePath() string {
	return strings.TrimSuffix(reflect.TypeFor[Spec]().PkgPath(), "/workloads")
}

// SourceEnv names the variable that points a binary built elsewhere at Verity's source tree,
// which drivers are built from.
const SourceEnv = "VERITY_SOURCE"

// sourceRoot finds the checkout of Verity that drivers are built from: $VERITY_SOURCE, else the
// tree this binary was compiled from when it is still there. It returns the root and the go
// line of its go.mod, which the driver's module repeats.
func sourceRoot() (root, goLine string, err error) {
	if d := os.Getenv(SourceEnv); d != "" {
		goLine, err := checkSource(d)
		return d, goLine, err
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		d := filepath.Dir(filepath.Dir(file))
		if goLine, err := checkSource(d); err == nil {
			return d, goLine, nil
		}
	}
	return "", "", fmt.Errorf("a client at another version runs in a driver built from Verity's source, and this binary's source tree is gone: set %s to a checkout of Verity", SourceEnv)
}

// checkSource reads dir's go.mod: it must be Verity's; it returns its go line.
func checkSource(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("%s=%s: %w", SourceEnv, dir, err)
	}
	lines := strings.Split(string(b), "\n")
	if strings.TrimSpace(lines[0]) != "module "+modulePath() {
		return "", fmt.Errorf("%s=%s: its go.mod is not module %s's", SourceEnv, dir, modulePath())
	}
	for _, line := range lines {
		if strings.HasPrefix(line, "go ") {
			return strings.TrimSpace(line), nil
		}
	}
	return "", fmt.Errorf("%s=%s: its go.mod has no go directive", SourceEnv, dir)
}

// sourceHash is a digest of what a driver is built from: every Go file outside tests, go.mod and
// go.sum. A driver built from other source is built again.
func sourceHash(root string) (string, error) {
	sum, err := hashTree(root,
		func(name string) bool { return strings.HasPrefix(name, ".") || name == "testdata" || name == "docs" },
		func(name string) bool {
			return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") || name == "go.mod" || name == "go.sum"
		})
	if err != nil {
		return "", fmt.Errorf("hashing Verity's source for a driver: %w", err)
	}
	return sum, nil
}

// hashTree hashes the files below root that keep takes, with their paths, leaving out the
// folders skip names.
func hashTree(root string, skip, keep func(name string) bool) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skip(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !keep(d.Name()) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// driverMain is the throwaway module's main package.
const driverMain = `package main

import (
	"os"

	"%s/workloads"
)

func main() { os.Exit(workloads.DriverMain()) }
`

// BuildDriver returns the driver binary for client at version, building it first when the cache
// (the user's cache directory, verity/drivers) has none for this source. Building needs the go
// command and the module proxy, and takes a minute or so the first time.
func BuildDriver(ctx context.Context, client kafkaconf.Client, version string, log *slog.Logger) (string, error) {
	if _, err := kafkaconf.ParseClientVersion(version); err != nil {
		return "", err
	}
	root, goLine, err := sourceRoot()
	if err != nil {
		return "", err
	}
	sum, err := sourceHash(root)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("the driver cache: %w", err)
	}
	dir := filepath.Join(cache, "verity", "drivers", fmt.Sprintf("%s@%s-%s", client.Name, version, sum))
	bin := filepath.Join(dir, "verity-driver")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	what := fmt.Sprintf("building the driver for %s@%s", client.Name, version)
	log.Info("building a client driver", "client", client.Name, "version", version, "into", dir)
	began := time.Now()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	mod, err := os.MkdirTemp(dir, "module-")
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	defer os.RemoveAll(mod)
	gomod := fmt.Sprintf("module verity.invalid/driver\n\n%s\n\nrequire %s v0.0.0\n\nreplace %s => %s\n\nreplace %s => %s %s\n",
		goLine, modulePath(), modulePath(), root, client.Module, client.Module, version)
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	for name, body := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sums, "main.go": fmt.Appendf(nil, driverMain, modulePath())} {
		if err := os.WriteFile(filepath.Join(mod, name), body, 0o644); err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
	}
	tmp := filepath.Join(mod, "verity-driver")
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", tmp, "."}} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s: go %s: %w\n%s(is %s a version of %s whose API Verity's workloads compile against?)",
				what, strings.Join(args, " "), err, out, version, client.Module)
		}
	}
	// Renamed into place whole, so that a concurrent build or an interrupted one leaves no
	// half-written binary under the cached name.
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	log.Info("client driver built", "client", client.Name, "version", version, "took", time.Since(began).Round(time.Millisecond))
	return bin, nil
}

// runDriven is runWorkloads with the workloads in the driver at bin and the nemesis here: it
// starts the driver, appends the ops it streams to w as they come, and stops it early (closing
// its input) when ctx ends or the nemesis fails.
func runDriven(ctx context.Context, bin string, job driverJob, env Env, w *history.Writer, spec Spec, res *Result) []error {
	tmp, err := os.MkdirTemp("", "verity-driver-")
	if err != nil {
		return []error{fmt.Errorf("driver: %w", err)}
	}
	defer os.RemoveAll(tmp)
	job.Result = filepath.Join(tmp, "result.json")
	who := fmt.Sprintf("%s@%s", job.Spec.Client, job.Spec.ClientVersion)
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return []error{fmt.Errorf("driver %s: %w", who, err)}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return []error{fmt.Errorf("driver %s: %w", who, err)}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return []error{fmt.Errorf("driver %s: %w", who, err)}
	}
	if err := cmd.Start(); err != nil {
		return []error{fmt.Errorf("driver %s: starting %s: %w", who, bin, err)}
	}
	began := time.Now()
	var mu sync.Mutex
	var errs []error
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	fail := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			stop()
		}
	}
	if err := json.NewEncoder(stdin).Encode(job); err != nil {
		fail(fmt.Errorf("driver %s: sending the job: %w", who, err))
	}
	var wg sync.WaitGroup
	exited := make(chan struct{})
	wg.Go(func() {
		// The driver stops its workloads when its input ends; it is killed if it has not
		// exited two minutes later.
		<-stopCtx.Done()
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
		}
	})
	logged := make(chan struct{})
	go func() {
		forwardLog(stderr, env.Log, who)
		close(logged)
	}()
	streamed := make(chan error, 1)
	// Until is shown each completion the driver streams, as the runner's own recorder would
	// show it; once it holds, the driver's input is closed, which ends its workloads.
	var until func(history.Op)
	if spec.Until != nil {
		until = func(op history.Op) {
			if op.Type != history.Invoke && spec.Until(op) {
				stop()
			}
		}
	}
	go func() { streamed <- appendStream(stdout, w, until) }()
	if spec.Nemesis != nil {
		wg.Go(func() {
			nctx, cancel := context.WithTimeout(stopCtx, spec.Duration)
			defer cancel()
			if err := spec.Nemesis(nctx, env.Recorder); err != nil {
				fail(fmt.Errorf("nemesis: %w", err))
			}
		})
	}
	if err := <-streamed; err != nil {
		fail(fmt.Errorf("driver %s: its ops: %w", who, err))
	}
	<-logged // Wait closes the pipes: every line is read first
	waitErr := cmd.Wait()
	close(exited)
	if waitErr != nil {
		fail(fmt.Errorf("driver %s: %w", who, waitErr))
	}
	var dr driverResult
	if b, err := os.ReadFile(job.Result); err != nil {
		fail(fmt.Errorf("driver %s: it left no result: %w", who, err))
	} else if err := json.Unmarshal(b, &dr); err != nil {
		fail(fmt.Errorf("driver %s: its result: %w", who, err))
	}
	stop()
	wg.Wait()
	res.Workloads = dr.Workloads
	res.Elapsed = cmp.Or(dr.Elapsed, time.Since(began))
	for _, e := range dr.Errors {
		errs = append(errs, fmt.Errorf("driver %s: %s", who, e))
	}
	return errs
}

// appendStream appends the ops of the history stream r to w, mapping the driver's op numbers to
// w's: an async completion names its invoke by the driver's number.
// appended, when set, is shown each op as w numbered it.
func appendStream(r io.Reader, w *history.Writer, appended func(history.Op)) (err error) {
	defer func() {
		if err != nil {
			// Drained, so that the driver does not block on a full pipe and can be stopped.
			_, _ = io.Copy(io.Discard, r)
		}
	}()
	rd, err := history.NewReader(r)
	if err != nil {
		return err
	}
	invokes := map[int64]int64{}              // the driver's i of an open invoke → w's
	lastInvoke := map[history.Process]int64{} // a process's latest invoke, which a plain completion closes
	var op history.Op
	for {
		if err := rd.Next(&op); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		from := op.Index
		switch {
		case op.Type == history.Invoke:
		case op.Of != nil:
			to, ok := invokes[*op.Of]
			if !ok {
				return fmt.Errorf("op %d completes op %d, which is no open invoke of the driver", from, *op.Of)
			}
			delete(invokes, *op.Of)
			op.Of = &to
		default:
			delete(invokes, lastInvoke[op.Process])
		}
		written, err := w.Append(op)
		if err != nil {
			return err
		}
		if op.Type == history.Invoke {
			invokes[from] = written.Index
			lastInvoke[op.Process] = from
		}
		if appended != nil {
			appended(written)
		}
	}
}

// forwardLog logs each JSON log line of the driver to log, with the driver named; a line that is
// not JSON (a panic's trace) is logged as it is, as a warning.
func forwardLog(r io.Reader, log *slog.Logger, who string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			log.Warn("driver output", "driver", who, "line", sc.Text())
			continue
		}
		var level slog.Level
		if s, ok := rec[slog.LevelKey].(string); ok {
			_ = level.UnmarshalText([]byte(s))
		}
		msg, _ := rec[slog.MessageKey].(string)
		attrs := []any{"driver", who}
		for k, v := range rec {
			if k != slog.TimeKey && k != slog.LevelKey && k != slog.MessageKey {
				attrs = append(attrs, k, v)
			}
		}
		log.Log(context.Background(), level, msg, attrs...)
	}
	_, _ = io.Copy(io.Discard, r)
}

// logLevel is the lowest level log records.
func logLevel(log *slog.Logger) slog.Level {
	for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn} {
		if log.Enabled(context.Background(), l) {
			return l
		}
	}
	return slog.LevelError
}

// DriverMain is a driver's main function (see BuildDriver): it reads its job on standard input,
// runs the workloads, streams their ops as a history on standard output, logs JSON on standard
// error, and stops early when its input ends or it is interrupted. It returns the exit code.
func DriverMain() int {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	boot := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	dec := json.NewDecoder(os.Stdin)
	var job driverJob
	if err := dec.Decode(&job); err != nil {
		boot.Error("driver: reading the job from standard input", "err", err)
		return 2
	}
	go func() {
		_, _ = io.Copy(io.Discard, io.MultiReader(dec.Buffered(), os.Stdin))
		cancel()
	}()
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: job.LogLevel}))
	if err := driveJob(ctx, job, os.Stdout, log); err != nil {
		log.Error("driver: " + err.Error())
		return 1
	}
	return 0
}

// driveJob runs job's workloads with their ops written to out as a history.
func driveJob(ctx context.Context, job driverJob, out io.Writer, log *slog.Logger) error {
	spec := job.Spec
	spec.Nemesis = nil
	client, err := spec.client()
	if err != nil {
		return err
	}
	if linked := client.Version(); linked != spec.ClientVersion {
		return fmt.Errorf("this driver links %s %s, the job asks for %s", client.Module, linked, spec.ClientVersion)
	}
	pl, err := planRun(spec)
	if err != nil {
		return err
	}
	env := Env{Brokers: job.Brokers, Seed: spec.Seed, Client: spec.Client, TxnProtocol: spec.TxnProtocol, GroupProtocol: spec.GroupProtocol, Log: log,
		Postgres: job.Postgres, Ledger: job.Ledger, RunTag: job.RunTag}
	if job.KafkaVersion != "" {
		env.Sarama = harness.SaramaConfigFor(job.KafkaVersion)
	}
	if env, err = env.settled(); err != nil {
		return err
	}
	w, err := history.NewWriter(out, job.Header)
	if err != nil {
		return err
	}
	env.Recorder, env.Processes = w, NewProcesses(pl.next+pl.final.Workers)
	var res Result
	errs := runWorkloads(ctx, env, spec, pl, &res)
	dr := driverResult{Workloads: res.Workloads, Elapsed: res.Elapsed}
	for _, e := range errs {
		dr.Errors = append(dr.Errors, e.Error())
	}
	if err := w.Close(); err != nil {
		dr.Errors = append(dr.Errors, err.Error())
	}
	b, err := json.Marshal(dr)
	if err != nil {
		return fmt.Errorf("encoding the result: %w", err)
	}
	if err := os.WriteFile(job.Result, b, 0o644); err != nil {
		return fmt.Errorf("writing the result: %w", err)
	}
	return nil
}
