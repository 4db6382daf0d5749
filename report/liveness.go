package report

import (
	"cmp"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/results"
)

// livenessView is the page's Liveness section; nil Liveness (results written before the check
// had liveness) shows as not judged.
type livenessView struct {
	Judged           bool
	Verdict, Class   string
	Bounds           []string
	StuckAfter       string
	MinStall         string
	Reasons          []string
	Horizon          string
	LastHeal         string
	Gated            bool
	Findings         []livenessFamilyView
	NoneFound        []string
	RecoveryClients  []string
	Recovery         []recoveryRow
	Unseen, Lag      template.URL
	Progress         template.URL
	SeriesOmitted    []string
	Bucket           string
	ProgressOmission int
}

type livenessFamilyView struct {
	Name, Class string
	Count, More int
	Examples    []exampleView
}

// recoveryRow is one fault of the recovery table: a cell per client of the table's columns,
// empty when the fault did not touch the client.
type recoveryRow struct {
	Label, Injected, Healed string
	Worst                   string
	Cells                   []string
	// Partitions names each partition a client stalled on across the fault, with its recovery.
	Partitions string
}

// livenessAnchor is a liveness example's section id in ops.html: "liveness-max-stall-0". The
// prefix keeps it apart from the anomaly families' ids.
func livenessAnchor(f results.LivenessFamily, k int) string {
	return "liveness-" + string(f) + "-" + strconv.Itoa(k)
}

// maxLivenessOpExamples bounds ops.html's liveness sections apart from the anomalies', so that
// a run full of anomaly examples still shows the ops of its stalls.
const maxLivenessOpExamples = 20

// livenessWindows are ops.html's sections for r's liveness findings, in LivenessFamilies order.
func livenessWindows(r *results.Results) []*opWindow {
	if r.Liveness == nil {
		return nil
	}
	var ws []*opWindow
	for _, f := range results.LivenessFamilies() {
		for k, e := range r.Liveness.Findings[f].Examples {
			if len(ws) == maxLivenessOpExamples || k == maxExamplesShown {
				break
			}
			if len(e.Ops) == 0 {
				continue
			}
			ws = append(ws, &opWindow{ID: livenessAnchor(f, k), Title: fmt.Sprintf("liveness %s, example %d", f, k+1),
				Note: livenessExampleText(e), proof: slices.Clone(e.Ops)})
		}
	}
	return ws
}

// BoundsText names the stated bounds the way the checker labels their findings
// ("max_stall 25s"); nil when none is stated.
func BoundsText(b history.LivenessBounds) []string {
	var out []string
	if b.MaxStallMS != nil {
		out = append(out, "max_stall "+msDuration(*b.MaxStallMS))
	}
	if b.RecoverWithinMS != nil {
		out = append(out, "recover_within "+msDuration(*b.RecoverWithinMS))
	}
	return out
}

func msDuration(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }

// secsText is ms as seconds with one decimal: "9.8 s".
func secsText(ms float64) string { return strconv.FormatFloat(ms/1000, 'f', 1, 64) + " s" }

func livenessExampleText(e results.LivenessFinding) string {
	parts := []string{e.Client, fmt.Sprintf("%s-%d", e.Topic, e.Partition),
		fmt.Sprintf("%s to %s", secsText(e.FromMS), secsText(e.ToMS))}
	if e.StuckMS > 0 {
		parts = append(parts, "stuck "+secsText(e.StuckMS))
	}
	if !e.Recovered {
		parts = append(parts, "not recovered")
	}
	if len(e.Ops) > 0 {
		parts = append(parts, "ops "+joinInts(e.Ops))
	}
	if e.Note != "" {
		parts = append(parts, e.Note)
	}
	return strings.Join(parts, " · ")
}

// recoveryText is one recovery as a table cell: "9.8 s / 2.1 s" (from injection / from heal).
func recoveryText(rc results.Recovery) string {
	if !rc.Recovered {
		return "not recovered (≥" + secsText(rc.FromInjectionMS) + ")"
	}
	s := secsText(rc.FromInjectionMS)
	if rc.FromHealMS != nil {
		s += " / " + secsText(*rc.FromHealMS)
	} else {
		s += " / -"
	}
	return s
}

func livenessClass(v results.LivenessVerdict) string {
	switch v {
	case results.LivenessPass:
		return "permitted"
	case results.LivenessFail:
		return "forbidden"
	case results.LivenessUnknown:
		return "notjudged"
	}
	return "unchecked"
}

