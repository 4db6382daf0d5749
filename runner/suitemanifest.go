package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// SuiteFile is the name of a suite's manifest in its output directory.
const SuiteFile = "suite.json"

// SuiteManifestVersion is the suite manifest format's version; MergeSuite refuses another.
const SuiteManifestVersion = 1

// SuiteManifest says what a suite, or one shard of it, ran and how each run stood against its
// scenario's expectation (docs/schema/suite.schema.json). It is written from this type only.
type SuiteManifest struct {
	Version int `json:"verity_suite"`
	// RunsPerCell is how many times every cell that applies runs; run k uses its scenario's
	// seed + k-1.
	RunsPerCell int `json:"runs_per_cell"`
	// Set are the settings forced on every scenario, as flags.
	Set  []string     `json:"set,omitempty"`
	Axes []MatrixAxis `json:"axes"`
	// Shard is "K/N"; "1/1" for a whole suite.
	Shard     string          `json:"shard"`
	Scenarios []SuiteScenario `json:"scenarios"`
	// TotalRuns is how many runs the whole suite has, over every shard.
	TotalRuns     int                  `json:"total_runs"`
	NotApplicable []SuiteNotApplicable `json:"not_applicable"`
	Runs          []SuiteRun           `json:"runs"`
	// Regressions are the findings of the regression scenarios whose runs are all here.
	Regressions []SuiteRegression `json:"regressions,omitempty"`
}

// SuiteScenario is one scenario of the suite.
type SuiteScenario struct {
	Name       string                `json:"name"`
	Tags       []scenarios.Tag       `json:"tags,omitempty"`
	Regression *scenarios.Regression `json:"regression,omitempty"`
	// Note says how the scenario departs from the suite's axes (a regression's own knob).
	Note string `json:"note,omitempty"`
}

// SuiteNotApplicable is a cell that does not run, and why.
type SuiteNotApplicable struct {
	Cell     int           `json:"cell"`
	Scenario string        `json:"scenario"`
	Axes     []report.Axis `json:"axes"`
	Why      string        `json:"why"`
}

// Side is the side of a regression a cell is.
type Side string

// The sides of a regression.
const (
	SideBad   Side = "bad"
	SideFixed Side = "fixed"
)

// SuiteExpect is what a run is judged against.
type SuiteExpect struct {
	// Verdict is the verdict the scenario expects (pass for every built-in); a regression's
	// runs are judged by their side instead.
	Verdict results.Verdict `json:"verdict"`
	// Likely are the positive controls left at the cell's settings: at least one run of the
	// cell must show each.
	Likely []guarantee.Anomaly `json:"likely,omitempty"`
	Side   Side                `json:"regression_side,omitempty"`
	// Notes say which of the scenario's claims the cell's settings drop, and why.
	Notes []string `json:"notes,omitempty"`
	// Liveness are the bounds on progress the scenario states at the cell's settings; nil: none.
	Liveness *SuiteLiveness `json:"liveness,omitempty"`
}

// SuiteLiveness is a cell's liveness expectation: the stated bounds, and whether the cell's
// client is known to break them.
type SuiteLiveness struct {
	history.LivenessBounds
	// Breaks: the cell's client lacks Lacks, capabilities of the scenario's breaks_without, so
	// its runs may break a bound, a known behaviour of Client that Why explains. A run that keeps
	// the bounds meets the expectation too: how long a client waits depends on timing, and a
	// nightly must not alarm when a known break happens not to show.
	Breaks bool                   `json:"breaks,omitempty"`
	Lacks  []kafkaconf.Capability `json:"lacks,omitempty"`
	Client kafkaconf.ClientName   `json:"client,omitempty"`
	Why    string                 `json:"why,omitempty"`
}

// Text names the bounds as the checker does: "max_stall 25s".
func (l SuiteLiveness) Text() string { return l.LivenessBounds.String() }

