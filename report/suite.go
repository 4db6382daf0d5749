package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// Judgement is how one run of a suite stands against what its scenario expects of it.
type Judgement string

// The judgements.
const (
	// JudgementMet: the run got the verdict its scenario expects, and what is judged over the
	// runs of its cell (a positive control, a regression found again) holds.
	JudgementMet Judgement = "met"
	// JudgementNotMet: it did not.
	JudgementNotMet Judgement = "not-met"
	// JudgementUnknown: the run's verdict is unknown where its scenario expects another (the
	// run could not be fully judged).
	JudgementUnknown Judgement = "unknown"
	// JudgementIncomplete: the run did not complete, or was not run.
	JudgementIncomplete Judgement = "incomplete"
	// JudgementPending: the run is judged with runs another shard holds; verity merge judges it.
	JudgementPending Judgement = "pending"
	// JudgementKnownIssue: the run failed where its scenario expects a pass, and a known issue
	// (guarantee.KnownIssues) explains every forbidden finding: a real break of Kafka's promise
	// shown and explained before, listed in its own colour; it does not fail the suite.
	JudgementKnownIssue Judgement = "known-issue"
	// JudgementNotApplicable: the scenario cannot run at the cell's settings (a client without a
	// capability it requires, a knob it has no place for); the cell has no runs.
	JudgementNotApplicable Judgement = "not-applicable"
)

// Judgements lists every judgement, worst first: the order a row's summary names them in.
func Judgements() []Judgement {
	return []Judgement{JudgementNotMet, JudgementUnknown, JudgementIncomplete, JudgementPending, JudgementKnownIssue, JudgementNotApplicable, JudgementMet}
}

// class is the judgement's colour in the suite's page.
func (j Judgement) class() string {
	switch j {
	case JudgementMet:
		return "pass"
	case JudgementNotMet:
		return "fail"
	case JudgementNotApplicable:
		return "na"
	case JudgementKnownIssue:
		return "known"
	}
	return "unknown"
}

// SuiteRow is one cell of a suite: a scenario at one combination of axis values, over its runs.
type SuiteRow struct {
	Scenario string
	Axes     []Axis
	// Expected says what the scenario expects of the cell's runs ("pass, duplicate likely").
	Expected string
	// NotApplicable says why the cell cannot run; "" when it can. Such a cell has no runs.
	NotApplicable string
	Runs          []SuiteRun
}

// SuiteRun is one run of a suite's cell.
type SuiteRun struct {
	Run  int
	Seed int64
	// Results are the run's; nil when it did not complete.
	Results *results.Results
	// Causes are why its verdict is unknown: its results' unknown causes, or harness-error for
	// a run the harness could not carry out.
	Causes []results.UnknownCause
	// Report is the run's report.html as the table links it (a relative path); optional.
	Report string
	// WallS is the run's wall time in seconds, cluster start included when the run started one.
	WallS     float64
	Judgement Judgement
	// Why says why the judgement is not met; "" when it is.
	Why string
}

// AxesLabel names a combination of axis values: "acks=1,fault=kill", or "base" for none.
func AxesLabel(axes []Axis) string {
	if len(axes) == 0 {
		return "base"
	}
	parts := make([]string, len(axes))
	for i, a := range axes {
		parts[i] = a.Name + "=" + a.Value
	}
	return strings.Join(parts, ",")
}

// judgement is the row's worst judgement.
func (r SuiteRow) judgement() Judgement {
	if r.NotApplicable != "" {
		return JudgementNotApplicable
	}
	for _, j := range Judgements() {
		if slices.ContainsFunc(r.Runs, func(run SuiteRun) bool { return run.Judgement == j }) {
			return j
		}
	}
	return JudgementIncomplete // a cell with no runs
}

// result summarises the runs' judgements: "met ×3", "2 met, 1 not-met: why".
func (r SuiteRow) result() string {
	if r.NotApplicable != "" {
		return "not applicable: " + r.NotApplicable
	}
	counts := map[Judgement]int{}
	var whys []string
	for _, run := range r.Runs {
		counts[run.Judgement]++
		if run.Why != "" && !slices.Contains(whys, run.Why) {
			whys = append(whys, run.Why)
		}
	}
	var s string
	if len(counts) == 1 {
		for j, n := range counts {
			s = string(j)
			if n > 1 {
				s += fmt.Sprintf(" ×%d", n)
			}
		}
	} else {
		var parts []string
		for _, j := range Judgements() {
			if n := counts[j]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, j))
			}
		}
		s = strings.Join(parts, ", ")
	}
	if len(whys) > 0 {
		s += ": " + strings.Join(whys, "; ")
	}
	return s
}

