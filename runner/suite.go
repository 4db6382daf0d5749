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
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/results"
)

// clientKnob is the knob (scenarios.Knobs) that picks the client a scenario drives.
const clientKnob = "client"

// SuiteSpec is a suite: scenarios, each crossed with the axes (as a matrix crosses its base
// scenario), every cell run Runs times and judged against its own scenario's expectation.
type SuiteSpec struct {
	// Scenarios are run in this order, which the table keeps.
	Scenarios []scenarios.Resolved
	// Set are settings forced on every scenario (--duration 30s); Axes the axes every scenario
	// is crossed with. A regression scenario's own knob takes its two sides instead.
	Set  []scenarios.Setting
	Axes []MatrixAxis
	Runs int
	// Out receives one directory per run (<scenario>/<cell>/run-<k>), suite.json, suite.md,
	// suite.html, junit.xml and the node logs of every cluster started (clusters/<n>/logs).
	Out string
	// Shard, when set, runs only the K-th of N slices of the suite's runs (as a matrix's); every
	// run keeps its seed, so that MergeSuite over the N outputs gives the whole table.
	Shard Shard
	// Harness, Progress, Log as in Options.
	Harness  harness.Spec
	Progress io.Writer
	Log      *slog.Logger
}

// suiteCell is one cell of a suite: a scenario at one combination of axis values, which runs
// (cell) or does not apply (notApplicable says why).
type suiteCell struct {
	cell
	index         int // the cell's place among the suite's cells, not-applicable ones included
	name          string
	expect        SuiteExpect
	notApplicable string
}

// suitePlan is a suite expanded into its cells, checked before anything runs.
type suitePlan struct {
	scenarios []SuiteScenario
	cells     []suiteCell
}

// runnable are the cells that run, in order; a unit's ci indexes them.
func (p suitePlan) runnable() ([]cell, []suiteCell) {
	var cells []cell
	var scs []suiteCell
	for _, c := range p.cells {
		if c.notApplicable == "" {
			cells, scs = append(cells, c.cell), append(scs, c)
		}
	}
	return cells, scs
}

// axesFor are the axes scenario s is crossed with: the suite's, and for a regression its knob at
// its two sides in place of the suite's values for that knob.
func axesFor(s scenarios.Resolved, axes []MatrixAxis) ([]MatrixAxis, string) {
	r := s.Regression
	if r == nil {
		return axes, ""
	}
	out := slices.Clone(axes)
	side := RegressionAxes(*r)[0]
	if i := slices.IndexFunc(out, func(a MatrixAxis) bool { return a.Name == r.Knob }); i >= 0 {
		out[i] = side
		return out, fmt.Sprintf("a regression: its --%s takes its sides %s (bad) and %s (fixed), not the suite's values", r.Knob, r.Bad, r.Fixed)
	}
	return append(out, side), ""
}

