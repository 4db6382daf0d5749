package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// IndexFile is the name of the index WriteIndex writes.
const IndexFile = "index.html"

// IndexRun is one run folder as the index shows it.
type IndexRun struct {
	Dir      string // relative to the index
	Started  time.Time
	Scenario string
	Seed     int64
	Verdict  results.Verdict
	Client   string
	// Anomalies are the families with findings, "lost-write 12 (12 forbidden)".
	Anomalies []string
	// WallS is the run's cluster start, workloads and check, in seconds.
	WallS float64
	Image string
	// Throughput is acknowledged writes per second of the workloads (-1: not known),
	// UnavailableMs the time writes failed, Lost the lost-write count.
	Throughput    float64
	UnavailableMs float64
	Lost          int
}

// CollectRuns finds every run folder below dir (a folder with results.json beside
// history.jsonl), newest first. A folder whose results cannot be read is skipped with its
// reason in the second result.
func CollectRuns(dir string) ([]IndexRun, []string, error) {
	var runs []IndexRun
	var skipped []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			// One unreadable folder keeps only itself out of the index.
			skipped = append(skipped, fmt.Sprintf("%s: %v", path, err))
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || d.Name() != results.FileName {
			return nil
		}
		runDir := filepath.Dir(path)
		hist := filepath.Join(runDir, "history.jsonl")
		if _, err := os.Stat(hist); err != nil {
			return nil // a results.json alone (verity check --out) is not a run folder
		}
		r, err := results.Read(path)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", runDir, err))
			return nil
		}
		rel, _ := filepath.Rel(dir, runDir)
		runs = append(runs, indexRun(rel, hist, r))
		return nil
	})
	if err != nil {
		return nil, skipped, fmt.Errorf("index: walking %s: %w", dir, err)
	}
	slices.SortStableFunc(runs, func(a, b IndexRun) int {
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return strings.Compare(a.Dir, b.Dir)
	})
	return runs, skipped, nil
}

func indexRun(rel, hist string, r *results.Results) IndexRun {
	ir := IndexRun{Dir: filepath.ToSlash(rel), Scenario: r.Scenario, Seed: r.Seed, Verdict: r.Verdict, Client: ClientText(r),
		WallS: r.Timings.ClusterReadyS + r.Timings.RunS + r.Timings.CheckS, Throughput: -1,
		UnavailableMs: r.Stats.UnavailableMs, Lost: r.Anomalies[guarantee.LostWrite].Count}
	started := ""
	if r.Run != nil {
		started, ir.Image = r.Run.Started, r.Run.KafkaImage
	}
	if started == "" {
		if hr, err := history.Open(hist); err == nil {
			started = hr.Header().Started
			hr.Close()
		}
	}
	ir.Started, _ = time.Parse(time.RFC3339Nano, started)
	// Acknowledged sends per second; n/a (-1) for a run without sends (transactions only).
	if send, ok := r.Stats.Ops["send"]; ok && send != (results.Outcomes{}) && r.Timings.RunS > 0 {
		ir.Throughput = float64(send.OK) / r.Timings.RunS
	}
	for _, a := range Families(r) {
		e := r.Anomalies[a]
		if e.Count == 0 {
			continue
		}
		s := fmt.Sprintf("%s %d", a, e.Count)
		if n := e.ForbiddenCount(); n > 0 {
			s += fmt.Sprintf(" (%d forbidden)", n)
		}
		ir.Anomalies = append(ir.Anomalies, s)
	}
	return ir
}

// scenarioTrend is one scenario's runs, oldest first, drawn small.
type scenarioTrend struct {
	Scenario string
	Client   string
	Runs     int
	Verdicts template.HTML // a row of squares, one a run
	Figures  []trendFigure
}

type trendFigure struct {
	Name  string
	Last  string
	Spark template.HTML
}

