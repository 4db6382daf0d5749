package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/verity-kafka/verity/harness/harnesstest"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/metrics"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// page is a parsed report.html.
type page struct {
	root *html.Node
	raw  string
}

func parsePage(t *testing.T, path string) page {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("report.html does not parse: %v", err)
	}
	return page{root: root, raw: string(b)}
}

func walk(n *html.Node, visit func(*html.Node)) {
	visit(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, visit)
	}
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func (p page) byID(id string) *html.Node {
	var found *html.Node
	walk(p.root, func(n *html.Node) {
		if v, ok := attr(n, "id"); ok && v == id && found == nil {
			found = n
		}
	})
	return found
}

func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return strings.Join(strings.Fields(b.String()), " ")
}

func (p page) elements(tag string) []*html.Node {
	var out []*html.Node
	walk(p.root, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag {
			out = append(out, n)
		}
	})
	return out
}

// renderSample writes a report of the sample results over a generated history with faults and
// ISR samples, and parses it. With -artifacts the files stay for a look (go test -run
// TestReportHTML -artifacts -outputdir DIR).
func renderSample(t *testing.T) (page, string) {
	t.Helper()
	dir := t.ArtifactDir()
	hist, cfg := sampleHistory(t, dir)
	cfg.Client = &history.ClientInfo{Name: "franz-go", Version: "v1.22.3", TxnProtocol: "v2"}
	cfg.Kafka = &history.KafkaInfo{Version: "4.1.2", Features: kafkaconf.FeatureLevels{"transaction.version": 2, "metadata.version": 27}}
	res := sampleResults(hist, cfg)
	res.BrokerMetrics = writeTestMetrics(t, dir)
	w, err := Write(context.Background(), dir, res, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Warnings) > 0 {
		t.Errorf("warnings: %v", w.Warnings)
	}
	return parsePage(t, w.HTML), dir
}

// sampleHistory writes a generated history with faults and ISR samples into dir and returns
// its path and its header's config.
func sampleHistory(t *testing.T, dir string) (string, history.Config) {
	t.Helper()
	hist := filepath.Join(dir, "history.jsonl")
	writeTestHistory(t, hist, 30000, 5)
	r, err := history.Open(hist)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return hist, r.Header().Config
}

