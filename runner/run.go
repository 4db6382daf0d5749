// Package runner runs scenarios end to end: it starts (or reuses) a cluster, runs the
// scenario's workloads with its fault schedule, heals, reads everything back, checks the
// history against Kafka's documented guarantees and writes the run's artifacts: history.jsonl,
// results.json, report.html, junit.xml and the nodes' logs.
//
// It is the one place that ties the other packages together (scenarios → harness, workloads,
// nemesis → verify → report); they know nothing of it.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/metrics"
	"github.com/verity-kafka/verity/nemesis"
	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
	"github.com/verity-kafka/verity/workloads"
)

// HistoryFile is the history's name in a run's directory; ScenarioFile the scenario as it ran.
const (
	HistoryFile  = "history.jsonl"
	ScenarioFile = "scenario.yaml"
)

// recoverTimeout bounds the wait for a healthy cluster after the faults are healed.
const recoverTimeout = 3 * time.Minute

// Options configure a run. The zero value (with Out set) starts a cluster for the run and
// removes it afterwards.
type Options struct {
	// Out is the run's directory, made if missing; required.
	Out string
	// Cluster, when set, is a running cluster to use instead of starting one; it must have the
	// scenario's shape (nodes, controllers, broker settings). It is left running, and its node
	// logs are the owner's to collect.
	Cluster *harness.Cluster
	// Harness is the base of the cluster a run starts (images, heap, ready timeout, run id,
	// signal handling); the scenario sets Nodes, DedicatedControllers and BrokerConfig, and
	// ArtifactDir is Out.
	Harness harness.Spec
	// Fresh, when set, is appended to every topic, group and transactional.id the scenario
	// names, so that a run on a reused cluster starts on new topics.
	Fresh string
	// Progress receives a progress line every ProgressEvery (default 5s) and at every phase
	// change; nil: none.
	Progress      io.Writer
	ProgressEvery time.Duration
	// Log receives the packages' logs; default discards.
	Log *slog.Logger
	// Notes are said in the run's results beside the ones the run makes.
	Notes []string
}

// Outcome is what a run did and found.
type Outcome struct {
	Scenario scenarios.Resolved
	// Dir holds the artifacts; History, ResultsFile, Report.HTML and Report.JUnit their paths.
	Dir, History, ResultsFile string
	Report                    report.Written
	Results                   *results.Results
	Recovery                  nemesis.Recovery
	Workloads                 *workloads.Result
	// Notes are remarks for the reader: how the run departed from the scenario's letter,
	// fault steps that could not be injected, positive controls that did not fire.
	Notes []string
	// Missing are the scenario's Likely anomalies that the run did not show.
	Missing []guarantee.Anomaly
	// ClusterReady is the time to a ready cluster (0 when reused); Wall the whole run.
	ClusterReady, Wall time.Duration
}

// Verdict is the run's verdict.
func (o *Outcome) Verdict() results.Verdict {
	if o == nil || o.Results == nil {
		return results.Unknown
	}
	return o.Results.Verdict
}

