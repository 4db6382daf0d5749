package report

import (
	"fmt"
	"html/template"
	"image/color"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/verity-kafka/verity/metrics"
	"github.com/verity-kafka/verity/verify/results"
)

// The broker metrics section: each sampled metric as one plot, a line per node, with the
// faults behind; the alerts checked against the ISR watch, and each silent one with the ops
// that show the condition it missed.

// metricsView is what the page shows of results' broker_metrics and the metrics file.
type metricsView struct {
	Summary  *results.BrokerMetrics
	Findings []findingView
	Plots    []metricPlot
}

type findingView struct {
	Text, Href string
	Ops        []int64
}

type metricPlot struct {
	Name, About string
	SVG         template.URL
}

// findingAnchor is the id of a silent alert's section in ops.html.
func findingAnchor(k int) string { return "broker-metrics-" + strconv.Itoa(k) }

// readMetrics reads the metrics file results name, beside the page.
func readMetrics(dir string, r *results.Results) (*metrics.File, error) {
	if r.BrokerMetrics == nil || r.BrokerMetrics.File == "" {
		return nil, nil
	}
	m, err := metrics.ReadFile(filepath.Join(dir, filepath.Base(r.BrokerMetrics.File)))
	if err != nil {
		return nil, fmt.Errorf("the broker metrics are not plotted: %w", err)
	}
	return m, nil
}

// metricWindows are the ops.html windows of the silent alerts.
func metricWindows(r *results.Results) []*opWindow {
	if r.BrokerMetrics == nil {
		return nil
	}
	var ws []*opWindow
	for k, f := range r.BrokerMetrics.Alerts.Findings {
		if k == maxExamplesShown {
			break
		}
		ws = append(ws, &opWindow{ID: findingAnchor(k), Title: fmt.Sprintf("silent alert %d: %s on broker %d", k+1, f.Metric, f.Node),
			Note: f.Text, proof: slices.Clone(f.Ops)})
	}
	return ws
}

func (d *pageData) addMetrics(r *results.Results, tl *Timeline, m *metrics.File, opsPage map[string]bool) error {
	if r.BrokerMetrics == nil {
		return nil
	}
	v := &metricsView{Summary: r.BrokerMetrics}
	for k, f := range r.BrokerMetrics.Alerts.Findings {
		fv := findingView{Text: f.Text, Ops: f.Ops}
		if opsPage[findingAnchor(k)] {
			fv.Href = OpsFile + "#" + findingAnchor(k)
		}
		v.Findings = append(v.Findings, fv)
	}
	d.Metrics = v
	if m == nil || tl == nil {
		return nil
	}
	colors := faultColors(tl.Faults)
	for _, mt := range metrics.All() {
		p, ok, err := metricPlotOf(tl, m, mt, colors)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		svg, err := svgURI(p, plotWidth, metricHeight)
		if err != nil {
			return err
		}
		v.Plots = append(v.Plots, metricPlot{Name: string(mt.Name), About: mt.About, SVG: svg})
	}
	return nil
}

const metricHeight = 2.2 * vg.Inch

var nodeColors = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, {R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
}

// metricPlotOf draws metric mt per node; false when no node has it. A gauge is drawn as read;
// a counter as its rate per second between two samples (a drop means the broker restarted and
// counts again from zero: no rate there). A line breaks where the node did not answer.
func metricPlotOf(tl *Timeline, m *metrics.File, mt metrics.Metric, colors map[string]color.RGBA) (*plot.Plot, bool, error) {
	type pt struct {
		t, v float64
		ok   bool
	}
	series := map[int][]pt{}
	any := false
	for _, s := range m.Samples {
		v, ok := s.Values[mt.Name]
		any = any || ok
		series[s.Node] = append(series[s.Node], pt{t: float64(s.TimeMS) / 1000, v: v, ok: ok})
	}
	if !any {
		return nil, false, nil
	}
	unit := mt.Unit
	if mt.Kind == metrics.Counter {
		unit += " per second"
		for n, pts := range series {
			rates := make([]pt, 0, len(pts))
			for i := 1; i < len(pts); i++ {
				a, b := pts[i-1], pts[i]
				ok := a.ok && b.ok && b.v >= a.v && b.t > a.t
				rates = append(rates, pt{t: b.t, v: (b.v - a.v) / (b.t - a.t), ok: ok})
			}
			series[n] = rates
		}
	}
	p := newPlot(string(mt.Name), "seconds since the run started", unit, seconds(tl.End))
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Points(4)
	fb := faultBands(tl, colors, false)
	fb.markers = nil
	p.Add(fb)
	nodes := make([]int, 0, len(series))
	for n := range series {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	top := 0.0
	for i, n := range nodes {
		c := nodeColors[i%len(nodeColors)]
		var seg plotter.XYs
		var last *plotter.Line
		flush := func() error {
			if len(seg) == 0 {
				return nil
			}
			if len(seg) == 1 {
				seg = append(seg, plotter.XY{X: seg[0].X + 0.2, Y: seg[0].Y}) // a lone sample still shows
			}
			l, err := line(seg, c, 1.4)
			if err != nil {
				return fmt.Errorf("plotting %s of node %d: %w", mt.Name, n, err)
			}
			p.Add(l)
			last, seg = l, nil
			return nil
		}
		for _, q := range series[n] {
			if !q.ok {
				if err := flush(); err != nil {
					return nil, false, err
				}
				continue
			}
			top = max(top, q.v)
			seg = append(seg, plotter.XY{X: q.t, Y: q.v})
		}
		if err := flush(); err != nil {
			return nil, false, err
		}
		if last != nil {
			p.Legend.Add("node "+strconv.Itoa(n), last)
		}
	}
	p.Y.Min, p.Y.Max = 0, max(1, top)*1.35 // room above for the legend
	p.Y.Tick.Marker = countTicks{}
	return p, true, nil
}