// writeTestMetrics writes a metrics.jsonl of 3 nodes over 30 s (node 2 stopped from 10 s to
// 15 s, a counter that restarts) and returns results that name it, with one silent alert.
func writeTestMetrics(t *testing.T, dir string) *results.BrokerMetrics {
	t.Helper()
	w, err := metrics.Create(filepath.Join(dir, "metrics.jsonl"), metrics.Header{IntervalMS: 1000, Source: "test", Metrics: metrics.All()})
	if err != nil {
		t.Fatal(err)
	}
	for ms := int64(0); ms <= 30_000; ms += 1000 {
		for node := 1; node <= 3; node++ {
			s := metrics.Sample{TimeMS: ms, Node: node, Values: map[metrics.Name]float64{
				metrics.UnderReplicated: float64(ms / 10_000), metrics.ISRShrinks: float64(ms / 3000)}}
			if node == 2 && ms >= 10_000 && ms < 15_000 {
				s = metrics.Sample{TimeMS: ms, Node: node, Error: "stopped"}
			}
			if node == 2 && ms >= 15_000 {
				s.Values[metrics.ISRShrinks] = float64((ms - 15_000) / 3000)
			}
			if err := w.Write(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &results.BrokerMetrics{File: "metrics.jsonl", Source: "test", IntervalMS: 1000, Samples: 93, Unanswered: 5,
		Alerts: metrics.Outcome{Checked: 2, Fired: 1, Findings: []metrics.Finding{{Metric: metrics.UnderMinISR, Node: 1,
			Topic: "t", FromMS: 2000, ToMS: 9000, Samples: 5, Ops: []int64{4, 7}, Text: "UnderMinIsrPartitionCount stayed 0"}}}}
}

func TestReportHTML(t *testing.T) {
	p, dir := renderSample(t)
	opsPage, err := os.ReadFile(filepath.Join(dir, OpsFile))
	if err != nil {
		t.Fatalf("the ops page: %v", err)
	}
	linked, files := 0, 0

	for _, id := range []string{"verdict", "verdict-value", "seed", "summary", "throughput", "latency", "faults", "partitions", "anomalies", "config", "broker-metrics"} {
		if p.byID(id) == nil {
			t.Errorf("no element with id %q", id)
		}
	}
	if got := text(p.byID("verdict-value")); got != "fail" {
		t.Errorf("verdict shows %q", got)
	}
	if got := text(p.byID("seed")); got != fmt.Sprint(testSeed) {
		t.Errorf("seed shows %q", got)
	}
	if got := text(p.byID("client")); got != "franz-go v1.22.3, transactions v2" {
		t.Errorf("client shows %q", got)
	}
	if got := text(p.byID("kafka")); got != "4.1.2 (transaction.version=2, eligible.leader.replicas.version=0)" {
		t.Errorf("kafka shows %q", got)
	}
	if !strings.Contains(text(p.elements("title")[0]), "fail") {
		t.Error("the title does not carry the verdict")
	}

	// Broker metrics: a plot for each metric some node has (two here), and the silent alert
	// with its ops linked to their section of ops.html.
	bm := p.byID("broker-metrics")
	plots := 0
	walk(bm, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "img" {
			plots++
		}
	})
	if plots != 2 {
		t.Errorf("broker metrics: %d plots, want 2 (under-replicated, ISR shrinks)", plots)
	}
	if got := text(p.byID("alert-findings")); !strings.Contains(got, "UnderMinIsrPartitionCount stayed 0") || !strings.Contains(got, "4, 7") {
		t.Errorf("silent alert shows %q", got)
	}
	if !strings.Contains(p.raw, `href="ops.html#broker-metrics-0"`) || !bytes.Contains(opsPage, []byte(`id="broker-metrics-0"`)) {
		t.Error("the silent alert's ops do not link to their section of ops.html")
	}

	// Every example's op indices are in the anomaly table, with their family.
	res := sampleResults("", history.Config{})
	anomalies := text(p.byID("anomalies"))
	for name, a := range res.Anomalies {
		if a.Count == 0 && a.Unchecked == "" {
			if !strings.Contains(anomalies, "None found:") || !strings.Contains(anomalies, string(name)) {
				t.Errorf("family %s with no finding is not listed as none found", name)
			}
			continue
		}
		row := p.byID("anomaly-" + string(name))
		if row == nil {
			t.Errorf("no row for %s", name)
			continue
		}
		for _, e := range a.Examples {
			want := "ops " + joinInts(e.Ops)
			if !strings.Contains(text(row), want) {
				t.Errorf("row of %s lacks %q: %s", name, want, text(row))
			}
		}
	}
	for name, want := range map[string]string{"lost-write": "forbidden", "duplicate": "permitted", "reorder": "not judged", "eos-missing": "not checked"} {
		if row := p.byID("anomaly-" + name); row == nil || !strings.Contains(text(row), want) {
			t.Errorf("%s is not shown as %s", name, want)
		}
	}

	// Self-contained: no script, stylesheet link or external reference.
	if strings.Contains(p.raw, "http://") || strings.Contains(p.raw, "https://") {
		t.Error("the page contains an http(s) URL")
	}
	for _, tag := range []string{"script", "link", "iframe", "object", "embed"} {
		if n := len(p.elements(tag)); n > 0 {
			t.Errorf("%d <%s> elements", n, tag)
		}
	}
	walk(p.root, func(n *html.Node) {
		for _, a := range n.Attr {
			switch a.Key {
			case "src":
				if !strings.HasPrefix(a.Val, "data:image/svg+xml;base64,") {
					t.Errorf("<%s src=%.60q>: not an inline image", n.Data, a.Val)
				}
			case "href", "action", "srcset", "data", "poster":
				// Links stay on the page, or go to the ops page written beside it, to a
				// section it has.
				if id, ok := strings.CutPrefix(a.Val, OpsFile+"#"); ok && a.Key == "href" {
					linked++
					if !strings.Contains(string(opsPage), `<section id="`+id+`">`) {
						t.Errorf("%s links to %s, which %s lacks", a.Val, id, OpsFile)
					}
					continue
				}
				// or to one of the run's files in its folder, which must be there.
				if a.Key == "href" && !strings.Contains(a.Val, ":") && !strings.HasPrefix(a.Val, "/") && !strings.Contains(a.Val, "..") && !strings.HasPrefix(a.Val, "#") {
					if _, err := os.Stat(filepath.Join(dir, a.Val)); err != nil {
						t.Errorf("<a href=%q>: no such file beside the page", a.Val)
					}
					files++
					continue
				}
				if !strings.HasPrefix(a.Val, "#") {
					t.Errorf("<%s %s=%q>: an external reference", n.Data, a.Key, a.Val)
				}
			}
		}
	})

	// The first lost-write example (ops 120 and 4410) has its section, with both ops marked.
	sec := string(opsPage)[strings.Index(string(opsPage), `<section id="lost-write-0">`):]
	sec = sec[:strings.Index(sec, "</section>")]
	for _, i := range []string{"120", "4410"} {
		if !strings.Contains(sec, `<tr class="proof"><td class="num">`+i+`</td>`) {
			t.Errorf("section lost-write-0 does not mark op %s", i)
		}
	}
	// The ops around each proving op, the last one's too: 4398..4422, not the 400 after 120.
	for _, i := range []string{"4400", "4420", "108", "132"} {
		if !strings.Contains(sec, `<td class="num">`+i+`</td>`) {
			t.Errorf("section lost-write-0 lacks op %s, around a proving op", i)
		}
	}
	if strings.Contains(sec, `<td class="num">200</td>`) {
		t.Error("section lost-write-0 shows op 200, far from both proving ops")
	}
	if strings.Count(sec, "<tr") > 1+maxOpsShown+2 { // the header, the ops kept, the two that prove it
		t.Errorf("section lost-write-0 has %d rows, more than %d ops", strings.Count(sec, "<tr")-1, maxOpsShown)
	}
	if files < 2 {
		t.Errorf("the page links %d of the run's files; want the history and junit.xml", files)
	}
	if linked == 0 {
		t.Error("no example links to the ops around it")
	}
	if strings.Contains(string(opsPage), "http://") || strings.Contains(string(opsPage), "<script") {
		t.Error("the ops page is not self-contained")
	}

	// Plots: throughput, errors, latency, one per partition and two broker metrics, each a real SVG.
	imgs := p.elements("img")
	if len(imgs) != 8 {
		t.Errorf("%d plots, want 8 (throughput, errors, latency, 3 partitions, 2 broker metrics)", len(imgs))
	}
	for _, img := range imgs {
		src, _ := attr(img, "src")
		svg, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(src, "data:image/svg+xml;base64,"))
		if err != nil || !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("</svg>")) {
			t.Errorf("plot is not an SVG: %v %.80q", err, svg)
		}
		dec := xml.NewDecoder(bytes.NewReader(svg))
		for {
			if _, err := dec.Token(); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Errorf("plot SVG is not well-formed XML: %v", err)
				}
				break
			}
		}
	}

	faults := text(p.byID("faults"))
	for _, want := range []string{"isolate [2]", "latency [1 3]", "disk-loss [3]", "pause [1]", "heal-all", "itself", "1→2"} {
		if !strings.Contains(faults, want) {
			t.Errorf("fault table lacks %q", want)
		}
	}
	if strings.Contains(faults, "bridge") {
		t.Error("fault table shows a bridge that never happened")
	}
	parts := text(p.byID("partitions"))
	if !strings.Contains(parts, "verity-0") || !strings.Contains(parts, "verity-2") {
		t.Errorf("partition table: %s", parts)
	}
	cfg := text(p.byID("config"))
	for _, want := range []string{"replica.lag.time.max.ms=10000", "replication.factor=3", "min.insync.replicas=2", "retries=2147483647", `"scenario": "histgen"`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config section lacks %q", want)
		}
	}
	summary := text(p.byID("summary"))
	for _, want := range []string{"p99 41.0 ms", "1234.0 ms", "verity-0", "send"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}