// Run runs scenario s and writes its artifacts into opts.Out. An error means the run could not
// be carried out (no engine, a cluster that did not start, a workload that could not run, an
// interruption); a guarantee violated is not an error but the verdict in the outcome.
//
// Its phases, one method each: prepare (the plan), cluster (start or reuse), execute
// (workloads, faults, recovery, final reads), judge (the check, unknown reasons, positive
// controls) and write (results.json, scenario.yaml, report.html, junit.xml).
func Run(ctx context.Context, s scenarios.Resolved, opts Options) (*Outcome, error) {
	r, err := prepare(s, opts)
	if err != nil {
		return nil, err
	}
	defer r.prog.stop()
	c, release, err := r.cluster(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	r.c = c
	if err := r.execute(ctx, c); err != nil {
		return r.out, err
	}
	if err := r.judge(ctx); err != nil {
		return r.out, err
	}
	if err := r.write(ctx); err != nil {
		return r.out, err
	}
	return r.out, nil
}

// run is one run under way.
type run struct {
	c      *harness.Cluster
	s      scenarios.Resolved
	opts   Options
	log    *slog.Logger
	pl     *plan
	out    *Outcome
	prog   *progress
	began  time.Time
	runErr error    // the workloads did not run as specified
	nemErr error    // fault steps not carried out (injected or healed)
	notes  []string // from the execution: LSO stalls, what the workloads said
	// metrics are the broker metrics the check read, which the report plots.
	metrics *metrics.File
}

// prepare gives the run its names and plan, and makes its directory.
func prepare(s scenarios.Resolved, opts Options) (*run, error) {
	r := &run{opts: opts, log: opts.Log, began: time.Now()}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if opts.Out == "" {
		return nil, errors.New("run: no output directory given")
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("run: making the output directory: %w", err)
	}
	tag := "verity"
	if opts.Fresh != "" {
		s = freshNames(s, opts.Fresh)
		tag += opts.Fresh
	}
	if err := checkClaims(s); err != nil {
		return nil, err
	}
	pl, err := compile(s, tag)
	if err != nil {
		return nil, err
	}
	r.s, r.pl = s, pl
	r.out = &Outcome{Scenario: s, Dir: opts.Out, History: filepath.Join(opts.Out, HistoryFile), Notes: slices.Concat(opts.Notes, pl.notes)}
	r.prog = newProgress(opts.Progress, opts.ProgressEvery, s.Duration.Std())
	return r, nil
}

// cluster starts the run's cluster, or checks that the one given fits and is healthy; release
// removes a cluster the run started.
func (r *run) cluster(ctx context.Context) (c *harness.Cluster, release func(), err error) {
	s := r.s
	if c = r.opts.Cluster; c != nil {
		if err := compatible(c, r.pl.cluster); err != nil {
			return nil, nil, fmt.Errorf("run %s: %w", s.Name, err)
		}
		// A reused cluster must be as healthy as a new one before the run starts.
		r.prog.phase("waiting for a healthy cluster")
		hctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := c.WaitHealthy(hctx); err != nil {
			return nil, nil, fmt.Errorf("run %s: the reused cluster is not healthy: %w", s.Name, err)
		}
		return c, func() {}, nil
	}
	hs := clusterSpec(r.opts.Harness, s.Scenario)
	if hs.RunID == "" {
		hs.RunID = harness.NewRunID()
	}
	r.prog.phase(fmt.Sprintf("starting a cluster of %s, run id %s", describeShape(r.pl.cluster), hs.RunID))
	hs.ArtifactDir = r.opts.Out
	if hs.Logger == nil {
		hs.Logger = r.log
	}
	t0 := time.Now()
	if c, err = harness.Start(ctx, hs); err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", s.Name, err)
	}
	r.out.ClusterReady = time.Since(t0)
	return c, func() {
		r.prog.phase("removing the cluster")
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if cerr := c.Close(cctx); cerr != nil {
			r.log.Warn("removing the cluster", "err", cerr)
		}
	}, nil
}

