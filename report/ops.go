package report

import (
	"bytes"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// OpsFile is the page of the ops around each anomaly example, which report.html links every
// example's op indices to.
const OpsFile = "ops.html"

// Around each op that proves an example the page shows the ops from opsBefore below it to
// opsAfter above it, at most maxOpsShown a section (the proving ops always), for at most
// maxOpExamples examples over all families.
const (
	opsBefore     = 12
	opsAfter      = 12
	maxOpsShown   = 400
	maxOpExamples = 40
)

// exampleAnchor is the id of an example's section in ops.html: "lost-write-0".
func exampleAnchor(a guarantee.Anomaly, k int) string { return string(a) + "-" + strconv.Itoa(k) }

// opWindow is one example's section: the ops around each op that proves it.
type opWindow struct {
	ID, Title, Note string
	proof           []int64
	ops             []shownOp
}

// holds reports whether op index i is within the dozen ops around one of the proving ops.
func (w *opWindow) holds(i int64) bool {
	for _, p := range w.proof {
		if i >= p-opsBefore && i <= p+opsAfter {
			return true
		}
	}
	return false
}

// shownOp is one event as the page shows it.
type shownOp struct {
	Index   int64
	T       string
	Process string
	Type    string
	What    string
	Proof   bool
	Nemesis bool
}

// opWindows are the sections ops.html has for r's examples, worst families first.
func opWindows(r *results.Results) []*opWindow {
	var ws []*opWindow
	for _, name := range Families(r) {
		for k, e := range r.Anomalies[name].Examples {
			if len(ws) == maxOpExamples || k == maxExamplesShown {
				break
			}
			if len(e.Ops) == 0 {
				continue // nothing to show around; the next example keeps its own anchor
			}
			ws = append(ws, &opWindow{ID: exampleAnchor(name, k), Title: fmt.Sprintf("%s, example %d", name, k+1),
				Note: e.Note, proof: slices.Clone(e.Ops)})
		}
	}
	return ws
}

// take keeps op in every window whose range holds it, up to maxOpsShown a window; the ops that
// prove the example are always kept.
func take(ws []*opWindow, op *history.Op) {
	for _, w := range ws {
		if !w.holds(op.Index) {
			continue
		}
		proof := slices.Contains(w.proof, op.Index)
		if len(w.ops) >= maxOpsShown && !proof {
			continue
		}
		w.ops = append(w.ops, shownOp{Index: op.Index, T: fmt.Sprintf("%.3f", float64(op.Time)/1e9), Process: op.Process.String(),
			Type: string(op.Type), What: opText(op), Proof: proof, Nemesis: op.Process.Nemesis})
	}
}

// opText says in a few words what an op did.
func opText(op *history.Op) string {
	v := op.Value
	var s string
	switch {
	case v.Send != nil:
		s = "send " + recordText(*v.Send)
	case v.Txn != nil:
		s = fmt.Sprintf("txn %s (%s): %s", v.Txn.TxnID, v.Txn.Intent, recordsText(v.Txn.Records))
	case v.Poll != nil:
		s = fmt.Sprintf("poll (%s): %s", v.Poll.Isolation, recordsText(v.Poll.Records))
	case v.FinalRead != nil:
		fr := v.FinalRead
		s = fmt.Sprintf("final-read %s (%s) [%d, %d): %s", history.PartitionName(fr.Topic, fr.Partition), fr.Isolation, fr.From, fr.End, recordsText(fr.Records))
	case v.RPW != nil:
		s = fmt.Sprintf("rpw %s: in %s; out %s", v.RPW.TxnID, recordsText(v.RPW.Input), recordsText(v.RPW.Output))
	default:
		s = op.F
		if raw := strings.TrimSpace(string(v.Raw)); raw != "" && raw != "null" {
			s += " " + raw
		}
	}
	if op.Error != "" {
		s += " — " + op.Error
	}
	if r := []rune(s); len(r) > 300 {
		s = string(r[:297]) + "…"
	}
	return s
}

func recordText(r history.Record) string {
	s := r.Value + " → " + history.PartitionName(r.Topic, r.Partition)
	if r.Offset != nil {
		s += "@" + strconv.FormatInt(*r.Offset, 10)
	}
	return s
}

// recordsText lists up to 6 records, then how many more.
func recordsText(rs []history.Record) string {
	if len(rs) == 0 {
		return "no records"
	}
	parts := make([]string, 0, 7)
	for i, r := range rs {
		if i == 6 {
			parts = append(parts, fmt.Sprintf("and %d more", len(rs)-i))
			break
		}
		parts = append(parts, recordText(r))
	}
	return strings.Join(parts, ", ")
}

// renderOps renders ops.html from the windows the history's pass filled (take).
func renderOps(r *results.Results, ws []*opWindow) ([]byte, error) {
	t, err := template.New("ops").Parse(opsTemplate)
	if err != nil {
		return nil, fmt.Errorf("ops template: %w", err)
	}
	var b bytes.Buffer
	data := struct {
		Scenario string
		Seed     int64
		Windows  []*opWindow
		Max      int
	}{r.Scenario, r.Seed, ws, maxOpsShown}
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", OpsFile, err)
	}
	return b.Bytes(), nil
}

// Ops returns a window's ops for the template.
func (w *opWindow) Ops() []shownOp { return w.ops }

const opsTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Verity: ops around the anomalies of {{.Scenario}} (seed {{.Seed}})</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;max-width:1200px;padding:1em 1.5em;color:#222}
table{border-collapse:collapse;font-size:12px;margin:.4em 0 1.6em}th,td{border:1px solid #d0d0d0;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.proof td{background:#fde7a9;font-weight:600}tr.nemesis td{background:#e8eefb}
td.fail{color:#c62828}td.info{color:#9a6b00}td.ok{color:#2e7d32}
code{font-family:ui-monospace,Menlo,Consolas,monospace}
</style></head><body>
<h1>Ops around each anomaly: {{.Scenario}}, seed {{.Seed}}</h1>
<p>For each example of report.html, the history's events around each op that proves it (a dozen before and after), in
history order (at most {{.Max}} a section; the ops that prove it always). Highlighted: the ops that prove it; blue: the
nemesis (faults, ISR samples). <a href="report.html">Back to the report</a>.</p>
{{range .Windows}}<section id="{{.ID}}"><h2>{{.Title}}</h2><p>{{.Note}}</p>
<table><tr><th>i</th><th>t (s)</th><th>process</th><th>type</th><th>what</th></tr>
{{range .Ops}}<tr class="{{if .Proof}}proof{{else if .Nemesis}}nemesis{{end}}"><td class="num">{{.Index}}</td><td class="num">{{.T}}</td><td>{{.Process}}</td><td class="{{.Type}}">{{.Type}}</td><td><code>{{.What}}</code></td></tr>
{{end}}</table></section>
{{end}}
</body></html>
`
