package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// Axis is one configuration axis of a matrix cell and its value ("acks", "1").
type Axis struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Cell is one run of a matrix: where it sits on the axes, and what the checker found.
type Cell struct {
	Axes []Axis
	// Run numbers the repetitions of one combination of axes (1, 2, 3); runs with equal axes
	// are summarised in one row.
	Run     int
	Results *results.Results
	// Report is the run's report.html, as the table should link it (relative path); optional.
	Report string
}

// FamilyCount sums one anomaly family over the runs of a row.
type FamilyCount struct {
	Total int
	// Runs is how many runs found any.
	Runs int
	// Forbidden is how many findings were forbidden.
	Forbidden int
	// Checked is how many runs checked the family.
	Checked int
}

// Row is one combination of axes, over its runs.
type Row struct {
	// Axes are the cell's axes; a "client" column (ClientText) is added when the client is not
	// an axis, so that every table says which client ran.
	Axes []Axis
	Runs int
	// Lost is lost-write; Duplicate duplicate; Reordered reorder.
	Lost, Duplicate, Reordered FamilyCount
	// EffectDuplicate and EffectMissing are the sinks' families; Sinks says some run of the
	// row had a sink (the table then shows their columns). OutboxLost and OutboxDuplicate are an
	// outbox's, shown when some run had one (Outbox).
	EffectDuplicate, EffectMissing FamilyCount
	OutboxLost, OutboxDuplicate    FamilyCount
	Sinks, Outbox                  bool
	// Other counts every other family's findings.
	Other FamilyCount
	// Availability is the mean share of the run time during which writes succeeded, in %
	// (-1 when no run says). FromOps marks a value that, lacking the run's length, is the
	// share of writes that succeeded instead.
	Availability float64
	FromOps      bool
	// Throughput is the mean rate of acknowledged writes over the runs, per second of the run
	// (-1 when no run says how long it ran): what a durability setting costs.
	Throughput float64
	// P99 is the largest p99 write latency over the runs, in milliseconds.
	P99 float64
	// Outcomes counts the runs per outcome (results.Outcome: the verdict, or a broken stated
	// liveness bound).
	Outcomes map[results.Outcome]int
	// Recoveries are the worst recovery (Liveness.Recovery) of each run that had a fault;
	// Liveness says some run of the row was judged for liveness (the table then shows the
	// column: results written before that have nothing to put in it).
	Recoveries []results.Recovery
	Liveness   bool
	Reports    []string
}

// Verdict summarises the outcomes: "pass", "fail ×3", "2 pass, 1 fail (liveness)".
func (r Row) Verdict() string { return countsText(results.OutcomeOrder, r.Outcomes) }

