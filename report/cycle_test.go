package report

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// A witness cycle is drawn as well-formed SVG without scripts: a node per transaction named by
// its op and linked to the example's ops, an arrow per edge labelled with what it rests on.
func TestCycleSVG(t *testing.T) {
	steps := []results.CycleStep{
		{From: 12, To: 31, Kind: results.EdgeWR, Value: "1-5<x>"},
		{From: 31, To: 40, Kind: results.EdgeProcess},
		{From: 40, To: 12, Kind: results.EdgeRealtime},
	}
	svg := string(cycleSVG(steps, "ops.html#G1c-realtime-0", "G1c-realtime-0"))
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Fatalf("not well-formed: %v\n%s", err, svg)
	}
	for _, want := range []string{">T1<", ">T2<", ">T3<", ">op 12<", ">op 31<", ">op 40<", "wr 1-5&lt;x&gt;", ">process<", ">realtime<",
		`href="ops.html#G1c-realtime-0"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("lacks %q", want)
		}
	}
	if n := strings.Count(svg, `fill="none"`); n != 3 {
		t.Errorf("%d arrows, want 3", n)
	}
	if strings.Contains(svg, "<script") {
		t.Error("a script in the drawing")
	}
	if !strings.Contains(svg, `id="arrow-G1c-realtime-0"`) || !strings.Contains(svg, `url(#arrow-G1c-realtime-0)`) {
		t.Error("the arrowhead's id is not the drawing's own")
	}
	if cycleSVG(nil, "x", "y") != "" {
		t.Error("an example without a cycle is drawn")
	}

	r := &results.Results{Verdict: results.Fail, Anomalies: map[guarantee.Anomaly]results.Anomaly{
		guarantee.G1c: {Count: 1, Forbidden: 1, Judgement: guarantee.Forbidden, Why: "read_committed",
			Examples: []results.Example{{Ops: []int64{12, 31}, Cycle: steps[:1], Note: "a cycle"}}},
	}}
	views, _ := anomalyViews(r, map[string]bool{"G1c-0": true})
	if len(views) != 1 || len(views[0].Examples) != 1 || !strings.Contains(string(views[0].Examples[0].Cycle), `href="ops.html#G1c-0"`) {
		t.Errorf("the report's G1c example is not drawn, linked to its ops: %+v", views)
	}
}