// got summarises the verdicts of the runs: "pass ×3", "2 pass, 1 fail, 1 incomplete".
func (r SuiteRow) got() string {
	if r.NotApplicable != "" {
		return "-"
	}
	row := Row{Outcomes: map[results.Outcome]int{}}
	incomplete := 0
	for _, run := range r.Runs {
		if run.Results == nil {
			incomplete++
			continue
		}
		row.Outcomes[run.Results.Outcome()]++
	}
	var parts []string
	if len(row.Outcomes) > 0 {
		parts = append(parts, row.Verdict()+causesText(r.unknownCauses(true)))
	}
	if incomplete > 0 {
		parts = append(parts, fmt.Sprintf("%d incomplete", incomplete)+causesText(r.unknownCauses(false)))
	}
	return strings.Join(parts, ", ")
}

// unknownCauses are the causes of the unknown verdicts of the runs that completed (or of those
// that did not), each once, in the vocabulary's order.
func (r SuiteRow) unknownCauses(completed bool) []results.UnknownCause {
	var out []results.UnknownCause
	for _, c := range results.UnknownCauses() {
		if slices.ContainsFunc(r.Runs, func(run SuiteRun) bool {
			return (run.Results != nil) == completed && slices.Contains(run.Causes, c)
		}) {
			out = append(out, c)
		}
	}
	return out
}