// A report whose history cannot be read still shows the results, and says why there are no
// plots.
func TestReportWithoutHistory(t *testing.T) {
	dir := t.TempDir()
	r := sampleResults(filepath.Join(dir, "missing.jsonl"), history.Config{})
	w, err := Write(context.Background(), dir, r, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Warnings) != 1 || !strings.Contains(w.Warnings[0], "missing.jsonl") {
		t.Errorf("warnings %v", w.Warnings)
	}
	p := parsePage(t, w.HTML)
	if len(p.elements("img")) != 0 || !strings.Contains(p.raw, "missing.jsonl") || text(p.byID("verdict-value")) != "fail" {
		t.Error("page without history is wrong")
	}
	if _, err := os.Stat(w.JUnit); err != nil {
		t.Errorf("junit.xml not written: %v", err)
	}
}

// Results text is escaped, never markup.
func TestReportEscapes(t *testing.T) {
	dir := t.TempDir()
	r := sampleResults("", history.Config{})
	r.Scenario = `<script>alert(1)</script>`
	r.Notes = []string{`<img src="http://example.invalid/x.png">`}
	w, err := Write(context.Background(), dir, r, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := parsePage(t, w.HTML)
	if len(p.elements("script")) > 0 || len(p.elements("img")) > 0 {
		t.Error("results text became markup")
	}
}

// The page opens in headless Chromium (Debian's package, scripts/chromium.sh) without a console
// message, and on a failing run the evidence comes before the first plot. Skipped under -short
// and where Chromium is missing outside CI; under CI a missing Chromium fails.
func TestReportOpensInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; skipped under -short")
	}
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if harnesstest.IsCI(os.Getenv("CI")) {
			t.Fatalf("CI=%s and chromium is not installed: make test installs it (scripts/chromium.sh)", os.Getenv("CI"))
		}
		t.Skip("chromium is not installed (scripts/chromium.sh, or make test, installs it)")
	}
	_, dir := renderSample(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+t.TempDir(),
		"--enable-logging=stderr", "--log-level=0", "--dump-dom", "file://"+filepath.Join(dir, HTMLFile))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	dom := stdout.String()
	if !strings.Contains(dom, `id="verdict-value"`) || strings.Count(dom, "<img") != 8 {
		t.Errorf("the DOM chromium loaded lacks the verdict or the plots:\n%.500s", dom)
	}
	if ev, img := strings.Index(dom, `id="anomalies"`), strings.Index(dom, "<img"); ev < 0 || ev > img {
		t.Errorf("a failing run's evidence (at %d) must come before the first plot (at %d)", ev, img)
	}
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, ":CONSOLE") {
			t.Errorf("console message: %s", l)
		}
	}
}