// SuiteRun is one run of a cell.
type SuiteRun struct {
	// Cell is the cell's place among the suite's cells (not-applicable ones included); Index
	// the run's place among the whole suite's runs, which --shard splits.
	Cell     int           `json:"cell"`
	Index    int           `json:"index"`
	Scenario string        `json:"scenario"`
	Axes     []report.Axis `json:"axes"`
	Run      int           `json:"run"`
	Seed     int64         `json:"seed"`
	Expect   SuiteExpect   `json:"expect"`
	// Dir is the run's folder relative to the manifest; empty when the run did not start.
	Dir     string          `json:"dir,omitempty"`
	Verdict results.Verdict `json:"verdict,omitempty"`
	// UnknownCauses are why the verdict is unknown (results.json's unknown_causes).
	UnknownCauses []results.UnknownCause `json:"unknown_causes,omitempty"`
	// Liveness is the run's liveness verdict (results.json's liveness.verdict); empty when the
	// run has no results.
	Liveness results.LivenessVerdict `json:"liveness,omitempty"`
	// Error is why the run did not complete; empty when it did.
	Error string  `json:"error,omitempty"`
	WallS float64 `json:"wall_s,omitempty"`
	// Judgement is how the run stands against Expect; Why says why when not met.
	Judgement report.Judgement `json:"judgement"`
	Why       string           `json:"why,omitempty"`
}

// SuiteRegression is a regression scenario's finding at one combination of the other axes.
type SuiteRegression struct {
	Scenario string           `json:"scenario"`
	Axes     []report.Axis    `json:"axes"`
	Result   RegressionResult `json:"result"`
}

// Worst is the judgement the suite's exit follows: incomplete, then not met, then unknown;
// met otherwise (runs pending a merge and cells that do not apply fail nothing).
func (m SuiteManifest) Worst() report.Judgement {
	for _, j := range []report.Judgement{report.JudgementIncomplete, report.JudgementNotMet, report.JudgementUnknown} {
		if slices.ContainsFunc(m.Runs, func(r SuiteRun) bool { return r.Judgement == j }) {
			return j
		}
	}
	return report.JudgementMet
}

// Count counts the runs judged j.
func (m SuiteManifest) Count(j report.Judgement) int {
	n := 0
	for _, r := range m.Runs {
		if r.Judgement == j {
			n++
		}
	}
	return n
}

func (m SuiteManifest) write(path string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("suite: encoding %s: %w", SuiteFile, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("suite: writing %s: %w", SuiteFile, err)
	}
	return nil
}

// IsSuite reports whether dir is a suite's output (it has suite.json).
func IsSuite(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, SuiteFile))
	return err == nil
}

// readSuiteManifest reads dir's suite.json.
func readSuiteManifest(dir string) (SuiteManifest, error) {
	var m SuiteManifest
	b, err := os.ReadFile(filepath.Join(dir, SuiteFile))
	if err != nil {
		return m, fmt.Errorf("%s: not a suite's output: %w", dir, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s: reading %s: %w", dir, SuiteFile, err)
	}
	if m.Version != SuiteManifestVersion {
		return m, fmt.Errorf("%s: %s version %d: this verity reads version %d", dir, SuiteFile, m.Version, SuiteManifestVersion)
	}
	return m, nil
}

// sameSuite reports how b differs from a as a suite (its shard and runs aside), or "".
func sameSuite(a, b SuiteManifest) string {
	for _, f := range []struct {
		what   string
		va, vb any
	}{
		{"runs a cell", a.RunsPerCell, b.RunsPerCell},
		{"settings", a.Set, b.Set},
		{"axes", a.Axes, b.Axes},
		{"scenarios", a.Scenarios, b.Scenarios},
		{"runs in all", a.TotalRuns, b.TotalRuns},
		{"cells not applicable", a.NotApplicable, b.NotApplicable},
	} {
		ja, _ := json.Marshal(f.va)
		jb, _ := json.Marshal(f.vb)
		if !bytes.Equal(ja, jb) {
			return fmt.Sprintf("%s %s, not %s", f.what, jb, ja)
		}
	}
	return ""
}

// judge sets every run's judgement from its results (res, aligned with m.Runs; unread says why
// a run's results could not be read) and records the regressions' findings. A run is judged by
// its verdict and by what is judged over its cell's runs (a positive control) or its
// regression's (found again); when some of those runs are in another shard, it is pending.
func (m *SuiteManifest) judge(res []*results.Results, unread []string) {
	regression := map[string]*scenarios.Regression{}
	for _, s := range m.Scenarios {
		regression[s.Name] = s.Regression
	}
	var order []string
	groups := map[string][]int{}
	for i, r := range m.Runs {
		key := fmt.Sprint(r.Cell)
		if reg := regression[r.Scenario]; reg != nil {
			key = r.Scenario + " " + report.AxesLabel(withoutAxis(r.Axes, reg.Knob))
		}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], i)
	}
	m.Regressions = nil
	for _, key := range order {
		idx := groups[key]
		if reg := regression[m.Runs[idx[0]].Scenario]; reg != nil {
			m.judgeRegression(*reg, idx, res, unread)
		} else {
			m.judgeCell(idx, res, unread)
		}
	}
}

