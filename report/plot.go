package report

// Plotting library: gonum.org/v1/plot v0.17.0. It is the plotting library the Go community
// maintains (the gonum project), pure Go, and writes SVG with no browser-side code. Its weight:
// eight modules (its own, fonts, a LaTeX renderer, gg, svgo, freetype, x/image, x/text), about
// 6 MB of embedded fonts in the binary; acceptable next to the Docker client already linked.
// go-echarts needs JavaScript from a CDN; go-chart (wcharczuk) has not been released since 2021.

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"html/template"
	"image/color"
	"maps"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot sizes.
const (
	plotWidth       = 11 * vg.Inch
	plotHeight      = 3.4 * vg.Inch
	partitionHeight = 2.1 * vg.Inch
)

// faultPalette colours fault kinds; the same kind has the same colour on every plot. Red is
// left out: it marks an ISR below min.insync.replicas.
func faultPalette() []color.RGBA {
	return []color.RGBA{
		{R: 0x37, G: 0x7e, B: 0xb8, A: 0xff}, {R: 0x4d, G: 0xaf, B: 0x4a, A: 0xff}, {R: 0x98, G: 0x4e, B: 0xa3, A: 0xff},
		{R: 0xff, G: 0x7f, B: 0x00, A: 0xff}, {R: 0xa6, G: 0x56, B: 0x28, A: 0xff}, {R: 0xf7, G: 0x81, B: 0xbf, A: 0xff},
		{R: 0x99, G: 0x99, B: 0x00, A: 0xff}, {R: 0x1b, G: 0x9e, B: 0x77, A: 0xff}, {R: 0x66, G: 0x66, B: 0x66, A: 0xff},
	}
}

// faultColors assigns a colour to each fault kind, in order of first appearance.
func faultColors(faults []FaultInterval) map[string]color.RGBA {
	pal := faultPalette()
	out := map[string]color.RGBA{}
	for _, f := range faults {
		k := faultKey(&f)
		if _, ok := out[k]; !ok {
			out[k] = pal[len(out)%len(pal)]
		}
	}
	return out
}

// faultKey is the kind a fault is coloured by: the catalogue fault when the event names one.
func faultKey(f *FaultInterval) string {
	if f.Fault != "" {
		return f.Fault
	}
	return f.Name
}

func withAlpha(c color.RGBA, a uint8) color.NRGBA {
	return color.NRGBA{R: c.R, G: c.G, B: c.B, A: a}
}

func seconds(ns int64) float64 { return float64(ns) / 1e9 }

// bands is a plot.Plotter that shades time intervals across the whole height of the plot,
// behind the data, and labels them at the top. It has no DataRange, so it never changes the
// axes the data chose.
type bands struct {
	spans   []span
	markers []Marker
}

type span struct {
	from, to float64 // seconds
	color    color.Color
	label    string
}

func (b *bands) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	sty := plt.Legend.TextStyle
	sty.Font.Size = vg.Points(7)
	sty.Color = color.Gray{Y: 0x40}
	// Labels are set in rows: each goes into the first row whose last label ends before it
	// starts, so that none overlaps another; beyond the last row, the row that ends first.
	const rows = 4
	place := func(ends *[rows]vg.Length, from, width vg.Length) int {
		best := 0
		for r := range rows {
			if ends[r] < from {
				best = r
				break
			}
			if ends[r] < ends[best] {
				best = r
			}
		}
		ends[best] = max(ends[best], from+width+4)
		return best
	}
	var spanEnds, markEnds [rows]vg.Length
	for r := range rows {
		spanEnds[r], markEnds[r] = vg.Length(math.Inf(-1)), vg.Length(math.Inf(-1))
	}
	for _, s := range b.spans {
		x0, x1 := trX(s.from), trX(s.to)
		if x1-x0 < 1 {
			x1 = x0 + 1 // an instant still shows
		}
		pts := []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}}
		c.FillPolygon(s.color, c.ClipPolygonX(pts))
		if s.label == "" {
			continue
		}
		if c.ContainsX(x0) {
			// At the bottom: the top holds the legend. A label that would run past the
			// right edge ends at it instead.
			w := sty.Width(s.label)
			x := min(x0+2, c.Max.X-w-2)
			row := place(&spanEnds, x, w)
			c.FillText(sty, vg.Point{X: x, Y: c.Min.Y + sty.Font.Size*vg.Length(row) + 2}, s.label)
		}
	}
	line := draw.LineStyle{Color: color.Gray{Y: 0x60}, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
	for _, m := range b.markers {
		x := trX(seconds(m.T))
		if c.ContainsX(x) {
			c.StrokeLine2(line, x, c.Min.Y, x, c.Max.Y)
			// Markers come close together (heal-all, then healthy): their labels take rows, and
			// one near the right edge goes to the left of its line.
			w := sty.Width(m.Label)
			lx := x + 2
			if lx+w > c.Max.X {
				lx = x - w - 2
			}
			row := place(&markEnds, lx, w)
			c.FillText(sty, vg.Point{X: lx, Y: c.Max.Y - sty.Font.Size*vg.Length(row+1) - 2}, m.Label)
		}
	}
}