// execute runs the workloads with the nemesis beside them, heals, waits for recovery and reads
// every partition back into the history.
func (r *run) execute(ctx context.Context, c *harness.Cluster) error {
	s, pl, log := r.s, r.pl, r.log
	ws := pl.workloads
	ws.Log = log
	var recovery nemesis.Recovery
	var stepErrs error
	var lsoNotes []string
	ws.Nemesis = func(ctx context.Context, rec workloads.Recorder) error {
		n := nemesis.New(c, rec, nemesis.Options{Seed: s.Seed, Log: log})
		defer n.Close()
		r.prog.watch(n, rec)
		r.prog.phase("running")
		// The ISR watch outlives the workloads' context: it records the ISR around the heals
		// that Recover does after the run's end.
		wctx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
		watched := make(chan error, 1)
		go func() { watched <- n.WatchISR(wctx, pl.topics, 500*time.Millisecond) }()
		sampled := make(chan error, 1)
		go func() {
			sampled <- sampleMetrics(wctx, c, rec, filepath.Join(r.opts.Out, MetricsFile), metricsInterval)
		}()
		defer func() {
			stopWatch()
			if werr := <-watched; werr != nil && !errors.Is(werr, context.Canceled) {
				log.Warn("ISR watch", "err", werr)
			}
			if serr := <-sampled; serr != nil {
				r.notes = append(r.notes, report.MetricsNotSampled+oneLine(serr.Error()))
			}
		}()
		if len(pl.txnTopics) > 0 {
			stalls := make(chan []lsoStall, 1)
			go func() { stalls <- watchLSO(ctx, c, pl.txnTopics, time.Second, 5*time.Second) }()
			defer func() {
				for _, st := range <-stalls {
					lsoNotes = append(lsoNotes, st.String())
				}
				slices.Sort(lsoNotes)
			}()
		}
		faults, err := pl.schedule.Plan(s.Seed, s.Duration.Std())
		if err != nil {
			return fmt.Errorf("planning the faults: %w", err)
		}
		log.Info("fault plan", "scenario", s.Name, "seed", s.Seed, "plan", faults.String())
		stepErrs = n.Run(ctx, faults)
		<-ctx.Done() // the faults may end early; the workloads run their whole duration
		r.prog.phase("healing")
		recovery = n.Recover(ctx, recoverTimeout)
		r.prog.phase("final reads")
		return nil
	}
	res, err := workloads.Run(ctx, c, r.out.History, ws)
	r.out.Workloads, r.out.Recovery, r.runErr = res, recovery, err
	if res == nil {
		return fmt.Errorf("run %s: %w", s.Name, err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("run %s: interrupted (%w); the history so far is in %s", s.Name, ctx.Err(), r.out.History)
	}
	r.nemErr = stepErrs
	r.notes = append(r.notes, lsoNotes...)
	r.notes = append(r.notes, workloadNotes(res)...)
	return nil
}

// judge checks the history, makes the verdict unknown where the run could not be judged, and
// notes the positive controls that did not fire.
func (r *run) judge(ctx context.Context) error {
	s, out := r.s, r.out
	r.prog.phase("checking")
	checkBegan := time.Now()
	opts := verify.Options{Logger: r.log}
	if err := withMetrics(&opts, r.opts.Out); err != nil {
		r.notes = append(r.notes, "broker metrics not checked: "+oneLine(err.Error()))
	}
	r.metrics = opts.Metrics
	res, err := verify.CheckFile(ctx, out.History, opts)
	if err != nil {
		return fmt.Errorf("run %s: checking the history: %w", s.Name, err)
	}
	res.Timings.CheckS = time.Since(checkBegan).Seconds()
	out.Results = res
	unknown := executionUnknown(out.Recovery, r.nemErr, r.runErr)
	out.Notes = append(out.Notes, r.notes...)
	for _, a := range s.Expect.Likely {
		if e, ok := res.Anomalies[a]; !ok || e.Count == 0 {
			out.Missing = append(out.Missing, a)
		}
	}
	if len(out.Missing) > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("positive control did not fire: the scenario provokes %s, which this run did not show (%s)",
			guarantee.Join(out.Missing), s.Expect.Provoke))
	}
	addRun(res, out.Notes, unknown)
	res.Timings.ClusterReadyS = out.ClusterReady.Seconds()
	res.Timings.RunS = out.Workloads.Elapsed.Seconds()
	res.Run = r.info()
	return nil
}

// executionUnknown is why the execution leaves a run unjudgeable, whatever its history shows:
// a cluster that did not recover, faults of the plan not injected or not healed, workloads
// that did not run as specified.
func executionUnknown(rec nemesis.Recovery, nemErr, runErr error) []results.UnknownReason {
	var unknown []results.UnknownReason
	if why := rec.UnknownReason(); why != "" {
		unknown = append(unknown, results.UnknownReason{Cause: results.CauseClusterNotHealthy, Text: why})
	}
	if nemErr != nil {
		unknown = append(unknown, results.UnknownReason{Cause: results.CauseNemesisFailed,
			Text: "fault steps not carried out: " + oneLine(nemErr.Error())})
	}
	if runErr != nil {
		unknown = append(unknown, results.UnknownReason{Cause: results.CauseWorkloadError,
			Text: "the run did not complete as specified: " + oneLine(runErr.Error())})
	}
	return unknown
}