// A family whose forbidden findings a known issue explains says so, and what the issue is; the
// findings stay forbidden.
func TestReportNamesKnownIssues(t *testing.T) {
	r := &results.Results{Verdict: results.Fail, Anomalies: map[guarantee.Anomaly]results.Anomaly{
		guarantee.Duplicate: {Count: 6, Forbidden: 6, Known: 6, KnownIssues: []guarantee.KnownIssue{guarantee.ResendAfterSnapshotReload},
			Judgement: guarantee.Forbidden, Why: "enable.idempotence=true"},
		guarantee.LostWrite: {Count: 1, Forbidden: 1, Judgement: guarantee.Forbidden, Why: "acks=all"},
	}}
	views, _ := anomalyViews(r, nil)
	for _, v := range views {
		switch v.Name {
		case string(guarantee.Duplicate):
			k, _ := guarantee.LookupKnown(guarantee.ResendAfterSnapshotReload)
			if v.Class != "forbidden" || len(v.Known) != 2 || !strings.HasPrefix(v.Known[0], "6 of the forbidden") || !strings.Contains(v.Known[1], k.About) {
				t.Errorf("duplicate: class %s, known %q", v.Class, v.Known)
			}
		case string(guarantee.LostWrite):
			if v.Known != nil {
				t.Errorf("lost-write names known issues %q", v.Known)
			}
		}
	}
}