// incomplete judges a run that has no results; false when it has them.
func (m *SuiteManifest) incomplete(i int, res []*results.Results, unread []string) bool {
	r := &m.Runs[i]
	why := r.Error
	switch {
	case why != "":
	case r.Dir == "":
		why = "not run"
	case res[i] == nil:
		why = unread[i]
	default:
		return false
	}
	r.Judgement, r.Why = report.JudgementIncomplete, why
	return true
}

const pendingWhy = "judged with runs another shard holds: verity merge judges it"

// judgeCell judges the runs (indices idx) of one cell that is not a regression's: by the
// safety verdict first, then by the stated liveness bounds (a break the cell's client is known
// for is a known issue, any other not met), then by what is judged over the cell's runs (its
// positive controls).
func (m *SuiteManifest) judgeCell(idx []int, res []*results.Results, unread []string) {
	whole := len(idx) == m.RunsPerCell
	fired := map[guarantee.Anomaly]bool{}
	for _, i := range idx {
		if res[i] != nil {
			for a, an := range res[i].Anomalies {
				fired[a] = fired[a] || an.Count > 0
			}
		}
	}
	for _, i := range idx {
		if m.incomplete(i, res, unread) {
			continue
		}
		r, got := &m.Runs[i], res[i]
		switch {
		case got.Verdict == r.Expect.Verdict:
		case got.Verdict == results.Unknown:
			r.Judgement, r.Why = report.JudgementUnknown, "verdict unknown: "+strings.Join(got.UnknownReasons, "; ")
			continue
		case r.Expect.Verdict == results.Pass && len(got.OnlyKnown()) > 0:
			r.Judgement, r.Why = report.JudgementKnownIssue, fmt.Sprintf("expected pass, got fail%s, every forbidden finding explained by known issue %s",
				forbiddenText(got), knownText(got.OnlyKnown()))
			continue
		default:
			r.Judgement, r.Why = report.JudgementNotMet, fmt.Sprintf("expected %s, got %s%s", r.Expect.Verdict, got.Verdict, forbiddenText(got))
			continue
		}
		el := r.Expect.Liveness
		switch livenessOf(got) {
		case results.LivenessFail:
			if el != nil && el.Breaks {
				r.Judgement, r.Why = report.JudgementKnownIssue, fmt.Sprintf("%s broken, a known behaviour of %s (it lacks %s): %s",
					brokenBounds(got.Liveness), el.Client, capabilityList(el.Lacks), el.Why)
			} else {
				r.Judgement, r.Why = report.JudgementNotMet, "liveness failed: "+strings.Join(got.Liveness.Breaches(), "; ")
			}
			continue
		case results.LivenessUnknown:
			r.Judgement, r.Why = report.JudgementUnknown, "liveness unknown: "+strings.Join(got.Liveness.Reasons, "; ")
			continue
		}
		var silent []guarantee.Anomaly
		for _, a := range r.Expect.Likely {
			if !fired[a] {
				silent = append(silent, a)
			}
		}
		var missing, unseen []string
		if len(silent) > 0 {
			missing = append(missing, fmt.Sprintf("positive control %s fired in none of the cell's %d runs", guarantee.Join(silent), len(idx)))
			unseen = append(unseen, "positive control "+guarantee.Join(silent))
		}
		switch {
		case len(missing) == 0:
			r.Judgement, r.Why = report.JudgementMet, ""
		case whole:
			r.Judgement, r.Why = report.JudgementNotMet, strings.Join(missing, "; ")
		default:
			r.Judgement, r.Why = report.JudgementPending, strings.Join(unseen, ", ")+" not seen here: "+pendingWhy
		}
	}
}