// info says what ran: the run id, this binary, the images and the engine's machine.
func (r *run) info() *results.RunInfo {
	im, eng := r.c.Images(), r.c.Engine()
	return &results.RunInfo{ID: r.c.RunID(), VerityVersion: results.BuildVersion(), Started: r.out.Workloads.Header.Started,
		KafkaImage: im.Kafka, KafkaImageID: im.KafkaID, ToxiproxyImage: im.Toxiproxy, ToxiproxyImageID: im.ToxiproxyID,
		Host: results.HostInfo{Cores: eng.Cores, MemoryBytes: eng.MemoryBytes, EngineVersion: eng.Version}}
}

// addRun adds what the run said to a check's results: its notes, and the reasons it could not
// be judged, which make a pass unknown.
func addRun(res *results.Results, notes []string, unknown []results.UnknownReason) {
	res.RunNotes, res.RunUnknownReasons, res.RunUnknownCauses = notes, nil, nil
	for _, u := range unknown {
		res.RunUnknownReasons = append(res.RunUnknownReasons, u.Text)
		res.RunUnknownCauses = append(res.RunUnknownCauses, u.Cause)
	}
	res.Notes = append(res.Notes, notes...)
	res.AddUnknown(unknown...)
}

// runUnknown is what an earlier results.json says of why its run could not be judged: each
// reason with its cause (run_unknown_causes, one per reason; a file written before causes
// existed has none, and its reasons are told apart by their words).
func runUnknown(prev *results.Results) []results.UnknownReason {
	out := make([]results.UnknownReason, len(prev.RunUnknownReasons))
	for i, text := range prev.RunUnknownReasons {
		cause := results.CauseWorkloadError
		switch {
		case len(prev.RunUnknownCauses) == len(prev.RunUnknownReasons):
			cause = prev.RunUnknownCauses[i]
		case strings.HasPrefix(text, nemesis.NotHealthy):
			cause = results.CauseClusterNotHealthy
		}
		out[i] = results.UnknownReason{Cause: cause, Text: text}
	}
	return out
}

// Rejudge checks a run's saved history again (a newer checker, a history another version
// wrote) and keeps what only the run knew from its earlier results, prev (nil: none): its
// timings, its notes and the reasons it could not be judged.
func Rejudge(ctx context.Context, dir string, prev *results.Results, opts verify.Options) (*results.Results, error) {
	if err := withMetrics(&opts, dir); err != nil {
		return nil, err
	}
	res, err := verify.CheckFile(ctx, filepath.Join(dir, HistoryFile), opts)
	if err != nil {
		return nil, err
	}
	if prev != nil {
		res.Timings.ClusterReadyS, res.Timings.RunS = prev.Timings.ClusterReadyS, prev.Timings.RunS
		res.Run = prev.Run
		addRun(res, prev.RunNotes, runUnknown(prev))
	}
	return res, nil
}

// RerunCommand is the command that runs again the run in dir: its saved scenario when there
// is one, else the built-in s with its seed.
func RerunCommand(dir, name string, seed int64) string {
	if file := filepath.Join(dir, ScenarioFile); fileExists(file) {
		return "verity run --file " + file
	}
	return fmt.Sprintf("verity run --scenario %s --seed %d", name, seed)
}