// IndexHTML renders the index page over runs (newest first, as CollectRuns gives them).
func IndexHTML(title string, runs []IndexRun, skipped []string) (string, error) {
	// A trend is one scenario under one client: a matrix over clients would otherwise mix
	// them in one line. (Other axes of a matrix are not in results.json; their cells share a
	// trend, and each row below names its folder.)
	byScenario := map[string][]IndexRun{}
	for _, r := range runs {
		key := r.Scenario + " · " + r.Client
		byScenario[key] = append(byScenario[key], r)
	}
	var trends []scenarioTrend
	for _, name := range slices.Sorted(maps.Keys(byScenario)) {
		rs := slices.Clone(byScenario[name])
		slices.Reverse(rs) // oldest first
		tr := scenarioTrend{Scenario: rs[0].Scenario, Client: rs[0].Client, Runs: len(rs), Verdicts: verdictStrip(rs)}
		for _, f := range []struct {
			name, unit string
			get        func(IndexRun) float64
		}{
			{"acked writes/s", "/s", func(r IndexRun) float64 { return r.Throughput }},
			{"writes unavailable", " ms", func(r IndexRun) float64 { return r.UnavailableMs }},
			{"lost-write", "", func(r IndexRun) float64 { return float64(r.Lost) }},
		} {
			vals := make([]float64, len(rs))
			for i, r := range rs {
				vals[i] = f.get(r)
			}
			last := vals[len(vals)-1]
			text := "n/a"
			if last >= 0 {
				text = strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", last), "0"), ".") + f.unit
			}
			tr.Figures = append(tr.Figures, trendFigure{Name: f.name, Last: text, Spark: sparkline(vals)})
		}
		trends = append(trends, tr)
	}
	data := struct {
		Title   string
		Runs    []IndexRun
		Latest  *IndexRun
		Trends  []scenarioTrend
		Skipped []string
	}{Title: title, Runs: runs, Trends: trends, Skipped: skipped}
	if len(runs) > 0 {
		data.Latest = &runs[0]
	}
	// The report's functions, and the index's own: a start time, a wall time, a rate.
	funcs := templateFuncs()
	funcs["when"] = func(t time.Time) string {
		if t.IsZero() {
			return "?"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	}
	funcs["wall"] = func(s float64) string { return (time.Duration(s * float64(time.Second))).Round(time.Second).String() }
	funcs["rate"] = func(v float64) string {
		if v < 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.0f", v)
	}
	t, err := template.New("index").Funcs(funcs).Parse(indexTemplate)
	if err != nil {
		return "", fmt.Errorf("index template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("rendering the index: %w", err)
	}
	return b.String(), nil
}

// WriteIndex writes dir/index.html over every run folder below dir, and returns its path and
// the runs it lists.
func WriteIndex(dir string) (string, []IndexRun, []string, error) {
	runs, skipped, err := CollectRuns(dir)
	if err != nil {
		return "", nil, skipped, err
	}
	page, err := IndexHTML("Verity runs under "+filepath.Base(filepath.Clean(dir)), runs, skipped)
	if err != nil {
		return "", nil, skipped, err
	}
	path, err := writeFile(dir, IndexFile, []byte(page))
	if err != nil {
		return "", nil, skipped, fmt.Errorf("index: %w", err)
	}
	return path, runs, skipped, nil
}

// verdictStrip is a row of squares, one a run, coloured by verdict, oldest on the left.
func verdictStrip(rs []IndexRun) template.HTML {
	var b strings.Builder
	const size, gap = 10, 2
	fmt.Fprintf(&b, `<svg class="strip" width="%d" height="%d" role="img" aria-label="verdicts, oldest first">`, len(rs)*(size+gap), size)
	for i, r := range rs {
		fmt.Fprintf(&b, `<rect x="%d" y="0" width="%d" height="%d" class="v-%s"><title>%s seed %d: %s</title></rect>`,
			i*(size+gap), size, size, r.Verdict, template.HTMLEscapeString(r.Dir), r.Seed, r.Verdict)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// sparkline draws vals (oldest first; negative: not known, left as a gap) as a small line.
func sparkline(vals []float64) template.HTML {
	const w, h, pad = 120.0, 24.0, 2.0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if v >= 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" width="%.0f" height="%.0f" role="img">`, w, h)
	if math.IsInf(lo, 1) {
		b.WriteString(`</svg>`)
		return template.HTML(b.String())
	}
	span := cmp.Or(hi-lo, 1)
	x := func(i int) float64 {
		if len(vals) == 1 {
			return w / 2
		}
		return pad + float64(i)*(w-2*pad)/float64(len(vals)-1)
	}
	y := func(v float64) float64 { return h - pad - (v-lo)/span*(h-2*pad) }
	var path strings.Builder
	pen := false
	for i, v := range vals {
		if v < 0 {
			pen = false
			continue
		}
		op := "L"
		if !pen {
			op = "M"
		}
		fmt.Fprintf(&path, "%s%.1f %.1f ", op, x(i), y(v))
		pen = true
	}
	fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="#1f5fa8" stroke-width="1.5"/>`, strings.TrimSpace(path.String()))
	for i, v := range vals {
		if v >= 0 {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="1.8" fill="#1f5fa8"><title>%g</title></circle>`, x(i), y(v), v)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// indexTemplate is index.html: inline styles and SVG only, so that it opens anywhere offline.
const indexTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;max-width:1200px;padding:1em 1.5em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.4em 0}th,td{border:1px solid #d0d0d0;padding:3px 7px;text-align:left;vertical-align:middle}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.pass{background:#e3f4e1}td.fail{background:#fbe0e0}td.unknown{background:#fff2cc}
.v-pass{fill:#3c9a3c}.v-fail{fill:#c62828}.v-unknown{fill:#c99a00}
.note{color:#555;font-size:13px}
</style></head><body>
<h1>{{.Title}}</h1>
{{with .Latest}}<p id="latest">Latest: <a href="{{.Dir}}/report.html">{{.Scenario}} seed {{.Seed}}</a> — <b>{{.Verdict}}</b>, {{when .Started}}</p>{{else}}<p>No run folders found.</p>{{end}}
{{if .Trends}}<h2>By scenario</h2>
<table id="trends"><tr><th>scenario</th><th>client</th><th>runs</th><th>verdicts (oldest → newest)</th>{{range (index .Trends 0).Figures}}<th>{{.Name}} (latest)</th>{{end}}</tr>
{{range .Trends}}<tr><td>{{.Scenario}}</td><td>{{.Client}}</td><td class="num">{{.Runs}}</td><td>{{.Verdicts}}</td>{{range .Figures}}<td>{{.Spark}} {{.Last}}</td>{{end}}</tr>
{{end}}</table>{{end}}
<h2>Runs, newest first</h2>
<table id="runs"><tr><th>started</th><th>scenario</th><th>seed</th><th>verdict</th><th>anomalies</th><th>client</th><th>acked writes/s</th><th>writes unavailable</th><th>wall time</th><th>Kafka image</th></tr>
{{range .Runs}}<tr><td>{{when .Started}}</td><td><a href="{{.Dir}}/report.html">{{.Scenario}}</a> <span class="note">{{.Dir}}</span></td><td class="num">{{.Seed}}</td><td class="{{.Verdict}}">{{.Verdict}}</td><td>{{if .Anomalies}}{{join .Anomalies ", "}}{{else}}none{{end}}</td><td>{{.Client}}</td><td class="num">{{rate .Throughput}}</td><td class="num">{{ms .UnavailableMs}}</td><td class="num">{{wall .WallS}}</td><td>{{if .Image}}{{.Image}}{{else}}not recorded{{end}}</td></tr>
{{end}}</table>
{{if .Skipped}}<p class="note">Skipped (results unreadable):</p><ul>{{range .Skipped}}<li class="note">{{.}}</li>{{end}}</ul>{{end}}
<p class="note">Written by verity index. Each run's report, history and results are in its folder.</p>
</body></html>
`
