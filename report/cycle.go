package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/verity-kafka/verity/verify/results"
)

// cycleSVG draws a dependency cycle's witness as a small SVG, no scripts: the transactions
// T1…Tk on a circle, each named with its op and linked to href (the example's ops in ops.html),
// and a curved arrow per edge (T1→T2 and T2→T1 bend apart) labelled with what it rests on.
// Empty for an example without a cycle.
func cycleSVG(steps []results.CycleStep, href, id string) template.HTML {
	n := len(steps)
	if n == 0 {
		return ""
	}
	const size, r, node = 300.0, 100.0, 26.0
	pos := func(i int) (float64, float64) {
		a := 2*math.Pi*float64(i)/float64(n) - math.Pi/2
		return size/2 + r*math.Cos(a), size/2 + r*math.Sin(a)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="cycle" xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img">`, size, size, size, size)
	// The arrowhead's id is the drawing's own: a page holds many drawings, and ids are unique.
	arrow := template.HTMLEscapeString("arrow-" + id)
	fmt.Fprintf(&b, `<defs><marker id="%s" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#444"/></marker></defs>`, arrow)
	bow := 18.0 // how far an edge bends to its right, so that T1→T2 and T2→T1 stay apart
	if n == 2 {
		bow = 40
	}
	for i, s := range steps {
		x1, y1 := pos(i)
		x2, y2 := pos((i + 1) % n)
		dx, dy := x2-x1, y2-y1
		l := math.Hypot(dx, dy)
		if l == 0 {
			continue
		}
		nx, ny := -dy/l, dx/l // the edge's right, on a screen whose y grows downwards
		cx, cy := (x1+x2)/2+nx*bow, (y1+y2)/2+ny*bow
		unit := func(x, y float64) (float64, float64) { h := math.Hypot(x, y); return x / h, y / h }
		sx, sy := unit(cx-x1, cy-y1)
		ex, ey := unit(x2-cx, y2-cy)
		fmt.Fprintf(&b, `<path d="M%.1f,%.1f Q%.1f,%.1f %.1f,%.1f" fill="none" stroke="%s" stroke-width="1.5" marker-end="url(#%s)"/>`,
			x1+sx*node, y1+sy*node, cx, cy, x2-ex*node, y2-ey*node, edgeColour(s.Kind), arrow)
		label := string(s.Kind)
		if s.Value != "" {
			label += " " + s.Value
		}
		// The label sits beside the curve's middle, on its outer side.
		mx, my := 0.25*x1+0.5*cx+0.25*x2+nx*10, 0.25*y1+0.5*cy+0.25*y2+ny*10
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle" fill="%s">%s</text>`,
			mx, my, edgeColour(s.Kind), template.HTMLEscapeString(label))
	}
	for i, s := range steps {
		x, y := pos(i)
		open, close := "", ""
		if href != "" {
			open, close = fmt.Sprintf(`<a href="%s">`, template.HTMLEscapeString(href)), "</a>"
		}
		fmt.Fprintf(&b, `%s<circle cx="%.1f" cy="%.1f" r="%.0f" fill="#fff" stroke="#333"/><text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">T%d</text><text x="%.1f" y="%.1f" font-size="9" text-anchor="middle">op %d</text>%s`,
			open, x, y, node, x, y-2, i+1, x, y+10, s.From, close)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built from numbers and escaped text only
}

func edgeColour(k results.EdgeKind) string {
	switch k {
	case results.EdgeWR:
		return "#1565c0"
	case results.EdgeWW:
		return "#6a1b9a"
	case results.EdgeProcess:
		return "#2e7d32"
	}
	return "#ef6c00"
}
