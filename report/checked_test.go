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
	res, err := verify.CheckFile(context.Background(), hist, verify.Options{MaxExamples: 5})
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
	// The history is built to fail on acknowledged writes while verity-0 is below min ISR; if
	// the checker found nothing, the loop below would check nothing, so that is a failure.
	if res.Verdict != results.Fail {
		t.Errorf("verdict %s, want %s: the test history has acknowledged writes below min ISR", res.Verdict, results.Fail)
	}
	if ua := res.Anomalies["unexpected-ack"]; ua.Count == 0 || len(ua.Examples) == 0 {
		t.Errorf("no unexpected-ack findings with examples (%+v): the test history has acknowledged writes below min ISR", ua)
	}
	found := 0
	for name, a := range res.Anomalies {
		for _, e := range a.Examples {
			found++
			if len(e.Ops) == 0 {
				t.Errorf("%s example %+v has no op indices", name, e)
				continue
			}
			row := p.byID("anomaly-" + string(name))
			if row == nil || !strings.Contains(text(row), "ops "+joinInts(e.Ops)) {
				t.Errorf("%s example %v not on the page", name, e.Ops)
			}
		}
	}
	if found == 0 {
		t.Fatalf("the checker gave no examples (verdict %s): nothing on the page was checked", res.Verdict)
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
		a := res.Anomalies[guarantee.Anomaly(family)]
		forbidden := a.Count > 0 && a.Judgement == guarantee.Forbidden && a.Unchecked == ""
		if (c.Failure != nil) != forbidden {
			t.Errorf("%s: failure %t, forbidden %t (%+v)", family, c.Failure != nil, forbidden, a)
		}
	}
}
