package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// pageTemplate is report.html. Everything is inline — styles here, plots as data: URIs — so the
// page is one file that opens anywhere without the network. Section ids are stable (tests and
// links use them): verdict, summary, throughput, latency, faults, partitions, anomalies, config.
const pageTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Verity: {{.Name}} — {{.Outcome}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;max-width:1100px;padding:1em 1.5em;color:#222;line-height:1.4}
h1{margin:.2em 0}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:13px;margin:.4em 0}th,td{border:1px solid #d0d0d0;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}
#verdict{border-radius:8px;padding:.8em 1.2em;margin:.6em 0;display:flex;gap:2.5em;align-items:center;flex-wrap:wrap}
#verdict .big{font-size:2.2em;font-weight:700;text-transform:uppercase;letter-spacing:.05em}
#verdict .seed{font-size:1.5em;font-weight:600}
.pass{background:#e3f4e1;border:2px solid #3c9a3c}.fail{background:#fbe0e0;border:2px solid #c62828}.unknown{background:#fff2cc;border:2px solid #c99a00}
tr.forbidden td,td.forbidden{background:#fbe0e0}tr.permitted td,td.permitted{background:#f3f8ee}tr.notjudged td,td.notjudged{background:#fff8e1}tr.unchecked td,td.unchecked{background:#f2f2f2}
img.plot{width:100%;height:auto;border:1px solid #eee}
.swatch{display:inline-block;width:.9em;height:.9em;border-radius:2px;margin:0 .3em 0 .8em;vertical-align:-.1em}
.note{color:#555;font-size:13px}code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
pre{background:#f7f7f7;padding:.6em;overflow:auto;max-height:30em}ul.ex{margin:0;padding-left:1.1em}
</style></head><body>
<h1>Verity report: {{.Name}}</h1>
<div id="verdict" class="{{.Verdict}}">
<div><div class="note">verdict</div><div class="big" id="verdict-value">{{.Outcome}}</div>{{range .Breaches}}<div class="note breach">{{.}}</div>{{end}}</div>
<div><div class="note">seed</div><div class="seed" id="seed">{{if or .Rerun .Seed}}{{.Seed}}{{else}}none{{end}}</div></div>
<div><div class="note">scenario</div><div class="seed" id="scenario">{{if .Scenario}}{{.Scenario}}{{else}}none: not written by a Verity run{{end}}</div></div>
<div><div class="note">client</div><div class="seed" id="client">{{.Client}}</div></div>
<div><div class="note">kafka</div><div class="seed" id="kafka">{{.Kafka}}</div></div>
<div class="note">{{.ForbiddenText}}<br>{{if .Rerun}}rerun: <code id="rerun">{{.Rerun}}</code>{{else}}no run to repeat; judged from the history alone: <code id="judged-by">{{.JudgedBy}}</code>{{end}}</div>
</div>
{{if .Files}}<p class="note" id="files">Files of the run: {{range $i, $f := .Files}}{{if $i}} · {{end}}<a href="{{$f}}">{{$f}}</a>{{end}}</p>{{end}}
{{if .Expectation}}<p id="expectation"><b>Expected:</b> {{.Expectation}}</p>{{end}}
{{if .UnknownReasons}}<p><b>Why the verdict is unknown</b>{{if .UnknownCauses}} <span id="unknown-causes">({{range $i, $c := .UnknownCauses}}{{if $i}}, {{end}}{{$c}}{{end}})</span>{{end}}<b>:</b></p><ul>{{range .UnknownReasons}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{range .Warnings}}<p class="note"><b>Note:</b> {{.}}</p>{{end}}
{{if .EvidenceFirst}}{{template "anomalies" .}}{{end}}

<section id="summary"><h2>Summary</h2>
<table><tr><th>history</th><td>{{.History}}</td></tr>
<tr><th>events</th><td class="num">{{.Ops}}</td></tr>
<tr><th>run length (history)</th><td class="num">{{.Length}}</td></tr>
<tr><th>faults</th><td>{{if .FaultKinds}}{{join .FaultKinds ", "}}{{else}}none{{end}}</td></tr>
<tr><th>write latency</th><td class="num">p50 {{ms .Stats.LatencyMs.P50}}, p99 {{ms .Stats.LatencyMs.P99}}{{if .Stats.LatencyMs.P999}}, p99.9 {{ms .Stats.LatencyMs.P999}}{{end}}{{if .Stats.LatencyMs.Max}}, max {{ms .Stats.LatencyMs.Max}}{{end}}</td></tr>
<tr><th>unknown sends</th><td class="num">{{.Stats.UnknownSends}} ({{.Stats.UnknownLaterSeen}} later seen in the log)</td></tr>
<tr><th>writes unavailable</th><td class="num">{{ms .Stats.UnavailableMs}} (writes failed or went unanswered)</td></tr>
{{with .Stats.Stalls}}{{with index . 0}}<tr><th>longest stall</th><td class="num">{{ms (sub .EndMs .StartMs)}} on {{.Topic}}-{{.Partition}}, from {{secs1000 .StartMs}} s to {{secs1000 .EndMs}} s (a write pending, none acknowledged)</td></tr>{{end}}{{end}}
<tr><th>timings</th><td class="num">cluster ready {{secs .Timings.ClusterReadyS}}, run {{secs .Timings.RunS}}, check {{secs .Timings.CheckS}}</td></tr>
</table>
<table><tr><th>op</th><th>ok</th><th>fail</th><th>info</th><th>pending</th></tr>
{{range .OpRows}}<tr><td>{{.Name}}</td><td class="num">{{.O.OK}}</td><td class="num">{{.O.Fail}}</td><td class="num">{{.O.Info}}</td><td class="num">{{.O.Pending}}</td></tr>{{end}}
</table>
{{if .Stats.Errors}}<table id="errors"><tr><th>op</th><th>outcome</th><th>error</th><th>count</th><th>first (s)</th><th>last (s)</th><th>by partition</th></tr>
{{range .Stats.Errors}}<tr><td>{{.F}}</td><td>{{.Outcome}}</td><td>{{.Error}}</td><td class="num">{{.Count}}</td><td class="num">{{printf "%.1f" .FirstS}}</td><td class="num">{{printf "%.1f" .LastS}}</td><td>{{byPartition .ByPartition}}</td></tr>{{end}}
</table><p class="note">Failed (fail) and unknown (info) completions by the error they carried: Kafka's name of a broker error, else the kind of client-side failure.</p>{{end}}
{{if .Stats.Resumes}}<table id="resumes"><tr><th>reader</th><th>after</th><th>at committed</th><th>rewound further</th><th>skipped ahead</th><th>unclassified</th><th>superseded</th></tr>
{{range .Stats.Resumes}}<tr><td>{{.Reader}}</td><td>{{.Cause}}</td><td class="num">{{.AtCommitted}}</td><td class="num">{{.RewoundFurther}}</td><td class="num">{{.SkippedAhead}}</td><td class="num">{{.Unclassified}}</td><td class="num">{{.Superseded}}</td></tr>{{end}}
</table><p class="note">Where group members began their partitions after an op that reset their positions, against the offsets their group may have committed (<code>resume-rewound-further</code>, <code>resume-skipped-ahead</code> in docs/guarantees.md).</p>{{end}}
{{if .Windows}}<details id="windows"{{if le (len .Windows) 10}} open{{end}}><summary>Windows during which writes failed{{if .WindowsCut}} (first {{len .Windows}} of {{.WindowsCut}}){{else}} ({{len .Windows}}){{end}}</summary>
<table><tr><th>partition</th><th>from (s)</th><th>to (s)</th><th>failed writes</th></tr>
{{range .Windows}}<tr><td>{{.Topic}}-{{.Partition}}</td><td class="num">{{secs1000 .StartMs}}</td><td class="num">{{secs1000 .EndMs}}</td><td class="num">{{.Failed}}</td></tr>{{end}}</table></details>{{end}}
</section>

<section id="throughput"><h2>Throughput</h2>
{{if .FaultLegend}}<p class="note">Shaded: fault intervals (injection to heal).{{range .FaultLegend}}<span class="swatch" style="background: {{.Color}}"></span>{{.Name}}{{end}}</p>{{end}}
{{if .Throughput}}<img class="plot" alt="throughput over time" src="{{.Throughput}}">{{else}}<p class="note">No client operations in the history.</p>{{end}}
{{if .Errors}}<img class="plot" alt="failed and unknown writes by error over time" src="{{.Errors}}"><p class="note">Per {{.Bucket}}: the writes that failed or went unanswered, by the error they carried (the summary's table, over time); the legend gives each class's total.</p>{{end}}
</section>
<section id="latency"><h2>Latency</h2>
{{if .Latency}}<img class="plot" alt="latency over time" src="{{.Latency}}"><p class="note">Per {{.Bucket}}: p50 and p99 of acknowledged writes from a log histogram (within 4 %), and the largest; lines break where nothing was acknowledged. Marks: the longest wait of a write that failed (×) or went unanswered (▲) in that second, from its invoke to its completion.</p>{{else}}<p class="note">No acknowledged writes.</p>{{end}}
</section>

<section id="faults"><h2>Faults</h2>
{{if .Faults}}<table><tr><th>#</th><th>fault</th><th>nodes</th><th>links</th><th>role</th><th>start (s)</th><th>in place (s)</th><th>end (s)</th><th>ended by</th><th>op i (inject, heal)</th></tr>
{{range $i, $f := .Faults}}<tr><td class="num">{{inc $i}}</td><td>{{$f.Label}}{{if $f.Uncertain}} (uncertain){{end}}</td><td>{{ints $f.Nodes}}</td><td>{{links $f.Links}}</td><td>{{$f.Role}}</td>
<td class="num">{{ns $f.Start}}</td><td class="num">{{if ge $f.InPlace 0}}{{ns $f.InPlace}}{{end}}</td><td class="num">{{ns $f.End}}</td><td>{{$f.HealedBy}}</td><td class="num">{{$f.Invoke}}{{if ge $f.Heal 0}}, {{$f.Heal}}{{end}}</td></tr>
{{end}}</table>{{else}}<p class="note">No nemesis events in the history.</p>{{end}}
{{range .Markers}}<p class="note">{{.Label}} at {{ns .T}} s (op {{.Index}})</p>{{end}}
</section>

<section id="partitions"><h2>Leaders and ISR</h2>
{{if .Partitions}}<p class="note">Thin bars: replicas in the ISR; thick bars: the leader; red: ISR below min.insync.replicas; other shading: faults. From the run's ISR samples (f "isr").</p>
<table><tr><th>partition</th><th>observations kept</th><th>leader changes</th><th>smallest ISR</th><th>time below min ISR (s)</th></tr>
{{range .Partitions}}<tr><td>{{.Name}}</td><td class="num">{{.States}}</td><td class="num">{{.LeaderChanges}}</td><td class="num">{{.SmallestISR}}</td><td class="num">{{printf "%.1f" .BelowMin}}</td></tr>{{end}}</table>
{{range .Partitions}}{{if .Plot}}<img class="plot" alt="leader and ISR of {{.Name}}" src="{{.Plot}}">{{end}}{{end}}
{{if .PartitionsOmitted}}<p class="note">Plots of {{.PartitionsOmitted}} more partitions are left out (see the table).</p>{{end}}
{{else}}<p class="note">The history has no ISR observations (f "isr").</p>{{end}}
{{range .TimelineNotes}}<p class="note">{{.}}</p>{{end}}
</section>

<section id="broker-metrics"><h2>Broker metrics</h2>
{{with .Metrics}}{{with .Summary}}<p class="note">{{.Samples}} samples of every node each {{.IntervalMS}} ms ({{.Unanswered}} unanswered: the node was stopped, paused or cut off), read through the {{.Source}}; file <a href="{{.File}}">{{.File}}</a>.</p>
<p id="alerts">Alerts checked against the ISR watch: {{.Alerts.Checked}} stretches in which a partition's leader answered while the watch saw its ISR below min ISR or short of its replicas; the leader's gauge rose in {{.Alerts.Fired}}{{if .Alerts.Unsampled}}; {{.Alerts.Unsampled}} more could not be judged (the leader did not answer){{end}}.</p>{{end}}
{{if .Findings}}<table id="alert-findings"><tr><th>alert that would not have fired</th><th>ops (isr observations)</th></tr>
{{range .Findings}}<tr class="forbidden"><td>{{.Text}}</td><td>{{if .Href}}<a href="{{.Href}}">{{ints64 .Ops}}</a>{{else}}{{ints64 .Ops}}{{end}}</td></tr>{{end}}</table>{{end}}
{{range .Plots}}<img class="plot" alt="{{.Name}} per node" src="{{.SVG}}"><p class="note">{{.Name}}: {{.About}}.</p>{{end}}
{{else}}<p class="note">No broker metrics were sampled in this run{{if $.MetricsWhy}}: {{$.MetricsWhy}}{{end}}.</p>{{end}}
</section>

{{if not .EvidenceFirst}}{{template "anomalies" .}}{{end}}

{{with .Liveness}}<section id="liveness"><h2>Liveness</h2>
{{if not .Judged}}<p class="note" id="liveness-verdict">Liveness: not judged (the results were written before Verity judged progress).</p>{{else}}
<table><tr><th>liveness verdict</th><td class="{{.Class}}" id="liveness-verdict">{{.Verdict}}</td></tr>
<tr><th>stated bounds</th><td id="liveness-bounds">{{if .Bounds}}{{join .Bounds ", "}}{{else}}none stated (the verdict judges nothing; the findings below are for reading){{end}}</td></tr>
<tr><th>fixed bounds</th><td>stuck after {{.StuckAfter}} without progress after the last heal; stalls shorter than {{.MinStall}} not counted</td></tr>
<tr><th>judged until</th><td>{{.Horizon}} (the end of the workload phase){{if .LastHeal}}; last heal at {{.LastHeal}}{{end}}{{if .Gated}}; stuck time counts only while the ISR watch showed the partition able to serve{{end}}</td></tr>
</table>
{{if .Reasons}}<ul id="liveness-reasons">{{range .Reasons}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Findings}}<table id="liveness-findings"><tr><th>finding</th><th>count</th><th>evidence (op indices "i" in the history)</th></tr>
{{range .Findings}}<tr class="{{.Class}}" id="liveness-{{.Name}}"><td>{{.Name}}</td><td class="num">{{.Count}}</td>
<td><ul class="ex">{{range .Examples}}<li>{{if .Href}}<a href="{{.Href}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}</li>{{end}}</ul>{{if .More}}<span class="note">and {{.More}} more</span>{{end}}</td></tr>
{{end}}</table>{{end}}
<p class="note">None found: {{if .NoneFound}}{{join .NoneFound ", "}}{{else}}—{{end}}.</p>
{{if .Recovery}}<h3>Recovery per fault</h3><table id="recovery"><tr><th>fault</th><th>injected</th><th>healed</th><th>worst</th>{{range .RecoveryClients}}<th>{{.}}</th>{{end}}<th>partitions</th></tr>
{{range .Recovery}}<tr><td>{{.Label}}</td><td class="num">{{.Injected}}</td><td class="num">{{.Healed}}</td><td class="num">{{.Worst}}</td>{{range .Cells}}<td class="num">{{.}}</td>{{end}}<td>{{.Partitions}}</td></tr>
{{end}}</table><p class="note">Per client: from the injection / from the heal, until the client progressed again on every partition it stalled on across the fault; empty where the fault touched no partition of the client; partitions: each one a client stalled on across the fault, with the worst recovery there; "not recovered" when a stall was still open when the workload ended (the time is then the least it could be).</p>{{end}}
{{if .Unseen}}<img class="plot" id="plot-unseen" alt="acknowledged offsets unseen per partition" src="{{.Unseen}}"><p class="note">Per {{.Bucket}} and partition: the largest count of acknowledged offsets no reader had reached yet.</p>{{end}}
{{if .Lag}}<img class="plot" id="plot-lag" alt="lag per reader" src="{{.Lag}}"><p class="note">Per {{.Bucket}} and reader: the largest count of offsets available to it that it had not read.</p>{{end}}
{{if .Progress}}<img class="plot" id="plot-progress" alt="progress per client" src="{{.Progress}}"><p class="note">A row per client: a tick per {{.Bucket}} with progress, its height the bucket's count against the row's largest; red bars its stalls, dark red the part stuck after the last heal.{{if .ProgressOmission}} {{.ProgressOmission}} more clients are left out.{{end}}</p>{{end}}
{{range .SeriesOmitted}}<p class="note">Left out of the plots: {{.}}.</p>{{end}}
{{end}}</section>{{end}}

<section id="config"><h2>Configuration</h2>
<h3>Deviations from Kafka 4.3's defaults</h3>
{{if or .Deviations .SettingDeviations}}<ul>{{range .Deviations}}<li><code>{{.}}</code> (broker)</li>{{end}}{{range .SettingDeviations}}<li><code>{{.}}</code></li>{{end}}</ul>{{else}}<p class="note">None.</p>{{end}}
{{if .Assumed}}<h3>Assumed at Kafka's default (the config did not say)</h3><ul>{{range .Assumed}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{if .Overrides}}<h3>Forced from outside the history</h3><ul>{{range .Overrides}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{if .Notes}}<h3>Notes of the check</h3><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<details><summary>The run's configuration (history header)</summary><pre>{{.ConfigJSON}}</pre></details>
</section>
</body></html>
{{define "anomalies"}}<section id="anomalies"><h2>Anomalies</h2>
{{if .Anomalies}}<table><tr><th>anomaly</th><th>count</th><th>judgement</th><th>why</th><th>evidence (op indices "i" in the history)</th></tr>
{{range .Anomalies}}<tr class="{{.Class}}" id="anomaly-{{.Name}}"><td>{{.Name}}</td><td class="num">{{.Count}}</td><td>{{.Judgement}}</td>
<td>{{.Why}}{{range .Known}}<p class="known">{{.}}</p>{{end}}{{if .ByRule}}<ul class="ex">{{range .ByRule}}<li>{{.Count}} {{.Judgement}}: {{.Why}}</li>{{end}}</ul>{{end}}</td>
<td>{{if .Examples}}<ul class="ex">{{range .Examples}}<li>{{if .Href}}<a href="{{.Href}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}{{if .Cycle}}<br>{{.Cycle}}{{end}}</li>{{end}}</ul>{{if .More}}<span class="note">and {{.More}} more</span>{{end}}{{end}}</td></tr>
{{end}}</table>{{end}}
<p class="note">None found: {{if .NoneFound}}{{join .NoneFound ", "}}{{else}}—{{end}}.</p>
</section>{{end}}
`

// pageData is what the template shows.
type pageData struct {
	// Verdict is the safety verdict (the page's colour); Outcome adds a broken stated liveness
	// bound, which Breaches then name.
	Scenario, Verdict, ForbiddenText string
	Outcome                          results.Outcome
	Breaches                         []string
	Liveness                         *livenessView
	// Expectation is what the scenario expected, in words; EvidenceFirst puts the anomalies
	// right under the verdict (a fail or an unknown: the reader came for the evidence).
	Expectation   string
	EvidenceFirst bool
	// Files are the run's files beside the page (history, results, node logs), relative.
	Files                         []string
	Rerun, Client, Kafka          string
	Seed                          int64
	UnknownReasons, Warnings      []string
	UnknownCauses                 []results.UnknownCause
	History, Length, Bucket       string
	Ops                           int64
	FaultKinds                    []string
	Stats                         results.Stats
	Timings                       results.Timings
	OpRows                        []opRow
	Windows                       []results.Window
	WindowsCut                    int
	Throughput, Latency, Errors   template.URL
	FaultLegend                   []legendItem
	Faults                        []FaultInterval
	Markers                       []Marker
	Partitions                    []partitionView
	PartitionsOmitted             int
	TimelineNotes                 []string
	Anomalies                     []anomalyView
	Metrics                       *metricsView
	MetricsWhy                    string
	NoneFound                     []string
	Deviations, SettingDeviations []string
	Assumed, Overrides, Notes     []string
	ConfigJSON                    string
	// Name is what the page is about: the scenario, or the history's file when no Verity run
	// wrote it; JudgedBy then stands for Rerun (Options.Rerun).
	Name, JudgedBy string
}

type opRow struct {
	Name string
	O    results.Outcomes
}

type legendItem struct{ Name, Color string }

type partitionView struct {
	Name                  string
	States, LeaderChanges int
	SmallestISR           int
	BelowMin              float64
	Plot                  template.URL
}

type anomalyView struct {
	Name, Judgement, Class, Why string
	// Known says which known issues explain forbidden findings, and what they are.
	Known       []string
	Count, More int
	ByRule      []results.RuleCount
	Examples    []exampleView
}

// exampleView is one example: its text, and the section of ops.html that shows its ops.
type exampleView struct {
	Text, Href string
	// Cycle is a dependency cycle's witness drawn (cycleSVG); empty for other examples.
	Cycle template.HTML
}

// maxExamplesShown bounds the examples listed per family (results.json has them all).
const maxExamplesShown = 50

// maxWindowsShown bounds the unavailability windows listed.
const maxWindowsShown = 50

func templateFuncs() template.FuncMap {
	return template.FuncMap{
		"sub":      func(a, b float64) float64 { return a - b },
		"join":     strings.Join,
		"inc":      func(i int) int { return i + 1 },
		"ms":       func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " ms" },
		"secs":     func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " s" },
		"secs1000": func(v float64) string { return strconv.FormatFloat(v/1000, 'f', 2, 64) },
		"ns":       func(v int64) string { return strconv.FormatFloat(float64(v)/1e9, 'f', 2, 64) },
		"ints":     func(v []int) string { return joinInts(v) },
		"ints64":   func(v []int64) string { return joinInts(v) },
		"byPartition": func(m map[string]int64) string {
			var out []string
			for _, k := range slices.Sorted(maps.Keys(m)) {
				out = append(out, k+": "+strconv.FormatInt(m[k], 10))
			}
			return strings.Join(out, ", ")
		},
		"links": func(ls [][2]string) string {
			s := make([]string, len(ls))
			for i, l := range ls {
				s[i] = l[0] + "→" + l[1]
			}
			if len(s) > 12 {
				return strings.Join(s[:12], ", ") + fmt.Sprintf(" and %d more", len(s)-12)
			}
			return strings.Join(s, ", ")
		},
	}
}

// RenderHTML writes report.html for r to w, with the plots drawn from tl (nil: a page without
// plots, for a run whose history could not be read). warnings are shown at the top.
func RenderHTML(w io.Writer, r *results.Results, tl *Timeline, opts Options, warnings []string) error {
	opts = opts.withDefaults()
	d := pageData{
		Scenario: r.Scenario, Verdict: string(r.Verdict), Seed: r.Seed,
		UnknownReasons: r.UnknownReasons, UnknownCauses: r.UnknownCauses, Warnings: warnings,
		FaultKinds: r.Faults, Stats: r.Stats, Timings: r.Timings,
		Deviations: r.Deviations, Assumed: r.Assumed, Overrides: r.Overrides, Notes: r.Notes,
	}
	if d.Verdict == "" {
		d.Verdict = string(results.Unknown)
	}
	d.Outcome = results.Outcome(d.Verdict)
	if r.Verdict != "" {
		d.Outcome = r.Outcome()
	}
	if d.Outcome == results.OutcomeLivenessFail {
		d.Verdict = string(results.Fail)
		d.Breaches = r.Liveness.Breaches()
	}
	d.Liveness = newLivenessView(r.Liveness, opts.opsPage)
	if err := d.Liveness.addLivenessPlots(r.Liveness, tl); err != nil {
		return err
	}
	d.Client, d.Kafka = ClientText(r), KafkaText(r)
	d.Expectation = opts.Expectation
	d.Files = opts.files
	d.EvidenceFirst = r.Verdict != results.Pass
	if r.History != nil {
		d.History = r.History.Path
	}
	d.Name = r.Scenario
	if r.FromVerityRun() {
		d.Rerun = opts.Rerun
		if d.Rerun == "" {
			d.Rerun = fmt.Sprintf("verity run --scenario %s --seed %d", r.Scenario, r.Seed)
		}
	} else {
		d.JudgedBy = checkCommand(r)
		d.Name = "a history"
		if d.History != "" {
			d.Name = filepath.Base(d.History)
		}
	}
	d.ForbiddenText = forbiddenSummary(r)
	for _, f := range slices.Sorted(maps.Keys(r.Stats.Ops)) {
		d.OpRows = append(d.OpRows, opRow{Name: f, O: r.Stats.Ops[f]})
	}
	d.Windows = r.Stats.Unavailability
	if len(d.Windows) > maxWindowsShown {
		d.WindowsCut = len(d.Windows)
		d.Windows = d.Windows[:maxWindowsShown]
	}
	d.Anomalies, d.NoneFound = anomalyViews(r, opts.opsPage)
	d.SettingDeviations = settingDeviations(r.Config)
	d.ConfigJSON = prettyConfig(r.Config)

	if tl != nil {
		if err := d.addTimeline(tl, opts); err != nil {
			return err
		}
	}
	if err := d.addMetrics(r, tl, opts.Metrics, opts.opsPage); err != nil {
		return err
	}
	for _, n := range r.RunNotes {
		if why, ok := strings.CutPrefix(n, MetricsNotSampled); ok {
			d.MetricsWhy = why
		}
	}
	t, err := template.New("report").Funcs(templateFuncs()).Parse(pageTemplate)
	if err != nil {
		return fmt.Errorf("report template: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return fmt.Errorf("rendering report.html: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing report.html: %w", err)
	}
	return nil
}

func (d *pageData) addTimeline(tl *Timeline, opts Options) error {
	if d.History == "" {
		d.History = tl.Path
	}
	d.Ops = tl.Ops
	d.Length = strconv.FormatFloat(seconds(tl.End), 'f', 1, 64) + " s"
	d.Bucket = tl.Bucket.String()
	d.Faults = tl.Faults
	d.Markers = tl.Markers
	d.TimelineNotes = tl.Notes
	if tl.Torn > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("the history's last line (%d) was torn and skipped", tl.Torn))
	}
	colors := faultColors(tl.Faults)
	seen := map[string]bool{}
	for i := range tl.Faults {
		k := faultKey(&tl.Faults[i])
		if !seen[k] {
			seen[k] = true
			c := colors[k]
			d.FaultLegend = append(d.FaultLegend, legendItem{Name: k, Color: fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)})
		}
	}
	if len(tl.Buckets) > 0 {
		p, err := throughputPlot(tl, colors)
		if err != nil {
			return err
		}
		if d.Throughput, err = svgURI(p, plotWidth, plotHeight); err != nil {
			return err
		}
		if p, ok, err := errorsPlot(tl, colors); err != nil {
			return err
		} else if ok {
			if d.Errors, err = svgURI(p, plotWidth, plotHeight); err != nil {
				return err
			}
		}
		hasLatency := slices.ContainsFunc(tl.Buckets, func(b Bucket) bool { return b.latN > 0 })
		if hasLatency {
			if p, err = latencyPlot(tl, colors); err != nil {
				return err
			}
			if d.Latency, err = svgURI(p, plotWidth, plotHeight); err != nil {
				return err
			}
		}
	}
	for i, tr := range tl.Partitions {
		v := partitionSummary(tl, tr)
		if i < opts.MaxPartitionPlots {
			p, err := partitionPlot(tl, tr, colors)
			if err != nil {
				return err
			}
			if v.Plot, err = svgURI(p, plotWidth, partitionHeight); err != nil {
				return err
			}
		} else {
			d.PartitionsOmitted++
		}
		d.Partitions = append(d.Partitions, v)
	}
	return nil
}

func partitionSummary(tl *Timeline, tr *PartitionTrack) partitionView {
	v := partitionView{Name: tr.Name(), States: len(tr.States), SmallestISR: -1}
	var below int64
	for k, st := range tr.States {
		if k > 0 && st.Leader != tr.States[k-1].Leader {
			v.LeaderChanges++
		}
		if v.SmallestISR < 0 || len(st.ISR) < v.SmallestISR {
			v.SmallestISR = len(st.ISR)
		}
		if st.MinISR > 0 && len(st.ISR) < st.MinISR {
			end := tl.End
			if k+1 < len(tr.States) {
				end = tr.States[k+1].T
			}
			below += end - st.T
		}
	}
	v.BelowMin = seconds(below)
	return v
}

// knownViews say how many forbidden findings of a known issues explain, and what each is.
func knownViews(a results.Anomaly) []string {
	if a.Known == 0 {
		return nil
	}
	out := []string{fmt.Sprintf("%d of the forbidden findings are explained by a known issue; they still fail the run:", a.Known)}
	for _, i := range a.KnownIssues {
		text := string(i)
		if k, ok := guarantee.LookupKnown(i); ok {
			text += ": " + k.About + " (shown by " + k.Shown + ")"
		}
		out = append(out, text)
	}
	return out
}

// forbiddenSummary says in a line what decided the verdict.
func forbiddenSummary(r *results.Results) string {
	var forb, perm []string
	for _, name := range Families(r) {
		a := r.Anomalies[name]
		if n := a.ForbiddenCount(); n > 0 {
			forb = append(forb, fmt.Sprintf("%d %s", n, name))
		} else if a.Count > 0 {
			perm = append(perm, fmt.Sprintf("%d %s", a.Count, name))
		}
	}
	switch {
	case len(forb) > 0:
		return "forbidden: " + strings.Join(forb, ", ")
	case len(perm) > 0:
		return "no forbidden anomaly; permitted or not judged: " + strings.Join(perm, ", ")
	}
	return "no anomaly found"
}

func anomalyViews(r *results.Results, opsPage map[string]bool) (views []anomalyView, none []string) {
	for _, name := range Families(r) {
		a, ok := r.Anomalies[name]
		if !ok || (a.Count == 0 && a.Unchecked == "") {
			none = append(none, string(name))
			continue
		}
		v := anomalyView{Name: string(name), Count: a.Count, Why: a.Why, ByRule: a.ByRule}
		switch {
		case a.Unchecked != "":
			v.Judgement, v.Class, v.Why = "not checked", "unchecked", a.Unchecked
		case a.ForbiddenCount() > 0:
			v.Judgement, v.Class = "forbidden", "forbidden"
			if n := a.ForbiddenCount(); n < a.Count {
				v.Judgement = fmt.Sprintf("forbidden (%d of %d)", n, a.Count)
			}
			v.Known = knownViews(a)
		case a.Judgement == guarantee.Unknown:
			v.Judgement, v.Class = "not judged", "notjudged"
		default:
			v.Judgement, v.Class = "permitted", "permitted"
		}
		for i, e := range a.Examples {
			if i == maxExamplesShown {
				v.More = len(a.Examples) - i
				break
			}
			ev := exampleView{Text: exampleText(e)}
			if id := exampleAnchor(name, i); opsPage[id] {
				ev.Href = OpsFile + "#" + id
			}
			ev.Cycle = cycleSVG(e.Cycle, ev.Href, exampleAnchor(name, i))
			v.Examples = append(v.Examples, ev)
		}
		views = append(views, v)
	}
	return views, none
}

// settingDeviations lists the producer and topic settings of the run's header that differ
// from Kafka 4.3's defaults (the broker's come in results.json's deviations), processes with
// the same settings on one line.
func settingDeviations(cfg history.Config) []string {
	var out []string
	def := kafkaconf.ResolveProducer(kafkaconf.ProducerConfig{}, kafkaconf.JavaClient())
	producer := func(p kafkaconf.Resolved) []string {
		var d []string
		if p.Conflict != "" {
			d = append(d, "settings no documented guarantee covers: "+p.Conflict)
		}
		if p.Acks != def.Acks {
			d = append(d, fmt.Sprintf("acks=%s (Kafka default %s)", p.Acks, def.Acks))
		}
		if !p.Idempotent && !p.Transactional {
			d = append(d, "enable.idempotence=false (Kafka default true)")
		}
		if p.MaxInFlight != def.MaxInFlight {
			d = append(d, fmt.Sprintf("max.in.flight.requests.per.connection=%d (Kafka default %d)", p.MaxInFlight, def.MaxInFlight))
		}
		if p.Retries != def.Retries {
			d = append(d, fmt.Sprintf("retries=%d (Kafka default %d)", p.Retries, def.Retries))
		}
		if p.AppResend {
			d = append(d, "the application re-sends after failed or unknown sends")
		}
		return d
	}
	// Processes with the same deviations share a line, in process order.
	var lines []string
	procs := map[string][]string{}
	for _, n := range slices.Sorted(maps.Keys(cfg.Processes)) {
		p := kafkaconf.ResolveProducer(cfg.ProducerOf(n), kafkaconf.JavaClient())
		kind := ""
		if p.Transactional {
			kind = " (transactional)"
		}
		d := strings.Join(producer(p), ", ")
		if d == "" {
			continue
		}
		key := d + kind
		if _, ok := procs[key]; !ok {
			lines = append(lines, key)
		}
		procs[key] = append(procs[key], strconv.Itoa(n))
	}
	for _, key := range lines {
		ps := procs[key]
		label := "process " + ps[0]
		if len(ps) > 1 {
			label = "processes " + strings.Join(ps, ", ")
		}
		out = append(out, label+": "+key)
	}
	if cfg.Producer != nil {
		if d := producer(kafkaconf.ResolveProducer(*cfg.Producer, kafkaconf.JavaClient())); len(d) > 0 {
			out = append(out, "other producers: "+strings.Join(d, ", "))
		}
	}
	topic := func(prefix string, t kafkaconf.ResolvedTopic) {
		if t.RF != kafkaconf.DefaultReplicationFactor {
			out = append(out, fmt.Sprintf("%sreplication.factor=%d (Kafka default.replication.factor %d)", prefix, t.RF, kafkaconf.DefaultReplicationFactor))
		}
		if t.MinISR != kafkaconf.DefaultMinISR {
			out = append(out, fmt.Sprintf("%smin.insync.replicas=%d (Kafka default %d)", prefix, t.MinISR, kafkaconf.DefaultMinISR))
		}
		if t.Unclean {
			out = append(out, prefix+"unclean.leader.election.enable=true (Kafka default false)")
		}
		if t.Conflict != "" {
			out = append(out, prefix+"settings no documented guarantee covers: "+t.Conflict)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Topics)) {
		topic("topic "+name+": ", kafkaconf.ResolveTopic(cfg.TopicOf(name)))
	}
	if cfg.Topic != nil || len(cfg.Topics) == 0 {
		topic("other topics: ", kafkaconf.ResolveTopic(cfg.TopicOf("")))
	}
	return out
}

// ClientText names the client a run drove, its version and the transaction protocol it spoke:
// "franz-go v1.22.3, transactions v2"; "not recorded" for a history that does not say.
func ClientText(r *results.Results) string {
	c := r.Config.Client
	if c == nil {
		return "not recorded"
	}
	s := string(c.Name)
	if c.Version != "" {
		s += " " + c.Version
	}
	if c.TxnProtocol != "" {
		s += ", transactions " + string(c.TxnProtocol)
	}
	return s
}

// KafkaText names the Kafka release a run's cluster ran and the feature levels that decide what
// Verity judges: "4.1.2 (transaction.version=2, eligible.leader.replicas.version=1)"; "not
// recorded" for a history that does not say.
func KafkaText(r *results.Results) string {
	k := r.Config.Kafka
	if k == nil {
		return "not recorded"
	}
	var levels []string
	for _, f := range kafkaconf.SettableFeatures() {
		levels = append(levels, fmt.Sprintf("%s=%d", f.Name, k.Features.Level(f.Name)))
	}
	return string(k.Version) + " (" + strings.Join(levels, ", ") + ")"
}

// prettyConfig is the header's config as indented JSON.
func prettyConfig(c history.Config) string {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(none)"
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