// newLivenessView builds the section from l, its examples linked to ops.html where it has them.
func newLivenessView(l *results.Liveness, opsPage map[string]bool) *livenessView {
	v := &livenessView{}
	if l == nil {
		return v
	}
	v.Judged = true
	v.Verdict, v.Class = string(l.Verdict), livenessClass(l.Verdict)
	v.Bounds = BoundsText(l.Bounds.LivenessBounds)
	v.StuckAfter, v.MinStall = msDuration(l.Bounds.StuckAfterMS), msDuration(l.Bounds.MinStallMS)
	v.Reasons = l.Reasons
	v.Horizon = secsText(l.HorizonMS)
	if l.LastHealMS != nil {
		v.LastHeal = secsText(*l.LastHealMS)
	}
	v.Gated = l.Gated
	for _, f := range results.LivenessFamilies() {
		fs := l.Findings[f]
		if fs.Count == 0 {
			v.NoneFound = append(v.NoneFound, string(f))
			continue
		}
		fv := livenessFamilyView{Name: string(f), Count: fs.Count, Class: "notjudged"}
		if slices.Contains(results.BoundFamilies(), f) {
			fv.Class = "forbidden" // a breach of a stated bound
		}
		for k, e := range fs.Examples {
			if k == maxExamplesShown {
				fv.More = len(fs.Examples) - k
				break
			}
			ev := exampleView{Text: livenessExampleText(e)}
			if id := livenessAnchor(f, k); opsPage[id] {
				ev.Href = OpsFile + "#" + id
			}
			fv.Examples = append(fv.Examples, ev)
		}
		v.Findings = append(v.Findings, fv)
	}
	// The table's client columns: every client some fault touched, in the order first met.
	for _, f := range l.Faults {
		for _, c := range f.Clients {
			if !slices.Contains(v.RecoveryClients, c.Client) {
				v.RecoveryClients = append(v.RecoveryClients, c.Client)
			}
		}
	}
	for _, f := range l.Faults {
		row := recoveryRow{Label: f.Label, Injected: secsText(f.InjectedMS), Healed: "not healed", Worst: recoveryText(f.Recovery),
			Cells: make([]string, len(v.RecoveryClients))}
		if f.HealedMS != nil {
			row.Healed = secsText(*f.HealedMS)
			if f.HealedBy != "" {
				row.Healed += " (" + f.HealedBy + ")"
			}
		}
		for _, c := range f.Clients {
			row.Cells[slices.Index(v.RecoveryClients, c.Client)] = recoveryText(c.Recovery)
		}
		var parts []string
		for _, p := range f.Partitions {
			parts = append(parts, history.PartitionName(p.Topic, p.Partition)+" "+recoveryText(p.Recovery))
		}
		row.Partitions = strings.Join(parts, "; ")
		v.Recovery = append(v.Recovery, row)
	}
	return v
}

// addLivenessPlots draws the series' plots, the faults of tl (nil: none known) shaded as on the
// other plots.
func (v *livenessView) addLivenessPlots(l *results.Liveness, tl *Timeline) error {
	if l == nil || l.Series == nil || l.Series.BucketMS <= 0 {
		return nil
	}
	s := l.Series
	v.Bucket = msDuration(s.BucketMS)
	var faults []FaultInterval
	var markers []Marker
	if tl != nil {
		faults, markers = tl.Faults, tl.Markers
	}
	colors := faultColors(faults)
	bucketS := float64(s.BucketMS) / 1000
	end := 0.0
	for _, ss := range slices.Concat(s.Unseen, s.Lag, s.Progress) {
		end = math.Max(end, float64(len(ss.Values))*bucketS)
	}
	if tl != nil {
		end = math.Max(end, seconds(tl.End))
	}
	shade := func(labels bool) *bands {
		b := &bands{markers: markers}
		for i := range faults {
			f := &faults[i]
			sp := span{from: seconds(f.Start), to: seconds(f.End), color: withAlpha(colors[faultKey(f)], 0x38)}
			if labels {
				sp.label = f.Label()
			}
			b.spans = append(b.spans, sp)
		}
		return b
	}
	var err error
	if len(s.Unseen) > 0 {
		p, omitted, err := seriesPlot("Acknowledged offsets no reader had reached, per partition", "offsets unseen", s.Unseen, bucketS, end, shade(true))
		if err != nil {
			return err
		}
		if omitted > 0 {
			v.SeriesOmitted = append(v.SeriesOmitted, fmt.Sprintf("unseen: %d partitions with the smallest peaks", omitted))
		}
		if v.Unseen, err = svgURI(p, plotWidth, plotHeight); err != nil {
			return err
		}
	}
	if len(s.Lag) > 0 {
		p, omitted, err := seriesPlot("Lag per reader", "offsets available, not read", s.Lag, bucketS, end, shade(false))
		if err != nil {
			return err
		}
		if omitted > 0 {
			v.SeriesOmitted = append(v.SeriesOmitted, fmt.Sprintf("lag: %d readers with the smallest peaks", omitted))
		}
		if v.Lag, err = svgURI(p, plotWidth, plotHeight); err != nil {
			return err
		}
	}
	if len(s.Progress) > 0 {
		p, rows, omitted := progressPlot(s.Progress, l.Clients, bucketS, end, shade(false))
		v.ProgressOmission = omitted
		h := max(partitionHeight, vg.Length(rows)*0.32*vg.Inch+1.1*vg.Inch)
		if v.Progress, err = svgURI(p, plotWidth, h); err != nil {
			return err
		}
	}
	return nil
}

// maxSeriesLines bounds the lines of the unseen and lag plots; past it the series with the
// smallest peaks are left out, as the ones a reader looks for are the ones that grew.
const maxSeriesLines = 12

