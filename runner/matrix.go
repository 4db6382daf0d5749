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
	"strconv"
	"strings"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/results"
)

// AxisNames lists the axes a matrix may vary, in the order the table shows them: the knobs
// that may be axes (scenarios.Knobs).
func AxisNames() []string {
	var out []string
	for _, k := range scenarios.Knobs() {
		if k.Axis {
			out = append(out, k.Name)
		}
	}
	return out
}

// MatrixAxis is one axis and its values (strings as the flags take them).
type MatrixAxis struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// MatrixSpec is a matrix: the base scenario, the axes whose cartesian product makes the cells,
// and how many runs each cell gets (run k uses seed base+k-1).
type MatrixSpec struct {
	Base scenarios.Resolved
	Axes []MatrixAxis
	Runs int
	// Out receives one directory per run (<cell>/run-<k>), matrix.md, matrix.html and the
	// node logs of every cluster started (clusters/<n>/logs).
	Out string
	// Shard, when set, runs only the K-th of N slices of the matrix's runs (ShardOf); every
	// run keeps the seed it has in the whole matrix, so that MergeMatrix over the N outputs
	// gives the whole table.
	Shard Shard
	// Harness, Progress, Log as in Options.
	Harness  harness.Spec
	Progress io.Writer
	Log      *slog.Logger
}

// MatrixRun is one run of a cell.
type MatrixRun struct {
	Axes    []report.Axis
	Run     int
	Outcome *Outcome
	Err     error
}

// MatrixResult is what a matrix did.
type MatrixResult struct {
	Runs []MatrixRun
	// Markdown and HTML are the comparison table; MarkdownFile, HTMLFile and JUnitFile (a
	// suite per run) where they are.
	Markdown, MarkdownFile, HTMLFile, JUnitFile string
	// ClustersStarted is how many clusters the matrix started; StartClose their start and
	// close times summed; Wall the whole matrix.
	ClustersStarted int
	StartClose      time.Duration
	Wall            time.Duration
}

// Saved estimates what reusing clusters saved: a cluster started and removed for every run
// would have cost the mean start+close time once per run; the matrix paid it once per cluster.
func (m *MatrixResult) Saved() time.Duration {
	if m.ClustersStarted == 0 {
		return 0
	}
	per := m.StartClose / time.Duration(m.ClustersStarted)
	return per * time.Duration(len(m.Runs)-m.ClustersStarted)
}

// Worst is the worst outcome over the runs (results.OutcomeOrder); a run that did not
// complete is unknown.
func (m *MatrixResult) Worst() results.Outcome {
	var os []results.Outcome
	for _, r := range m.Runs {
		os = append(os, r.outcome())
	}
	return results.WorstOutcome(os...)
}

// outcome is the run's outcome; unknown when it did not complete.
func (r MatrixRun) outcome() results.Outcome {
	if r.Err != nil || r.Outcome == nil || r.Outcome.Results == nil {
		return results.OutcomeUnknown
	}
	return r.Outcome.Results.Outcome()
}

// cell is one combination of axis values with the scenario it makes.
type cell struct {
	axes     []report.Axis
	scenario scenarios.Resolved
	shape    clusterShape
	notes    []string // claims of the scenario the cell's settings deny
	// label names the cell in progress lines; dir is its runs' parent, relative to the output.
	label, dir string
}

// cells expands the axes into scenarios, validating each combination before anything runs.
func (m MatrixSpec) cells() ([]cell, error) {
	for _, a := range m.Axes {
		if !slices.Contains(AxisNames(), a.Name) {
			return nil, fmt.Errorf("matrix axis %q: want one of %s", a.Name, strings.Join(AxisNames(), ", "))
		}
		if len(a.Values) == 0 {
			return nil, fmt.Errorf("matrix axis %s: no values", a.Name)
		}
	}
	combos := product(m.Axes)
	var out []cell
	for _, axes := range combos {
		s, notes, err := applyAxes(m.Base, axes)
		if err == nil {
			err = checkClaims(s)
		}
		if err != nil {
			return nil, fmt.Errorf("matrix cell %s: %w", report.AxesLabel(axes), err)
		}
		out = append(out, cell{axes: axes, scenario: s, shape: shapeOf(s.Scenario), notes: notes, label: report.AxesLabel(axes), dir: dirName(axes)})
	}
	return out, nil
}

// product is the cartesian product of the axes' values, the first axis varying slowest.
func product(axes []MatrixAxis) [][]report.Axis {
	if len(axes) == 0 {
		return [][]report.Axis{nil}
	}
	var out [][]report.Axis
	for _, v := range axes[0].Values {
		for _, rest := range product(axes[1:]) {
			out = append(out, append([]report.Axis{{Name: axes[0].Name, Value: v}}, rest...))
		}
	}
	return out
}

// applyAxes forces a cell's axis values onto the base scenario, each through its knob.
func applyAxes(base scenarios.Resolved, axes []report.Axis) (scenarios.Resolved, []string, error) {
	set, err := axisSettings(axes)
	if err != nil {
		return base, nil, fmt.Errorf("matrix %w", err)
	}
	return Force(base, set)
}

// dirName is a cell's directory: its axes, safe for a file name.
func dirName(axes []report.Axis) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '=', r == '.':
			return r
		}
		return '_'
	}, report.AxesLabel(axes))
}