// lacks says what s requires (scenarios.Scenario.Requires) that the client it would drive at
// axes lacks; "" when nothing.
func lacks(s scenarios.Resolved, axes []report.Axis) string {
	name := s.Client.Name
	if v := report.AxisValue(axes, clientKnob); v != "" {
		n, _, err := kafkaconf.ParseClientRef(v)
		if err != nil {
			return "" // the override names the bad value
		}
		name = n
	}
	c, ok := kafkaconf.LookupClient(name)
	if !ok {
		return ""
	}
	var missing []string
	for _, need := range s.Requires {
		if !c.Has(need) {
			missing = append(missing, string(need))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("the scenario requires %s, which %s lacks", strings.Join(missing, ", "), name)
}

// axisSettings are the settings a combination of axis values forces.
func axisSettings(axes []report.Axis) ([]scenarios.Setting, error) {
	var set []scenarios.Setting
	for _, a := range axes {
		k, ok := scenarios.LookupKnob(a.Name)
		if !ok || !k.Axis {
			return nil, fmt.Errorf("axis %q: want one of %s", a.Name, strings.Join(AxisNames(), ", "))
		}
		set = append(set, scenarios.Setting{Knob: k, Value: a.Value})
	}
	return set, nil
}

// plan expands the suite into its cells, validating each before anything runs. A cell whose
// client lacks what its scenario requires, or whose settings the scenario cannot take (a sink
// mode for a scenario without a sink), does not apply; a value no scenario takes is an error,
// and so is a scenario whose claims the guarantee table denies.
func (s SuiteSpec) plan() (suitePlan, error) {
	for _, a := range s.Axes {
		if !slices.Contains(AxisNames(), a.Name) {
			return suitePlan{}, fmt.Errorf("suite axis %q: want one of %s", a.Name, strings.Join(AxisNames(), ", "))
		}
		if len(a.Values) == 0 {
			return suitePlan{}, fmt.Errorf("suite axis %s: no values", a.Name)
		}
	}
	if len(s.Scenarios) == 0 {
		return suitePlan{}, errors.New("suite: no scenarios")
	}
	var p suitePlan
	// What each value given was refused for, until a scenario takes it.
	refused := map[string]string{}
	took := map[string]bool{}
	given := func(set []scenarios.Setting, err error) {
		for _, st := range set {
			key := st.String()
			switch {
			case err == nil:
				took[key] = true
			case refused[key] == "":
				refused[key] = oneLine(err.Error())
			}
		}
	}
	for _, sc := range s.Scenarios {
		if slices.ContainsFunc(p.scenarios, func(x SuiteScenario) bool { return x.Name == sc.Name }) {
			return suitePlan{}, fmt.Errorf("suite: scenario %s given twice", sc.Name)
		}
		axes, note := axesFor(sc, s.Axes)
		p.scenarios = append(p.scenarios, SuiteScenario{Name: sc.Name, Tags: slices.Clone(sc.Tags), Regression: sc.Regression, Note: note})
		for _, combo := range product(axes) {
			c := suiteCell{index: len(p.cells), name: sc.Name, cell: cell{axes: combo, label: sc.Name + " " + report.AxesLabel(combo),
				dir: filepath.Join(sc.Name, dirName(combo))}}
			set, err := axisSettings(combo)
			if err != nil {
				return suitePlan{}, fmt.Errorf("suite: %w", err)
			}
			set = slices.Concat(s.Set, set)
			if why := lacks(sc, combo); why != "" {
				c.notApplicable = why
				given(set, nil) // the value is good; this scenario cannot use it
				p.cells = append(p.cells, c)
				continue
			}
			r, notes, err := Force(sc, set)
			given(set, err)
			if err != nil {
				c.notApplicable = oneLine(err.Error())
				p.cells = append(p.cells, c)
				continue
			}
			if err := checkClaims(r); err != nil {
				return suitePlan{}, fmt.Errorf("suite: %s at %s: %w", sc.Name, report.AxesLabel(combo), err)
			}
			c.scenario, c.shape, c.notes = r, shapeOf(r.Scenario), notes
			c.expect = expectOf(r, combo, notes)
			p.cells = append(p.cells, c)
		}
		if sc.Regression != nil {
			wholeSides(p.cells, sc.Name, *sc.Regression)
		}
	}
	var errs []string
	for _, st := range s.Set {
		if key := st.String(); !took[key] && refused[key] != "" {
			errs = append(errs, fmt.Sprintf("%s: no scenario of the suite takes it (%s)", key, refused[key]))
		}
	}
	for _, a := range s.Axes {
		for _, v := range a.Values {
			k, _ := scenarios.LookupKnob(a.Name)
			key := scenarios.Setting{Knob: k, Value: v}.String()
			if !took[key] && refused[key] != "" {
				errs = append(errs, fmt.Sprintf("%s: no scenario of the suite takes it (%s)", key, refused[key]))
			}
		}
	}
	if len(errs) > 0 {
		return suitePlan{}, fmt.Errorf("suite: %s", strings.Join(errs, "; "))
	}
	return p, nil
}

// wholeSides makes a regression's side not applicable where its other side is not: the bug is
// found again over both sides, so one side alone would run for nothing.
func wholeSides(cells []suiteCell, name string, r scenarios.Regression) {
	why := map[string]string{}
	for _, c := range cells {
		if c.name != name || c.notApplicable == "" {
			continue
		}
		v, side := report.AxisValue(c.axes, r.Knob), SideFixed
		if v == r.Bad {
			side = SideBad
		}
		why[report.AxesLabel(withoutAxis(c.axes, r.Knob))] = fmt.Sprintf("its %s side (--%s %s) does not apply: %s", side, r.Knob, v, c.notApplicable)
	}
	for i := range cells {
		c := &cells[i]
		if w := why[report.AxesLabel(withoutAxis(c.axes, r.Knob))]; c.name == name && c.notApplicable == "" && w != "" {
			c.notApplicable = "the regression is judged over both sides, and " + w
		}
	}
}

// expectOf is what a cell's runs are judged against: the verdict the scenario expects and the
// positive controls left at the cell's settings, or, for a regression, the side the cell is.
func expectOf(s scenarios.Resolved, axes []report.Axis, notes []string) SuiteExpect {
	e := SuiteExpect{Verdict: s.Expect.Verdict, Likely: slices.Clone(s.Expect.Likely), Notes: notes}
	if l := s.Expect.Liveness; l.Bounds() != nil {
		e.Liveness = &SuiteLiveness{LivenessBounds: *l.Bounds()}
		if c, ok := kafkaconf.LookupClient(s.Client.Name); ok {
			if lacks := l.Lacks(c); len(lacks) > 0 {
				e.Liveness.Breaks, e.Liveness.Lacks, e.Liveness.Client, e.Liveness.Why = true, lacks, c.Name, l.Why
			}
		}
	}
	if r := s.Regression; r != nil {
		switch report.AxisValue(axes, r.Knob) {
		case r.Bad:
			e.Side = SideBad
		case r.Fixed:
			e.Side = SideFixed
		}
	}
	return e
}

// CheckSuite validates the suite's axes and every cell without running anything.
func CheckSuite(s SuiteSpec) error {
	_, err := s.plan()
	return err
}

// SuiteResult is what a suite, or one shard of it, did.
type SuiteResult struct {
	// Manifest is suite.json: every run, judged.
	Manifest SuiteManifest
	// Markdown and HTML are the table; MarkdownFile, HTMLFile and JUnitFile where they are.
	Markdown, MarkdownFile, HTMLFile, JUnitFile string
	// ClustersStarted is how many clusters the suite started; StartClose their start and close
	// times summed; Wall the whole suite.
	ClustersStarted int
	StartClose      time.Duration
	Wall            time.Duration
}

// RunSuite runs every cell of the suite that applies Runs times (or the shard's share of those
// runs) on clusters shared by the cells of one shape, as a matrix does, judges each run against
// its scenario's expectation and writes the table. A run that fails to run is recorded with its
// error and the suite goes on; an interruption stops it, and what ran is still written.
func RunSuite(ctx context.Context, s SuiteSpec) (*SuiteResult, error) {
	began := time.Now()
	if err := checkRunsOut("suite", s.Runs, s.Out); err != nil {
		return nil, err
	}
	p, err := s.plan()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.Out, 0o755); err != nil {
		return nil, fmt.Errorf("suite: making the output directory: %w", err)
	}
	cells, _ := p.runnable()
	units := s.Shard.of(unitsOf(cells, s.Runs))
	f := &fleet{command: "suite", out: s.Out, harness: s.Harness, progress: s.Progress, log: s.Log}
	f.say("%d scenarios, %d cells (%d not applicable), %d runs in all; shard %s runs %d", len(p.scenarios), len(p.cells),
		len(p.cells)-len(cells), len(cells)*s.Runs, s.Shard, len(units))
	ran, runErr := f.run(ctx, units, began)
	man := s.manifest(p, units, ran, ctx.Err())
	res, err := writeSuite(s.Out, man)
	if res != nil {
		res.ClustersStarted, res.StartClose, res.Wall = f.started, f.startClose, time.Since(began)
	}
	return res, errors.Join(runErr, err)
}

// manifest records the suite's (or shard's) plan and what its runs did, in canonical order; the
// runs not run are listed without a folder. stopped is why the suite was interrupted (nil when
// it was not): a run it ended is not a harness error.
func (s SuiteSpec) manifest(p suitePlan, units []unit, ran []ranUnit, stopped error) SuiteManifest {
	cells, scs := p.runnable()
	man := SuiteManifest{Version: SuiteManifestVersion, RunsPerCell: s.Runs, Axes: s.Axes, Shard: s.Shard.String(),
		Scenarios: p.scenarios, TotalRuns: len(cells) * s.Runs, NotApplicable: []SuiteNotApplicable{}}
	for _, st := range s.Set {
		man.Set = append(man.Set, st.String())
	}
	for _, c := range p.cells {
		if c.notApplicable != "" {
			man.NotApplicable = append(man.NotApplicable, SuiteNotApplicable{Cell: c.index, Scenario: c.name, Axes: c.axes, Why: c.notApplicable})
		}
	}
	for _, u := range units {
		sc := scs[u.ci]
		r := SuiteRun{Cell: sc.index, Index: u.ci*s.Runs + u.k - 1, Scenario: sc.name, Axes: u.cell.axes, Run: u.k,
			Seed: u.cell.scenario.Seed + int64(u.k-1), Expect: sc.expect}
		for _, done := range ran {
			if done.unit.ci != u.ci || done.unit.k != u.k {
				continue
			}
			if o := done.outcome; o != nil {
				r.Dir, _ = filepath.Rel(s.Out, o.Dir)
				r.Verdict = o.Verdict()
				if o.Results != nil {
					r.UnknownCauses = o.Results.UnknownCauses
					r.Liveness = livenessOf(o.Results)
				}
				r.WallS = o.Wall.Seconds()
			}
			if done.err != nil {
				r.Error = oneLine(done.err.Error())
				if stopped == nil || !errors.Is(done.err, stopped) {
					r.UnknownCauses = append(r.UnknownCauses, results.CauseHarnessError)
				}
			}
		}
		man.Runs = append(man.Runs, r)
	}
	return man
}