// countsText names counts of kinds: "x" for one, "x ×3" for one kind, "1 x, 2 y" (in order)
// for several.
func countsText[K ~string](order []K, counts map[K]int) string {
	var parts []string
	for _, k := range order {
		if n := counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	if len(parts) == 1 {
		for _, k := range order {
			switch n := counts[k]; {
			case n == 1:
				return string(k)
			case n > 1:
				return fmt.Sprintf("%s ×%d", k, n)
			}
		}
	}
	return strings.Join(parts, ", ")
}

// Worst is the worst verdict of the row: fail (a broken liveness bound too), then unknown,
// then pass.
func (r Row) Worst() results.Verdict {
	switch {
	case r.Outcomes[results.OutcomeFail] > 0 || r.Outcomes[results.OutcomeLivenessFail] > 0:
		return results.Fail
	case r.Outcomes[results.OutcomeUnknown] > 0:
		return results.Unknown
	}
	return results.Pass
}

// RecoveryText summarises recoveries from injection over runs: "9.8 s" for one, "p50 9.8 s ·
// max 12.1 s" for several, "· after heal max 3.0 s" when a client took more than a second
// after a heal, "max ≥40.0 s (not recovered ×1)" when a stall was still open at the end (its
// time is then a least value); "n/a" when no run had a fault.
func RecoveryText(recs []results.Recovery) string {
	if len(recs) == 0 {
		return "n/a"
	}
	from := make([]float64, len(recs))
	afterHeal := 0.0
	open := 0
	for i, rc := range recs {
		from[i] = rc.FromInjectionMS
		if rc.FromHealMS != nil {
			afterHeal = math.Max(afterHeal, *rc.FromHealMS)
		}
		if !rc.Recovered {
			open++
		}
	}
	slices.Sort(from)
	worst := secsText(from[len(from)-1])
	if open > 0 {
		worst = fmt.Sprintf("≥%s (not recovered ×%d)", worst, open)
	}
	s := worst
	if len(from) > 1 {
		// The nearest-rank median: a value some run had.
		s = "p50 " + secsText(from[(len(from)-1)/2]) + " · max " + worst
	}
	if afterHeal > 1000 {
		s += " · after heal max " + secsText(afterHeal)
	}
	return s
}

// Compare summarises cells into rows, one per distinct combination of axes, in the order the
// combinations first appear. Cells without results are skipped.
func Compare(cells []Cell) []Row {
	var rows []Row
	index := map[string]int{}
	avail, rate := map[int][]float64{}, map[int][]float64{}
	for _, c := range cells {
		r := c.Results
		if r == nil {
			continue
		}
		axes := slices.Clone(c.Axes)
		if !slices.ContainsFunc(axes, func(a Axis) bool { return a.Name == clientAxis }) {
			axes = append(axes, Axis{Name: clientAxis, Value: ClientText(r)})
		}
		key := axesKey(axes)
		i, ok := index[key]
		if !ok {
			i = len(rows)
			index[key] = i
			rows = append(rows, Row{Axes: axes, Outcomes: map[results.Outcome]int{}, Availability: -1, Throughput: -1})
		}
		row := &rows[i]
		row.Runs++
		row.Outcomes[r.Outcome()]++
		row.Liveness = row.Liveness || r.Liveness != nil
		if r.Liveness != nil && r.Liveness.Recovery != nil {
			row.Recoveries = append(row.Recoveries, *r.Liveness.Recovery)
		}
		addFamily(&row.Lost, r.Anomalies[guarantee.LostWrite])
		addFamily(&row.Duplicate, r.Anomalies[guarantee.Duplicate])
		addFamily(&row.Reordered, r.Anomalies[guarantee.Reorder])
		addFamily(&row.EffectDuplicate, r.Anomalies[guarantee.EffectDuplicate])
		addFamily(&row.EffectMissing, r.Anomalies[guarantee.EffectMissing])
		addFamily(&row.OutboxLost, r.Anomalies[guarantee.OutboxLost])
		addFamily(&row.OutboxDuplicate, r.Anomalies[guarantee.OutboxDuplicate])
		if a, ok := r.Anomalies[guarantee.EffectDuplicate]; ok && a.Unchecked == "" {
			row.Sinks = true
		}
		if a, ok := r.Anomalies[guarantee.OutboxLost]; ok && a.Unchecked == "" {
			row.Outbox = true
		}
		other := FamilyCount{}
		for name, a := range r.Anomalies {
			if !slices.Contains(shownFamilies, name) {
				other.Total += a.Count
				other.Forbidden += a.ForbiddenCount()
			}
		}
		row.Other.Checked++
		row.Other.Total += other.Total
		row.Other.Forbidden += other.Forbidden
		if other.Total > 0 {
			row.Other.Runs++
		}
		if a, fromOps, ok := availability(r); ok {
			avail[i] = append(avail[i], a)
			row.FromOps = row.FromOps || fromOps
		}
		if t, ok := throughput(r); ok {
			rate[i] = append(rate[i], t)
		}
		row.P99 = math.Max(row.P99, r.Stats.LatencyMs.P99)
		if c.Report != "" {
			row.Reports = append(row.Reports, c.Report)
		}
	}
	for i, as := range avail {
		rows[i].Availability = mean(as)
	}
	for i, ts := range rate {
		rows[i].Throughput = mean(ts)
	}
	return rows
}

func mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// throughput is the run's acknowledged writes (sends, transactions, read-process-write steps)
// per second of its length.
func throughput(r *results.Results) (float64, bool) {
	if r.Timings.RunS <= 0 {
		return 0, false
	}
	var ok int64
	for _, f := range []string{"send", "txn", "rpw"} {
		ok += r.Stats.Ops[f].OK
	}
	return float64(ok) / r.Timings.RunS, true
}

func axesKey(axes []Axis) string {
	var b strings.Builder
	for _, a := range axes {
		b.WriteString(a.Name)
		b.WriteByte(0)
		b.WriteString(a.Value)
		b.WriteByte(0)
	}
	return b.String()
}

func addFamily(f *FamilyCount, a results.Anomaly) {
	if a.Unchecked == "" {
		f.Checked++
	}
	f.Total += a.Count
	f.Forbidden += a.ForbiddenCount()
	if a.Count > 0 {
		f.Runs++
	}
}

// availability is the share of the run during which writes succeeded, in %: from the time
// writes failed (stats.unavailable_ms) over the run's length (timings.run_s); lacking the
// length, the share of writes that succeeded (fromOps).
func availability(r *results.Results) (pct float64, fromOps, ok bool) {
	if r.Timings.RunS > 0 {
		a := 100 * (1 - r.Stats.UnavailableMs/(r.Timings.RunS*1000))
		return math.Min(100, math.Max(0, a)), false, true
	}
	var okN, all int64
	for _, f := range []string{"send", "txn", "rpw"} {
		o := r.Stats.Ops[f]
		okN += o.OK
		all += o.OK + o.Fail + o.Info
	}
	if all == 0 {
		return 0, false, false
	}
	return 100 * float64(okN) / float64(all), true, true
}

// clientAxis is the client's column: the matrix's axis of that name, or the client the results
// name.
const clientAxis = "client"

// axisNames are the axes of all rows, in order of first appearance.
func axisNames(rows []Row) []string {
	var names []string
	for _, r := range rows {
		for _, a := range r.Axes {
			if !slices.Contains(names, a.Name) {
				names = append(names, a.Name)
			}
		}
	}
	return names
}

// AxisValue is the value of axis name among axes ("" when it is not one of them).
func AxisValue(axes []Axis, name string) string {
	for _, a := range axes {
		if a.Name == name {
			return a.Value
		}
	}
	return ""
}

// String writes a family's count for a table: "0", "3 (permitted)", "5 in 2/3 runs (4 forbidden)".
func (f FamilyCount) String(runs int) string {
	if f.Total == 0 && f.Checked == 0 {
		return "n/a" // no run of the row could show it (a sink family where the run had none)
	}
	if f.Total == 0 {
		return "0"
	}
	s := strconv.Itoa(f.Total)
	if runs > 1 {
		s += fmt.Sprintf(" in %d/%d runs", f.Runs, runs)
	}
	switch {
	case f.Forbidden == f.Total:
		s += " (forbidden)"
	case f.Forbidden > 0:
		s += fmt.Sprintf(" (%d forbidden)", f.Forbidden)
	default:
		s += " (permitted)"
	}
	return s
}

func (r Row) availabilityText() string {
	if r.Availability < 0 {
		return "n/a"
	}
	s := strconv.FormatFloat(r.Availability, 'f', 1, 64) + " %"
	if r.FromOps {
		s += "*"
	}
	return s
}

func (r Row) throughputText() string {
	if r.Throughput < 0 {
		return "n/a"
	}
	return strconv.FormatFloat(r.Throughput, 'f', 0, 64)
}

func (r Row) p99Text() string {
	if r.P99 == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(r.P99, 'f', 1, 64) + " ms"
}

// shownFamilies have columns of their own; "other anomalies" sums the rest.
var shownFamilies = []guarantee.Anomaly{guarantee.LostWrite, guarantee.Duplicate, guarantee.Reorder,
	guarantee.EffectDuplicate, guarantee.EffectMissing, guarantee.OutboxLost, guarantee.OutboxDuplicate}

// shown says which optional columns a table has: the sinks' when a row had a sink, the
// outbox's when a row had an outbox, the recovery's when a row was judged for liveness.
type shown struct{ sinks, outbox, liveness bool }

func shownIn(rows []Row) shown {
	return shown{sinks: slices.ContainsFunc(rows, func(r Row) bool { return r.Sinks }),
		outbox:   slices.ContainsFunc(rows, func(r Row) bool { return r.Outbox }),
		liveness: slices.ContainsFunc(rows, func(r Row) bool { return r.Liveness })}
}

// tableColumns are the columns after the axes.
func tableColumns(sh shown) []string {
	cols := []string{"runs", "lost", "duplicate", "reordered"}
	if sh.sinks {
		cols = append(cols, "effect duplicate", "effect missing")
	}
	if sh.outbox {
		cols = append(cols, "outbox lost", "outbox duplicate")
	}
	cols = append(cols, "other anomalies", "write availability", "acked writes/s", "p99 latency")
	if sh.liveness {
		cols = append(cols, "recovered in")
	}
	return append(cols, "verdict")
}

func (r Row) cells(sh shown) []string {
	cs := []string{strconv.Itoa(r.Runs), r.Lost.String(r.Runs), r.Duplicate.String(r.Runs), r.Reordered.String(r.Runs)}
	if sh.sinks {
		cs = append(cs, r.EffectDuplicate.String(r.Runs), r.EffectMissing.String(r.Runs))
	}
	if sh.outbox {
		cs = append(cs, r.OutboxLost.String(r.Runs), r.OutboxDuplicate.String(r.Runs))
	}
	cs = append(cs, r.Other.String(r.Runs), r.availabilityText(), r.throughputText(), r.p99Text())
	if sh.liveness {
		cs = append(cs, RecoveryText(r.Recoveries))
	}
	return append(cs, r.Verdict())
}

// CompareMarkdown is the comparison table of cells in markdown, for a terminal or a PR.
func CompareMarkdown(cells []Cell) string {
	rows := Compare(cells)
	names := axisNames(rows)
	sh := shownIn(rows)
	header := append(slices.Clone(names), tableColumns(sh)...)
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(header)) + "\n")
	fromOps := false
	for _, r := range rows {
		var cs []string
		for _, n := range names {
			cs = append(cs, mdEscape(AxisValue(r.Axes, n)))
		}
		for _, c := range r.cells(sh) {
			cs = append(cs, mdEscape(c))
		}
		b.WriteString("| " + strings.Join(cs, " | ") + " |\n")
		fromOps = fromOps || r.FromOps
	}
	if fromOps {
		b.WriteString("\n\\* share of writes that succeeded (the run's length was not recorded)\n")
	}
	return b.String()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

const compareTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;font-size:14px}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left}
th{background:#f0f0f0}.pass{background:#e3f4e1}.fail{background:#fbe0e0}.unknown{background:#fff2cc}
td.num{text-align:right}.note{color:#555;font-size:13px}
</style></head><body>
<h1>{{.Title}}</h1>
<table id="comparison"><thead><tr>{{range .Axes}}<th>{{.}}</th>{{end}}{{range .Columns}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr class="{{.Class}}">{{range .Axes}}<td>{{.}}</td>{{end}}{{range .Cells}}<td>{{.}}</td>{{end}}<td>{{range $i, $r := .Reports}}{{if $i}}, {{end}}<a href="{{$r}}">run {{inc $i}}</a>{{end}}</td></tr>
{{end}}</tbody></table>
{{if .FromOps}}<p class="note">* share of writes that succeeded (the run's length was not recorded)</p>{{end}}
<p class="note">lost = lost-write, reordered = reorder; counts are totals over a row's runs. Write availability is the share of the run during which writes succeeded (mean over runs); acked writes/s is the mean rate of acknowledged writes; p99 latency is the worst run's. Recovered in: from a fault's injection until every client it touched progressed again, the worst fault of each run, over the runs that had one.</p>
</body></html>
`

type compareRow struct {
	Class   string
	Axes    []string
	Cells   []string
	Reports []string
}

// CompareHTML is the comparison table of cells as one self-contained HTML page. Links to the
// cells' reports are relative paths, never external URLs.
func CompareHTML(title string, cells []Cell) (string, error) {
	rows := Compare(cells)
	names := axisNames(rows)
	sh := shownIn(rows)
	data := struct {
		Title   string
		Axes    []string
		Columns []string
		Rows    []compareRow
		FromOps bool
	}{Title: title, Axes: names, Columns: append(tableColumns(sh), "reports")}
	for _, r := range rows {
		cr := compareRow{Class: string(r.Worst()), Cells: r.cells(sh), Reports: r.Reports}
		for _, n := range names {
			cr.Axes = append(cr.Axes, AxisValue(r.Axes, n))
		}
		data.Rows = append(data.Rows, cr)
		data.FromOps = data.FromOps || r.FromOps
	}
	t, err := template.New("compare").Funcs(template.FuncMap{"inc": func(i int) int { return i + 1 }}).Parse(compareTemplate)
	if err != nil {
		return "", fmt.Errorf("comparison template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("rendering the comparison table: %w", err)
	}
	return b.String(), nil
}
