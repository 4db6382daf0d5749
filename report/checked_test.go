package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// The report of results the real checker computed: the verdict and every example's op
// indices are on the page, and junit.xml fails exactly the families with forbidden findings.
// The test history's ISR samples show verity-0 below min ISR for a while, so acknowledged
// writes there are unexpected-ack findings with real op indices.
func TestReportOfCheckedHistory(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "history.jsonl")
	writeTestHistory(t, hist, 30000, 9)
	res, err := verify.CheckFile(context.Background(), hist, guarantee.Overrides{}, verify.Options{MaxExamples: 5})
	if err != nil {
		t.Fatal(err)
	}
	w, err := Write(context.Background(), dir, res, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := parsePage(t, w.HTML)
	if got := text(p.byID("verdict-value")); got != string(res.Verdict) {
		t.Errorf("page verdict %q, results %q", got, res.Verdict)
	}
	found := 0
	for name, a := range res.Anomalies {
		for _, e := range a.Examples {
			found++
			row := p.byID("anomaly-" + name)
			if row == nil || !strings.Contains(text(row), "ops "+joinInts(e.Ops)) {
				t.Errorf("%s example %v not on the page", name, e.Ops)
			}
		}
	}
	t.Logf("verdict %s, %d examples, anomalies %v", res.Verdict, found, Families(res))

	var buf bytes.Buffer
	if err := WriteJUnit(&buf, res); err != nil {
		t.Fatal(err)
	}
	var doc JUnitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Suites[0].Cases {
		family := strings.TrimPrefix(c.Name, "anomaly/")
		if c.Name == "verdict" {
			if (c.Failure != nil) != (res.Verdict == results.Fail) {
				t.Errorf("verdict case %+v for verdict %s", c, res.Verdict)
			}
			continue
		}
		a := res.Anomalies[family]
		forbidden := a.Count > 0 && !a.Permitted && a.Judgement != "unknown" && a.Unchecked == ""
		if (c.Failure != nil) != forbidden {
			t.Errorf("%s: failure %t, forbidden %t (%+v)", family, c.Failure != nil, forbidden, a)
		}
	}
}