// livenessOf is r's liveness verdict; not stated when its results have no liveness section.
func livenessOf(r *results.Results) results.LivenessVerdict {
	if r == nil || r.Liveness == nil {
		return results.LivenessNotStated
	}
	return r.Liveness.Verdict
}

// brokenBounds names the stated bounds l's findings broke: "max_stall 25s".
func brokenBounds(l *results.Liveness) string {
	var out []string
	for _, f := range results.BoundFamilies() {
		if fs := l.Findings[f]; fs.Count > 0 && len(fs.Examples) > 0 {
			out = append(out, fs.Examples[0].Bound)
		}
	}
	if len(out) == 0 {
		return "a stated bound"
	}
	return strings.Join(out, ", ")
}

func capabilityList(cs []kafkaconf.Capability) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return strings.Join(out, ", ")
}

// forbiddenText lists the forbidden findings of a run that failed: ": 3 lost-write".
func forbiddenText(r *results.Results) string {
	var parts []string
	for _, a := range report.Families(r) {
		if n := r.Anomalies[a].ForbiddenCount(); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, a))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + " forbidden)"
}

func knownText(ks []guarantee.KnownIssue) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// judgeRegression judges the runs (indices idx) of a regression's two sides at one combination
// of the other axes, as verity matrix does (JudgeRegression).
func (m *SuiteManifest) judgeRegression(reg scenarios.Regression, idx []int, res []*results.Results, unread []string) {
	whole := len(idx) == 2*m.RunsPerCell
	var runs []MatrixRun
	for _, i := range idx {
		r := m.Runs[i]
		mr := MatrixRun{Axes: r.Axes, Run: r.Run}
		if res[i] != nil && r.Error == "" {
			mr.Outcome = &Outcome{Dir: r.Dir, Results: res[i]}
		} else {
			mr.Err = errors.New("did not complete")
		}
		runs = append(runs, mr)
	}
	found := JudgeRegression(reg, runs)
	first := m.Runs[idx[0]]
	if whole {
		m.Regressions = append(m.Regressions, SuiteRegression{Scenario: first.Scenario, Axes: withoutAxis(first.Axes, reg.Knob), Result: found})
	}
	for _, i := range idx {
		if m.incomplete(i, res, unread) {
			continue
		}
		r := &m.Runs[i]
		switch {
		case !whole:
			r.Judgement, r.Why = report.JudgementPending, "the regression is "+pendingWhy
		case found.Reproduced:
			r.Judgement, r.Why = report.JudgementMet, ""
		default:
			r.Judgement, r.Why = report.JudgementNotMet, fmt.Sprintf("regression %s NOT found again: the bad side showed it in %d of %d runs, "+
				"the fixed side in %d of %d (%d passed)", reg.Bug, found.Bad.Showed, found.Bad.Runs, found.Fixed.Showed, found.Fixed.Runs, found.Fixed.Passed)
		}
	}
}

func withoutAxis(axes []report.Axis, name string) []report.Axis {
	return slices.DeleteFunc(slices.Clone(axes), func(a report.Axis) bool { return a.Name == name })
}

