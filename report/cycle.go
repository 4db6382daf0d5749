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
// and an arrow per edge labelled with what it rests on. Empty for an example without a cycle.
func cycleSVG(steps []results.CycleStep, href string) template.HTML {
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
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#444"/></marker></defs>`)
	for i, s := range steps {
		x1, y1 := pos(i)
		x2, y2 := pos((i + 1) % n)
		dx, dy := x2-x1, y2-y1
		l := math.Hypot(dx, dy)
		if l == 0 {
			continue
		}
		ux, uy := dx/l, dy/l
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" marker-end="url(#arrow)"/>`,
			x1+ux*node, y1+uy*node, x2-ux*node, y2-uy*node, edgeColour(s.Kind))
		label := string(s.Kind)
		if s.Value != "" {
			label += " " + s.Value
		}
		// The label sits beside the edge's middle, outward from the circle's centre.
		mx, my := (x1+x2)/2, (y1+y2)/2
		ox, oy := mx-size/2, my-size/2
		if ol := math.Hypot(ox, oy); ol > 0 {
			mx, my = mx+ox/ol*12, my+oy/ol*12
		}
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