// SavedExpectation is what the scenario saved in a run's folder expected, in words; "" when the
// folder has no readable scenario.yaml.
func SavedExpectation(dir string) string {
	s, err := scenarios.Load(filepath.Join(dir, ScenarioFile))
	if err != nil {
		return ""
	}
	return s.Expect.Text
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// write writes the run's artifacts: results.json, the scenario as it ran (its rerun command
// runs it again, seed included, on a new cluster), report.html and junit.xml.
func (r *run) write(ctx context.Context) error {
	s, out := r.s, r.out
	r.prog.phase("writing the report")
	var err error
	if out.ResultsFile, err = results.Write(r.opts.Out, out.Results); err != nil {
		return fmt.Errorf("run %s: %w", s.Name, err)
	}
	if y, yerr := s.YAML(); yerr == nil {
		if werr := os.WriteFile(filepath.Join(r.opts.Out, ScenarioFile), y, 0o644); werr != nil {
			r.log.Warn("writing the scenario as it ran", "err", werr)
		}
	}
	rerun := RerunCommand(r.opts.Out, s.Name, s.Seed)
	if out.Report, err = report.Write(ctx, r.opts.Out, out.Results, out.History, report.Options{Rerun: rerun, Expectation: r.s.Expect.Text, Metrics: r.metrics}); err != nil {
		return fmt.Errorf("run %s: %w", s.Name, err)
	}
	out.Wall = time.Since(r.began)
	r.log.Info("run done", "scenario", s.Name, "seed", s.Seed, "verdict", out.Results.Verdict, "wall", out.Wall.Round(time.Millisecond))
	return nil
}

// compatible says why a running cluster cannot run a scenario of shape want.
func compatible(c *harness.Cluster, want clusterShape) error {
	got := specShape(c.Spec())
	if got != want {
		return fmt.Errorf("the cluster given (%s) does not have the scenario's shape (%s)", describeShape(got), describeShape(want))
	}
	return nil
}

func describeShape(s clusterShape) string {
	d := fmt.Sprintf("%d brokers", s.Nodes)
	if s.DedicatedControllers {
		d += " + 3 dedicated controllers"
	}
	if s.Stores != "" {
		d += ", stores " + s.Stores
	}
	if s.PowerLoss {
		d += " on the lazy filesystem"
	}
	d += ", Kafka " + strings.TrimSpace(s.Kafka)
	if s.Broker != "" {
		d += ", broker settings " + s.Broker
	}
	if s.Loggers != "" {
		d += ", broker loggers " + s.Loggers
	}
	return d
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// opsCounter is what progress needs of the history writer: *history.Writer has it.
type opsCounter interface{ Count() int64 }

var _ opsCounter = (*history.Writer)(nil)

// workloadNotes sums what the transactional workloads did that the checker does not count:
// fencing (zombie) episodes and their refused commits, crashes and restarts.
func workloadNotes(res *workloads.Result) []string {
	var notes []string
	var t workloads.TxnStats
	for _, s := range res.Transactional {
		t.Committed += s.Committed
		t.Aborted += s.Aborted
		t.Failed += s.Failed
		t.Unknown += s.Unknown
		t.Crashes += s.Crashes
		t.Zombies += s.Zombies
		t.ZombieCommitsRefused += s.ZombieCommitsRefused
		t.ZombieCommitsUnknown += s.ZombieCommitsUnknown
	}
	if len(res.Transactional) > 0 {
		notes = append(notes, fmt.Sprintf("transactions: %d committed, %d aborted on purpose, %d failed, %d unknown; %d producer restarts",
			t.Committed, t.Aborted, t.Failed, t.Unknown, t.Crashes))
		if t.Zombies > 0 {
			notes = append(notes, fmt.Sprintf("fencing: %d times a second instance took a transactional.id mid-transaction; the fenced instance's later commits: %d refused, %d unknown",
				t.Zombies, t.ZombieCommitsRefused, t.ZombieCommitsUnknown))
		}
	}
	var p workloads.ProcessorStats
	for _, s := range res.Processors {
		p.Committed += s.Committed
		p.Failed += s.Failed
		p.Unknown += s.Unknown
		p.Crashes += s.Crashes
		p.InputsCommitted += s.InputsCommitted
	}
	if len(res.Processors) > 0 {
		notes = append(notes, fmt.Sprintf("read-process-write: %d transactions committed (%d inputs), %d failed, %d unknown; %d crashes",
			p.Committed, p.InputsCommitted, p.Failed, p.Unknown, p.Crashes))
	}
	return notes
}