// faultBands are the fault intervals of tl as bands, labelled when withLabels.
func faultBands(tl *Timeline, colors map[string]color.RGBA, withLabels bool) *bands {
	b := &bands{markers: tl.Markers}
	for i := range tl.Faults {
		f := &tl.Faults[i]
		s := span{from: seconds(f.Start), to: seconds(f.End), color: withAlpha(colors[faultKey(f)], 0x38)}
		if withLabels {
			s.label = f.Label()
		}
		b.spans = append(b.spans, s)
	}
	return b
}

func newPlot(title, xLabel, yLabel string, end float64) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Min, p.X.Max = 0, math.Max(end, 1)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(4)
	p.Add(plotter.NewGrid())
	return p
}

func line(xys plotter.XYs, c color.Color, width float64, dashes ...vg.Length) (*plotter.Line, error) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = vg.Points(width)
	l.Dashes = dashes
	return l, nil
}

// throughputPlot draws writes acknowledged, failed and unknown, and polls, per second.
func throughputPlot(tl *Timeline, colors map[string]color.RGBA) (*plot.Plot, error) {
	end := seconds(tl.End)
	p := newPlot("Throughput", "seconds since the run started", "ops per second", end)
	p.Add(faultBands(tl, colors, true))
	w := tl.Bucket.Seconds()
	series := []struct {
		name  string
		color color.Color
		get   func(*Bucket) int64
	}{
		{"writes acknowledged", color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, func(b *Bucket) int64 { return b.Acked }},
		{"writes failed", color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, func(b *Bucket) int64 { return b.Failed }},
		{"writes unknown (info)", color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, func(b *Bucket) int64 { return b.Unknown }},
		{"polls", color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, func(b *Bucket) int64 { return b.Polls }},
	}
	for _, s := range series {
		xys := make(plotter.XYs, len(tl.Buckets))
		any := false
		for k := range tl.Buckets {
			v := s.get(&tl.Buckets[k])
			any = any || v > 0
			xys[k] = plotter.XY{X: (float64(k) + 0.5) * w, Y: float64(v) / w}
		}
		if !any || len(xys) == 0 {
			continue
		}
		l, err := line(xys, s.color, 1.2)
		if err != nil {
			return nil, fmt.Errorf("throughput %s: %w", s.name, err)
		}
		l.StepStyle = plotter.MidStep
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	// Headroom above the data for the legend (Add widened the axes to the data).
	p.Y.Min = 0
	p.Y.Max *= 1.35
	p.Y.Tick.Marker = countTicks{}
	return p, nil
}

// maxErrorClasses bounds the lines of the errors plot; the rarer classes share one.
const maxErrorClasses = 6

// errorsPlot draws the failed and unknown write completions per second by their error's class,
// the most frequent classes first (the rarest share one line); false when no write failed.
func errorsPlot(tl *Timeline, colors map[string]color.RGBA) (*plot.Plot, bool, error) {
	totals := map[string]int64{}
	for k := range tl.Buckets {
		for c, n := range tl.Buckets[k].Errors {
			totals[c] += n
		}
	}
	if len(totals) == 0 {
		return nil, false, nil
	}
	classes := slices.SortedFunc(maps.Keys(totals), func(a, b string) int {
		return cmp.Or(cmp.Compare(totals[b], totals[a]), cmp.Compare(a, b))
	})
	// line[c] is the line class c is drawn on.
	lineOf := map[string]int{}
	names := classes
	if len(classes) > maxErrorClasses {
		names = append(slices.Clone(classes[:maxErrorClasses-1]), "other classes")
	}
	for i, c := range classes {
		lineOf[c] = min(i, len(names)-1)
	}
	sums := make([]int64, len(names))
	for c, n := range totals {
		sums[lineOf[c]] += n
	}
	p := newPlot("Failed and unknown writes by error", "seconds since the run started", "writes per second", seconds(tl.End))
	p.Add(faultBands(tl, colors, false))
	w := tl.Bucket.Seconds()
	for i, name := range names {
		xys := make(plotter.XYs, len(tl.Buckets))
		for k := range tl.Buckets {
			var n int64
			for c, m := range tl.Buckets[k].Errors {
				if lineOf[c] == i {
					n += m
				}
			}
			xys[k] = plotter.XY{X: (float64(k) + 0.5) * w, Y: float64(n) / w}
		}
		l, err := line(xys, nodeColors[i%len(nodeColors)], 1.2)
		if err != nil {
			return nil, false, fmt.Errorf("errors plot %s: %w", name, err)
		}
		l.StepStyle = plotter.MidStep
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (%d)", name, sums[i]), l)
	}
	p.Y.Min = 0
	p.Y.Max *= 1.35
	p.Y.Tick.Marker = countTicks{}
	return p, true, nil
}

// countTicks labels an axis of counts or rates with about five round values ("0", "500",
// "1000", …), where gonum's default gives two labels with two decimals.
type countTicks struct{}

func (countTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'f', -1, 64)}}
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step/1e6; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		for m := 1; m < 5; m++ {
			if minor := v + float64(m)*step/5; minor <= hi {
				ts = append(ts, plot.Tick{Value: minor})
			}
		}
	}
	return ts
}