// seriesPlot draws one line per series, a value per bucket.
func seriesPlot(title, yLabel string, ss []results.Series, bucketS, end float64, shade *bands) (*plot.Plot, int, error) {
	peak := func(s results.Series) int64 {
		if len(s.Values) == 0 {
			return 0
		}
		return slices.Max(s.Values)
	}
	shown := slices.Clone(ss)
	omitted := 0
	if len(shown) > maxSeriesLines {
		slices.SortStableFunc(shown, func(a, b results.Series) int { return cmp.Compare(peak(b), peak(a)) })
		omitted = len(shown) - maxSeriesLines
		shown = shown[:maxSeriesLines]
	}
	p := newPlot(title, "seconds since the run started", yLabel, end)
	p.Add(shade)
	for i, s := range shown {
		if len(s.Values) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.Values))
		for k, val := range s.Values {
			xys[k] = plotter.XY{X: (float64(k) + 0.5) * bucketS, Y: float64(val)}
		}
		l, err := line(xys, nodeColors[i%len(nodeColors)], 1.2)
		if err != nil {
			return nil, 0, fmt.Errorf("%s %s: %w", title, s.Name, err)
		}
		l.StepStyle = plotter.MidStep
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	p.Y.Min = 0
	p.Y.Max = math.Max(p.Y.Max, 1) * 1.35
	p.Y.Tick.Marker = countTicks{}
	return p, omitted, nil
}

// maxProgressRows bounds the clients of the progress plot.
const maxProgressRows = 40

// Colours of the progress plot: ticks of progress, stalls, and their stuck part.
var (
	progressColor = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	stallColor    = color.RGBA{R: 0xe5, G: 0x73, B: 0x73, A: 0xff}
	stuckColor    = color.RGBA{R: 0x8e, G: 0x0c, B: 0x0c, A: 0xff}
)

// progressRows draws a row per client: a tick per bucket with progress, its height the
// bucket's count over the row's largest, and under it the client's stalls as red bars, their
// stuck part darker. Drawn on the canvas, as thousands of ticks as plotter lines would weigh
// the SVG down with a path each.
type progressRows struct {
	rows    []results.Series
	stalls  [][]results.ClientStall
	bucketS float64
}

func (pr *progressRows) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for i, s := range pr.rows {
		y := float64(len(pr.rows) - 1 - i)
		base, top := trY(y-0.05), trY(y+0.4)
		bar := draw.LineStyle{Width: vg.Points(5)}
		for _, st := range pr.stalls[i] {
			from, to := trX(st.FromMS/1000), trX(st.ToMS/1000)
			bar.Color = stallColor
			c.StrokeLine2(bar, from, trY(y-0.22), max(to, from+1), trY(y-0.22))
			if st.StuckMS > 0 {
				bar.Color = stuckColor
				c.StrokeLine2(bar, trX((st.ToMS-st.StuckMS)/1000), trY(y-0.22), to, trY(y-0.22))
			}
		}
		peak := int64(1)
		if len(s.Values) > 0 {
			peak = max(peak, slices.Max(s.Values))
		}
		tick := draw.LineStyle{Color: progressColor, Width: vg.Points(1)}
		for k, n := range s.Values {
			if n == 0 {
				continue
			}
			x := trX((float64(k) + 0.5) * pr.bucketS)
			h := vg.Length(math.Max(0.15, float64(n)/float64(peak))) * (top - base)
			c.StrokeLine2(tick, x, base, x, base+h)
		}
	}
}

// swatch is a legend entry drawn as a filled box.
type swatch struct{ color color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.color, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

// progressPlot draws the progress rows of the clients (at most maxProgressRows): the plot, its
// rows and how many clients were left out.
func progressPlot(progress []results.Series, clients []results.ClientLiveness, bucketS, end float64, shade *bands) (*plot.Plot, int, int) {
	rows := progress
	omitted := 0
	if len(rows) > maxProgressRows {
		omitted = len(rows) - maxProgressRows
		rows = rows[:maxProgressRows]
	}
	pr := &progressRows{rows: rows, stalls: make([][]results.ClientStall, len(rows)), bucketS: bucketS}
	for i, s := range rows {
		if k := slices.IndexFunc(clients, func(c results.ClientLiveness) bool { return c.Client == s.Name }); k >= 0 {
			pr.stalls[i] = clients[k].Stalls
		}
	}
	p := newPlot("Progress per client", "seconds since the run started", "", end)
	p.Add(shade, pr)
	p.Legend.Add("progress (height: events in the bucket)", swatch{progressColor})
	p.Legend.Add("stall", swatch{stallColor})
	p.Legend.Add("stuck after the last heal", swatch{stuckColor})
	var ticks []plot.Tick
	for i, s := range rows {
		ticks = append(ticks, plot.Tick{Value: float64(len(rows) - 1 - i), Label: s.Name})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	// Room above the top row for the legend.
	p.Y.Min, p.Y.Max = -0.6, float64(len(rows))+1.2
	return p, len(rows), omitted
}