// anomalies names every family some run found, with its count over the runs: "duplicate 12 in
// 2/3 runs (permitted)"; "none" when no run found any.
func (r SuiteRow) anomalies() string {
	var all []*results.Results
	for _, run := range r.Runs {
		if run.Results != nil {
			all = append(all, run.Results)
		}
	}
	if len(all) == 0 {
		return "-"
	}
	var families []guarantee.Anomaly
	for _, res := range all {
		for _, a := range Families(res) {
			if !slices.Contains(families, a) {
				families = append(families, a)
			}
		}
	}
	var parts []string
	for _, a := range families {
		var f FamilyCount
		for _, res := range all {
			addFamily(&f, res.Anomalies[a])
		}
		if f.Total > 0 {
			parts = append(parts, string(a)+" "+f.String(len(all)))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// availability is the mean write availability of the runs.
func (r SuiteRow) availability() string {
	row := Row{Availability: -1}
	var as []float64
	for _, run := range r.Runs {
		if run.Results == nil {
			continue
		}
		if a, fromOps, ok := availability(run.Results); ok {
			as = append(as, a)
			row.FromOps = row.FromOps || fromOps
		}
	}
	if len(as) > 0 {
		row.Availability = mean(as)
	}
	return row.availabilityText()
}

// liveness summarises the runs' liveness verdicts under the bounds their scenario stated:
// "max_stall 25s: fail ×3 (known)", "(expected)" when the failing runs met their expectation;
// "-" when no run stated a bound.
func (r SuiteRow) liveness() string {
	var bounds []string
	counts := map[results.LivenessVerdict]int{}
	var failing []Judgement
	for _, run := range r.Runs {
		if run.Results == nil || run.Results.Liveness == nil || !run.Results.Liveness.Bounds.Stated() {
			continue
		}
		l := run.Results.Liveness
		for _, b := range BoundsText(l.Bounds.LivenessBounds) {
			if !slices.Contains(bounds, b) {
				bounds = append(bounds, b)
			}
		}
		counts[l.Verdict]++
		if l.Verdict == results.LivenessFail {
			failing = append(failing, run.Judgement)
		}
	}
	if len(bounds) == 0 {
		return "-"
	}
	s := strings.Join(bounds, ", ") + ": " + countsText([]results.LivenessVerdict{results.LivenessFail, results.LivenessUnknown, results.LivenessPass}, counts)
	all := func(j Judgement) bool {
		return len(failing) > 0 && !slices.ContainsFunc(failing, func(f Judgement) bool { return f != j })
	}
	switch {
	case all(JudgementKnownIssue):
		s += " (known)"
	case all(JudgementMet):
		s += " (expected)"
	}
	return s
}

// recovered is how soon the runs recovered from their faults (RecoveryText); "-" when no run
// was judged for liveness.
func (r SuiteRow) recovered() string {
	var recs []results.Recovery
	judged := false
	for _, run := range r.Runs {
		if run.Results == nil || run.Results.Liveness == nil {
			continue
		}
		judged = true
		if rc := run.Results.Liveness.Recovery; rc != nil {
			recs = append(recs, *rc)
		}
	}
	if !judged {
		return "-"
	}
	return RecoveryText(recs)
}

// judgedLiveness says some run of the rows was judged for liveness: the table then has its
// columns, which results written before that have nothing to put in.
func judgedLiveness(rows []SuiteRow) bool {
	return slices.ContainsFunc(rows, func(r SuiteRow) bool {
		return slices.ContainsFunc(r.Runs, func(run SuiteRun) bool { return run.Results != nil && run.Results.Liveness != nil })
	})
}

// wall is the runs' wall time summed.
func (r SuiteRow) wall() string {
	if len(r.Runs) == 0 {
		return "-"
	}
	var s float64
	for _, run := range r.Runs {
		s += run.WallS
	}
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

// client is the client the row's runs drove, for a table where the client is not an axis.
func (r SuiteRow) client() string {
	for _, run := range r.Runs {
		if run.Results != nil {
			return ClientText(run.Results)
		}
	}
	return ""
}

// suiteColumns are the table's columns: the scenario, the axes any row has (the client's
// always), then what each cell expected and got.
func suiteColumns(rows []SuiteRow) (axes []string, cols []string) {
	for _, r := range rows {
		for _, a := range r.Axes {
			if !slices.Contains(axes, a.Name) {
				axes = append(axes, a.Name)
			}
		}
	}
	if !slices.Contains(axes, clientAxis) {
		axes = append(axes, clientAxis)
	}
	cols = []string{"runs", "expected", "got", "anomalies", "write availability"}
	if judgedLiveness(rows) {
		cols = append(cols, "liveness", "recovered in")
	}
	return axes, append(cols, "wall time", "result")
}

func (r SuiteRow) axisValues(names []string) []string {
	var out []string
	for _, n := range names {
		v := AxisValue(r.Axes, n)
		if v == "" && n == clientAxis {
			v = r.client()
		}
		out = append(out, v)
	}
	return out
}

// cells are the row's cells of the columns suiteColumns gives; live adds the liveness ones.
func (r SuiteRow) cells(live bool) []string {
	expected := r.Expected
	if expected == "" {
		expected = "-" // a cell that does not apply expects nothing
	}
	cs := []string{strconv.Itoa(len(r.Runs)), expected, r.got(), r.anomalies(), r.availability()}
	if live {
		cs = append(cs, r.liveness(), r.recovered())
	}
	return append(cs, r.wall(), r.result())
}

// SuiteMarkdown is a suite's table in markdown: one row per scenario and combination of axes.
func SuiteMarkdown(rows []SuiteRow) string {
	axes, cols := suiteColumns(rows)
	header := slices.Concat([]string{"scenario"}, axes, cols)
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(header)) + "\n")
	live := judgedLiveness(rows)
	for _, r := range rows {
		cs := slices.Concat([]string{r.Scenario}, r.axisValues(axes), r.cells(live))
		for i := range cs {
			cs[i] = mdEscape(cs[i])
		}
		b.WriteString("| " + strings.Join(cs, " | ") + " |\n")
	}
	return b.String()
}

const suiteTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;font-size:14px}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}.pass{background:#e3f4e1}.fail{background:#fbe0e0}.unknown{background:#fff2cc}.na{background:#eee;color:#666}.known{background:#ffe0b2}
.note{color:#555;font-size:13px}pre{font-size:13px}
</style></head><body>
<h1>{{.Title}}</h1>
<table id="suite"><thead><tr><th>scenario</th>{{range .Axes}}<th>{{.}}</th>{{end}}{{range .Columns}}<th>{{.}}</th>{{end}}<th>reports</th></tr></thead>
<tbody>{{range .Rows}}<tr class="{{.Class}}"><td>{{.Scenario}}</td>{{range .Axes}}<td>{{.}}</td>{{end}}{{range .Cells}}<td>{{.}}</td>{{end}}<td>{{range $i, $r := .Reports}}{{if $i}}, {{end}}<a href="{{$r.Href}}">run {{$r.Run}}</a>{{end}}</td></tr>
{{end}}</tbody></table>
<p class="note">Each run is judged against its own scenario's expectation: the verdict it expects, its positive controls (likely anomalies: at least one of a cell's runs must show each), and for a regression scenario the bug found again over its bad and fixed sides. Write availability is the share of the run during which writes succeeded (mean over runs); wall time sums the runs'.</p>
{{if .Footer}}<pre>{{.Footer}}</pre>{{end}}
</body></html>
`

type suiteLink struct {
	Href string
	Run  int
}

type suiteHTMLRow struct {
	Class    string
	Scenario string
	Axes     []string
	Cells    []string
	Reports  []suiteLink
}

// SuiteHTML is a suite's table as one self-contained page; footer (the seeds, the shard, the
// regressions' findings) is shown below it as written. Links to the runs' reports are relative.
func SuiteHTML(title string, rows []SuiteRow, footer string) (string, error) {
	axes, cols := suiteColumns(rows)
	data := struct {
		Title, Footer string
		Axes, Columns []string
		Rows          []suiteHTMLRow
	}{Title: title, Footer: footer, Axes: axes, Columns: cols}
	live := judgedLiveness(rows)
	for _, r := range rows {
		hr := suiteHTMLRow{Class: r.judgement().class(), Scenario: r.Scenario, Axes: r.axisValues(axes), Cells: r.cells(live)}
		for _, run := range r.Runs {
			if run.Report != "" && run.Results != nil {
				hr.Reports = append(hr.Reports, suiteLink{Href: run.Report, Run: run.Run})
			}
		}
		data.Rows = append(data.Rows, hr)
	}
	t, err := template.New("suite").Parse(suiteTemplate)
	if err != nil {
		return "", fmt.Errorf("suite template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("rendering the suite's table: %w", err)
	}
	return b.String(), nil
}

// SuiteJUnit is one document over a suite: a test suite per scenario, a test case per run (failed
// when the run did not meet its expectation, an error when it did not complete or could not be
// judged, skipped while pending a merge) and a skipped case per cell that does not apply.
func SuiteJUnit(name string, rows []SuiteRow) *JUnitSuites {
	doc := &JUnitSuites{Name: name}
	var total float64
	index := map[string]int{}
	for _, r := range rows {
		i, ok := index[r.Scenario]
		if !ok {
			i = len(doc.Suites)
			index[r.Scenario] = i
			doc.Suites = append(doc.Suites, JUnitSuite{Name: "verity." + r.Scenario,
				Properties: []JUnitProperty{{Name: "scenario", Value: r.Scenario}}})
		}
		s := &doc.Suites[i]
		label := AxesLabel(r.Axes)
		if r.NotApplicable != "" {
			s.Cases = append(s.Cases, JUnitCase{Name: label, Classname: s.Name, Time: "0",
				Properties: []JUnitProperty{{Name: "judgement", Value: string(JudgementNotApplicable)}},
				Skipped:    &JUnitMessage{Message: "not applicable: " + r.NotApplicable}})
			continue
		}
		for _, run := range r.Runs {
			c := JUnitCase{Name: fmt.Sprintf("%s run %d", label, run.Run), Classname: s.Name, Time: fmt.Sprintf("%.3f", run.WallS),
				Properties: []JUnitProperty{{Name: "seed", Value: strconv.FormatInt(run.Seed, 10)},
					{Name: "expected", Value: r.Expected}, {Name: "judgement", Value: string(run.Judgement)}}}
			if run.Results != nil {
				c.Properties = append(c.Properties, JUnitProperty{Name: "verdict", Value: string(run.Results.Verdict)})
			}
			if len(run.Causes) > 0 {
				c.Properties = append(c.Properties, JUnitProperty{Name: "unknown_causes", Value: joinCauses(run.Causes)})
			}
			if run.Report != "" {
				c.Properties = append(c.Properties, JUnitProperty{Name: "report", Value: run.Report})
			}
			msg := &JUnitMessage{Type: string(run.Judgement), Message: run.Why,
				Text: fmt.Sprintf("scenario %s at %s, seed %d", r.Scenario, label, run.Seed)}
			switch run.Judgement {
			case JudgementMet:
			case JudgementNotMet:
				c.Failure = msg
			case JudgementPending, JudgementKnownIssue:
				c.Skipped = msg
			default:
				c.Error = msg
			}
			total += run.WallS
			s.Cases = append(s.Cases, c)
		}
	}
	for i := range doc.Suites {
		s := &doc.Suites[i]
		s.tally()
		var t float64
		for _, c := range s.Cases {
			if v, err := strconv.ParseFloat(c.Time, 64); err == nil {
				t += v
			}
		}
		s.Time = fmt.Sprintf("%.3f", t)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
	}
	doc.Time = fmt.Sprintf("%.3f", total)
	return doc
}

// WriteSuiteJUnit writes SuiteJUnit's document to w.
func WriteSuiteJUnit(w io.Writer, name string, rows []SuiteRow) error {
	return writeXML(w, SuiteJUnit(name, rows))
}