// latencyPlot draws the p50, p99 and max latency of acknowledged writes per second, on a log
// scale.
func latencyPlot(tl *Timeline, colors map[string]color.RGBA) (*plot.Plot, error) {
	end := seconds(tl.End)
	p := newPlot("Write latency", "seconds since the run started", "milliseconds (log scale)", end)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(faultBands(tl, colors, false))
	w := tl.Bucket.Seconds()
	series := []struct {
		name  string
		color color.Color
		q     float64
	}{
		{"p50", color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, 0.5},
		{"p99", color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, 0.99},
		{"max", color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, 1},
	}
	for _, s := range series {
		// One line per run of seconds with acknowledged writes: where nothing was
		// acknowledged (an outage) the plot shows a gap, not a line drawn across it.
		var segs []plotter.XYs
		var cur plotter.XYs
		for k := range tl.Buckets {
			b := &tl.Buckets[k]
			v, ok := b.Latency(s.q)
			if s.q == 1 {
				v, ok = float64(b.MaxLatency), b.latN > 0
			}
			if !ok {
				if len(cur) > 0 {
					segs, cur = append(segs, cur), nil
				}
				continue
			}
			// Below 1 µs is below what the histogram resolves; keep the log scale finite.
			cur = append(cur, plotter.XY{X: (float64(k) + 0.5) * w, Y: math.Max(v/1e6, 0.001)})
		}
		if len(cur) > 0 {
			segs = append(segs, cur)
		}
		for i, seg := range segs {
			l, err := line(seg, s.color, 1.2)
			if err != nil {
				return nil, fmt.Errorf("latency %s: %w", s.name, err)
			}
			p.Add(l)
			if len(seg) == 1 {
				sc, err := plotter.NewScatter(seg)
				if err != nil {
					return nil, fmt.Errorf("latency %s: %w", s.name, err)
				}
				sc.Color, sc.Radius = s.color, vg.Points(1.5)
				p.Add(sc)
			}
			if i == 0 {
				p.Legend.Add(s.name, l)
			}
		}
	}
	// Writes that failed or went unanswered: how long they waited, drawn apart as marks.
	for _, s := range []struct {
		name  string
		color color.RGBA
		shape draw.GlyphDrawer
		get   func(*Bucket) int64
	}{
		{"longest failed write", color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, draw.CrossGlyph{}, func(b *Bucket) int64 { return b.MaxFailedLatency }},
		{"longest unknown write (info)", color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, draw.TriangleGlyph{}, func(b *Bucket) int64 { return b.MaxUnknownLatency }},
	} {
		var xys plotter.XYs
		for k := range tl.Buckets {
			if v := s.get(&tl.Buckets[k]); v > 0 {
				xys = append(xys, plotter.XY{X: (float64(k) + 0.5) * w, Y: math.Max(float64(v)/1e6, 0.001)})
			}
		}
		if len(xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, fmt.Errorf("latency %s: %w", s.name, err)
		}
		sc.Color, sc.Shape, sc.Radius = s.color, s.shape, vg.Points(2.5)
		p.Add(sc)
		p.Legend.Add(s.name, sc)
	}
	p.Y.Max *= 4 // headroom for the legend on the log scale
	return p, nil
}