// CheckMatrix validates m's axes and every cell's scenario without running anything.
func CheckMatrix(m MatrixSpec) error {
	_, err := m.cells()
	return err
}

// checkRunsOut checks what a matrix or a suite (command) needs before it plans: at least one
// run per cell, and an output directory.
func checkRunsOut(command string, runs int, out string) error {
	if runs < 1 {
		return fmt.Errorf("%s: runs %d: want at least 1", command, runs)
	}
	if out == "" {
		return fmt.Errorf("%s: no output directory given", command)
	}
	return nil
}

// RunMatrix runs every cell Runs times. Cells of one cluster shape share a cluster, each run on
// topics, groups and transactional.ids of its own; a shape change (another node count, other
// broker settings) removes the cluster and starts the next. A run that fails to run is recorded
// with its error and the matrix goes on (on a new cluster, in case the old one is the cause);
// an interruption stops it.
func RunMatrix(ctx context.Context, m MatrixSpec) (*MatrixResult, error) {
	began := time.Now()
	if err := checkRunsOut("matrix", m.Runs, m.Out); err != nil {
		return nil, err
	}
	cells, err := m.cells()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(m.Out, 0o755); err != nil {
		return nil, fmt.Errorf("matrix: making the output directory: %w", err)
	}
	units := m.Shard.of(unitsOf(cells, m.Runs))
	f := &fleet{command: "matrix", out: m.Out, harness: m.Harness, progress: m.Progress, log: m.Log}
	ran, runErr := f.run(ctx, units, began)
	res := &MatrixResult{ClustersStarted: f.started, StartClose: f.startClose, Wall: time.Since(began)}
	for _, r := range ran {
		res.Runs = append(res.Runs, MatrixRun{Axes: r.unit.cell.axes, Run: r.unit.k, Outcome: r.outcome, Err: r.err})
	}
	// The runs done so far still make a manifest and tables (the rest as not run), so that a
	// shard stopped by its job's time limit can be merged.
	return res, errors.Join(runErr, res.write(m, units))
}

// unit is one run of one cell: the matrix's unit of work and of sharding.
type unit struct {
	cell cell
	ci   int // the cell's index in axis order
	k    int // the run's number within its cell, from 1
}

// unitsOf lists every run of the matrix in its canonical order: cells in axis order, then runs.
func unitsOf(cells []cell, runs int) []unit {
	var out []unit
	for ci, c := range cells {
		for k := 1; k <= runs; k++ {
			out = append(out, unit{cell: c, ci: ci, k: k})
		}
	}
	return out
}

// Shard is the K-th of N slices of a matrix's runs; the zero Shard is the whole matrix.
type Shard struct{ K, N int }

// ParseShard reads "K/N" (1 <= K <= N).
func ParseShard(v string) (Shard, error) {
	ks, ns, ok := strings.Cut(strings.TrimSpace(v), "/")
	k, kerr := strconv.Atoi(ks)
	n, nerr := strconv.Atoi(ns)
	if !ok || kerr != nil || nerr != nil || n < 1 || k < 1 || k > n {
		return Shard{}, fmt.Errorf("shard %q: want K/N with 1 <= K <= N, such as 2/3", v)
	}
	return Shard{K: k, N: n}, nil
}

func (s Shard) String() string {
	if s.N == 0 {
		return "1/1"
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// of keeps the units of shard s: the i-th unit (canonical order, from 0) goes to shard
// i mod N + 1, so that the shards' sizes differ by one at most and each gets a share of every
// part of the matrix. It depends on nothing but the matrix, so every runner computes the same.
func (s Shard) of(us []unit) []unit {
	if s.N <= 1 {
		return us
	}
	var out []unit
	for i, u := range us {
		if i%s.N == s.K-1 {
			out = append(out, u)
		}
	}
	return out
}

// write writes the matrix's (or shard's) manifest, matrix.json, then its tables.
func (res *MatrixResult) write(m MatrixSpec, units []unit) error {
	man := Manifest{Version: ManifestVersion, Scenario: m.Base.Name, Seed: m.Base.Seed, Runs: m.Runs, Axes: m.Axes, Shard: m.Shard.String()}
	for _, u := range units {
		mr := ManifestRun{Axes: u.cell.axes, Run: u.k, Seed: m.Base.Seed + int64(u.k-1)}
		for _, r := range res.Runs {
			if r.Run != u.k || report.AxesLabel(r.Axes) != report.AxesLabel(u.cell.axes) {
				continue
			}
			if r.Outcome != nil {
				mr.Dir, _ = filepath.Rel(m.Out, r.Outcome.Dir)
				mr.Verdict = r.Outcome.Verdict()
				if res := r.Outcome.Results; res != nil && res.Liveness != nil {
					mr.Liveness = res.Liveness.Verdict
				}
			}
			if r.Err != nil {
				mr.Error = oneLine(r.Err.Error())
			}
		}
		man.Cells = append(man.Cells, mr)
	}
	if err := man.write(filepath.Join(m.Out, ManifestFile)); err != nil {
		return err
	}
	cells, missing := loadCells(m.Out, man.Cells)
	t, err := writeTables(m.Out, man, cells, missing)
	if err != nil {
		return err
	}
	res.Markdown, res.MarkdownFile, res.HTMLFile, res.JUnitFile = t.Markdown, t.MarkdownFile, t.HTMLFile, t.JUnitFile
	return nil
}