// writeSuite judges m's runs from their results below dir and writes suite.json, suite.md,
// suite.html and junit.xml (a case per run) into dir.
func writeSuite(dir string, m SuiteManifest) (*SuiteResult, error) {
	res := make([]*results.Results, len(m.Runs))
	unread := make([]string, len(m.Runs))
	for i, r := range m.Runs {
		if r.Dir == "" || r.Error != "" {
			continue
		}
		got, err := results.Read(filepath.Join(dir, r.Dir, results.FileName))
		if err != nil {
			unread[i] = oneLine(err.Error())
			continue
		}
		res[i] = got
	}
	m.judge(res, unread)
	out := &SuiteResult{Manifest: m}
	if err := m.write(filepath.Join(dir, SuiteFile)); err != nil {
		return out, err
	}
	rows := m.rows(res)
	footer := m.footer()
	out.Markdown = report.SuiteMarkdown(rows) + "\n" + footer
	out.MarkdownFile = filepath.Join(dir, "suite.md")
	if err := os.WriteFile(out.MarkdownFile, []byte(out.Markdown), 0o644); err != nil {
		return out, fmt.Errorf("suite: writing the table: %w", err)
	}
	page, err := report.SuiteHTML(fmt.Sprintf("Verity suite: %d scenarios, %d runs a cell", len(m.Scenarios), m.RunsPerCell), rows, footer)
	if err != nil {
		return out, fmt.Errorf("suite: %w", err)
	}
	out.HTMLFile = filepath.Join(dir, "suite.html")
	if err := os.WriteFile(out.HTMLFile, []byte(page), 0o644); err != nil {
		return out, fmt.Errorf("suite: writing the table: %w", err)
	}
	var buf bytes.Buffer
	if err := report.WriteSuiteJUnit(&buf, "verity suite", rows); err != nil {
		return out, fmt.Errorf("suite: %w", err)
	}
	out.JUnitFile = filepath.Join(dir, "junit.xml")
	if err := os.WriteFile(out.JUnitFile, buf.Bytes(), 0o644); err != nil {
		return out, fmt.Errorf("suite: writing junit.xml: %w", err)
	}
	return out, nil
}

// rows are the table's rows: one per cell, not-applicable ones included, in the suite's order.
func (m SuiteManifest) rows(res []*results.Results) []report.SuiteRow {
	regression := map[string]*scenarios.Regression{}
	for _, s := range m.Scenarios {
		regression[s.Name] = s.Regression
	}
	byCell := map[int]*report.SuiteRow{}
	var cells []int
	row := func(cell int, scenario string, axes []report.Axis) *report.SuiteRow {
		if r, ok := byCell[cell]; ok {
			return r
		}
		cells = append(cells, cell)
		byCell[cell] = &report.SuiteRow{Scenario: scenario, Axes: axes}
		return byCell[cell]
	}
	for _, na := range m.NotApplicable {
		row(na.Cell, na.Scenario, na.Axes).NotApplicable = na.Why
	}
	for i, r := range m.Runs {
		sr := row(r.Cell, r.Scenario, r.Axes)
		sr.Expected = expectedText(r.Expect, regression[r.Scenario])
		run := report.SuiteRun{Run: r.Run, Seed: r.Seed, Results: res[i], Causes: r.UnknownCauses, WallS: r.WallS, Judgement: r.Judgement, Why: r.Why}
		if r.Dir != "" {
			run.Report = filepath.ToSlash(filepath.Join(r.Dir, "report.html"))
		}
		sr.Runs = append(sr.Runs, run)
	}
	slices.Sort(cells)
	out := make([]report.SuiteRow, len(cells))
	for i, c := range cells {
		out[i] = *byCell[c]
	}
	return out
}