// partitionPlot draws one partition's replicas over time: a thin bar while a node is in the
// ISR, a thick one while it leads, and red shading while the ISR is below min ISR.
func partitionPlot(tl *Timeline, tr *PartitionTrack, colors map[string]color.RGBA) (*plot.Plot, error) {
	end := seconds(tl.End)
	minISR := 0
	for _, st := range tr.States {
		minISR = max(minISR, st.MinISR)
	}
	title := tr.Name()
	if minISR > 0 {
		title += fmt.Sprintf(" (min ISR %d)", minISR)
	}
	p := newPlot(title, "seconds since the run started", "node id", end)
	// The legend sits above the plot's top node, right-aligned inside the plot, where the
	// room left for it (Y.Max below) keeps it off the bars.
	p.Legend.Top = true
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Points(4)
	fb := faultBands(tl, colors, false)
	fb.markers = nil
	p.Add(fb)

	var nodes []int
	for _, st := range tr.States {
		nodes = append(nodes, st.ISR...)
		if st.Leader >= 0 {
			nodes = append(nodes, int(st.Leader))
		}
	}
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)

	// Runs of ISR membership and leadership per node, so that one line is drawn per run rather
	// than per observation.
	type run struct{ from, to float64 }
	isrRuns := map[int][]run{}
	leadRuns := map[int][]run{}
	extend := func(runs map[int][]run, n int, from, to float64) {
		rs := runs[n]
		if len(rs) > 0 && rs[len(rs)-1].to == from {
			rs[len(rs)-1].to = to
		} else {
			rs = append(rs, run{from, to})
		}
		runs[n] = rs
	}
	below := &bands{}
	for k, st := range tr.States {
		from := seconds(st.T)
		to := end
		if k+1 < len(tr.States) {
			to = seconds(tr.States[k+1].T)
		}
		if st.MinISR > 0 && len(st.ISR) < st.MinISR {
			below.spans = append(below.spans, span{from: from, to: to, color: color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0x40}})
		}
		for _, n := range st.ISR {
			extend(isrRuns, n, from, to)
		}
		if st.Leader >= 0 {
			extend(leadRuns, int(st.Leader), from, to)
		}
	}
	isrColor := color.RGBA{R: 0x9e, G: 0xb3, B: 0xc8, A: 0xff}
	leaderColor := color.RGBA{R: 0x1f, G: 0x4e, B: 0x8c, A: 0xff}
	var isrLine, leaderLine *plotter.Line
	for _, layer := range []struct {
		runs  map[int][]run
		color color.Color
		width float64
		last  **plotter.Line
	}{{isrRuns, isrColor, 5, &isrLine}, {leadRuns, leaderColor, 2.5, &leaderLine}} {
		for _, n := range nodes {
			for _, r := range layer.runs[n] {
				l, err := line(plotter.XYs{{X: r.from, Y: float64(n)}, {X: r.to, Y: float64(n)}}, layer.color, layer.width)
				if err != nil {
					return nil, fmt.Errorf("partition %s: %w", tr.Name(), err)
				}
				p.Add(l)
				*layer.last = l
			}
		}
	}
	p.Add(below)
	if isrLine != nil {
		p.Legend.Add("in ISR", isrLine)
	}
	if leaderLine != nil {
		p.Legend.Add("leader", leaderLine)
	}
	var ticks []plot.Tick
	for _, n := range nodes {
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: fmt.Sprint(n)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	if len(nodes) > 0 {
		// Room above the top node for the legend.
		p.Y.Min, p.Y.Max = float64(nodes[0])-0.7, float64(nodes[len(nodes)-1])+1.8
	}
	return p, nil
}

// svgURI renders p as SVG of size w×h, as a data: URI for an <img>: the page stays one file, and
// the SVG's styles and ids stay out of the page's.
func svgURI(p *plot.Plot, w, h vg.Length) (template.URL, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("rendering plot %q: %w", p.Title.Text, err)
	}
	// The URI is ours, built from our own bytes: safe to hand to the template as a URL.
	return template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())), nil
}