// expectedText says what a cell's runs are expected to show: "pass, duplicate likely"; for a
// regression's bad side, its bug.
func expectedText(e SuiteExpect, reg *scenarios.Regression) string {
	switch {
	case e.Side == SideBad && reg != nil:
		return "the bug (" + guarantee.Join(reg.Shows) + " forbidden) in most runs"
	case e.Side == SideFixed:
		return "pass, without the bug"
	}
	s := string(e.Verdict)
	if len(e.Likely) > 0 {
		s += ", " + guarantee.Join(e.Likely) + " likely"
	}
	if l := e.Liveness; l != nil {
		s += ", " + l.Text()
		if l.Breaks {
			s += " broken (a known behaviour of " + string(l.Client) + ")"
		}
	}
	if len(e.Notes) > 0 {
		s += " (see notes)"
	}
	return s
}

// footer says below the table how the runs were seeded, what a shard holds, the notes of cells
// whose settings dropped a claim, and the regressions' findings.
func (m SuiteManifest) footer() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d scenarios; run k of every cell used its scenario's seed + k-1 (k = 1..%d).", len(m.Scenarios), m.RunsPerCell)
	if len(m.Set) > 0 {
		fmt.Fprintf(&b, " Forced on every scenario: %s.", strings.Join(m.Set, " "))
	}
	b.WriteString("\n")
	if m.Shard != "1/1" && m.Shard != "" {
		fmt.Fprintf(&b, "This is shard %s of the suite: %d of its %d runs. Positive controls and regressions whose other runs "+
			"another shard holds are pending until verity merge.\n", m.Shard, len(m.Runs), m.TotalRuns)
	}
	counts := []string{}
	for _, j := range report.Judgements() {
		n := m.Count(j)
		if j == report.JudgementNotApplicable {
			n = len(m.NotApplicable)
		}
		if n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, j))
		}
	}
	fmt.Fprintf(&b, "Runs: %s (not-applicable counts cells).\n", strings.Join(counts, ", "))
	var notes []string
	seen := map[int]bool{}
	for _, r := range m.Runs {
		if seen[r.Cell] || len(r.Expect.Notes) == 0 {
			continue
		}
		seen[r.Cell] = true
		for _, n := range r.Expect.Notes {
			notes = append(notes, fmt.Sprintf("- %s at %s: %s", r.Scenario, report.AxesLabel(r.Axes), n))
		}
	}
	for _, s := range m.Scenarios {
		if s.Note != "" {
			notes = append(notes, fmt.Sprintf("- %s: %s", s.Name, s.Note))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nNotes:\n" + strings.Join(notes, "\n") + "\n")
	}
	for _, r := range m.Regressions {
		fmt.Fprintf(&b, "\n## Regression %s at %s\n\n```\n%s```\n", r.Scenario, report.AxesLabel(r.Axes), r.Result.String())
	}
	return b.String()
}

// MergeSuite joins the outputs of a sharded suite (each dir one shard's --out) into one
// suite.json, suite.md, suite.html and junit.xml in out, judging every run over all the shards'
// runs; its links reach into the shards' run folders. Every shard 1..N must be there once, all
// of one suite.
func MergeSuite(dirs []string, out string) (*SuiteResult, error) {
	out, dirs, mans, err := readShards(dirs, out, "suite", readSuiteManifest, sameSuite, func(m SuiteManifest) string { return m.Shard })
	if err != nil {
		return nil, err
	}
	whole := mans[0]
	whole.Shard, whole.Runs, whole.Regressions = "1/1", nil, nil
	for i, m := range mans {
		rel, err := filepath.Rel(out, dirs[i])
		if err != nil {
			return nil, fmt.Errorf("merge: linking %s from %s: %w", dirs[i], out, err)
		}
		for _, r := range m.Runs {
			if r.Dir != "" {
				r.Dir = filepath.Join(rel, r.Dir)
			}
			whole.Runs = append(whole.Runs, r)
		}
	}
	slices.SortStableFunc(whole.Runs, func(a, b SuiteRun) int { return a.Index - b.Index })
	if len(whole.Runs) != whole.TotalRuns {
		return nil, fmt.Errorf("merge: the shards hold %d runs, the suite has %d: a shard's suite.json is not its whole share", len(whole.Runs), whole.TotalRuns)
	}
	return writeSuite(out, whole)
}
