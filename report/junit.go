package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// JUnit document types, in the shape CI tools (Jenkins, GitLab, GitHub test reporters) read.
type (
	// JUnitSuites is the document root.
	JUnitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Skipped  int          `xml:"skipped,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []JUnitSuite `xml:"testsuite"`
	}
	// JUnitSuite is one run.
	JUnitSuite struct {
		Name       string          `xml:"name,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Skipped    int             `xml:"skipped,attr"`
		Time       string          `xml:"time,attr"`
		Properties []JUnitProperty `xml:"properties>property,omitempty"`
		Cases      []JUnitCase     `xml:"testcase"`
	}
	// JUnitProperty is a name and value.
	JUnitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	// JUnitCase is one test case: passed when it has no failure, error or skipped element.
	JUnitCase struct {
		Name       string          `xml:"name,attr"`
		Classname  string          `xml:"classname,attr"`
		Time       string          `xml:"time,attr"`
		Properties []JUnitProperty `xml:"properties>property,omitempty"`
		Failure    *JUnitMessage   `xml:"failure,omitempty"`
		Error      *JUnitMessage   `xml:"error,omitempty"`
		Skipped    *JUnitMessage   `xml:"skipped,omitempty"`
		SystemOut  string          `xml:"system-out,omitempty"`
	}
	// JUnitMessage is a failure, error or skip with its text.
	JUnitMessage struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",chardata"`
	}
)

// Families returns the anomaly families a report lists for r: every family of the guarantee
// table in its order, then any other name r carries, sorted.
func Families(r *results.Results) []guarantee.Anomaly {
	out := guarantee.Anomalies()
	for _, k := range slices.Sorted(maps.Keys(r.Anomalies)) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// JUnit builds the junit.xml of one checked run: a test case per anomaly family — failed when
// the family has forbidden findings, skipped (with its count and reason) when its findings are
// permitted or not judged or it could not be checked, passed otherwise — and one for the
// verdict: failed on fail, an error on unknown (the run could not be checked, which must not
// look green), and one for the stated liveness bounds (livenessCase). The seed is a property of
// the suite and of every case.
func JUnit(r *results.Results) *JUnitSuites {
	class := "verity." + r.Scenario
	if !r.FromVerityRun() {
		class = "verity.history"
	}
	seed := strconv.FormatInt(r.Seed, 10)
	seedProp := JUnitProperty{Name: "seed", Value: seed}
	total := r.Timings.ClusterReadyS + r.Timings.RunS + r.Timings.CheckS
	s := JUnitSuite{
		Name: class,
		Time: fmt.Sprintf("%.3f", total),
		Properties: []JUnitProperty{
			{Name: "scenario", Value: r.Scenario}, seedProp, {Name: "verdict", Value: string(r.Verdict)},
			{Name: "client", Value: ClientText(r)},
			{Name: "kafka", Value: KafkaText(r)},
		},
	}
	for _, d := range r.Deviations {
		s.Properties = append(s.Properties, JUnitProperty{Name: "deviation", Value: d})
	}
	for _, f := range r.Faults {
		s.Properties = append(s.Properties, JUnitProperty{Name: "fault", Value: f})
	}

	verdict := JUnitCase{Name: "verdict", Classname: class, Time: fmt.Sprintf("%.3f", r.Timings.CheckS),
		Properties: []JUnitProperty{seedProp, {Name: "verdict", Value: string(r.Verdict)}}}
	switch r.Verdict {
	case results.Fail:
		var parts []string
		for _, name := range Families(r) {
			if n := r.Anomalies[name].ForbiddenCount(); n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, name))
			}
		}
		text := fmt.Sprintf("scenario %s, seed %d: rerun with --seed %d", r.Scenario, r.Seed, r.Seed)
		if !r.FromVerityRun() {
			text = "not written by a Verity run, so there is no run to repeat; judged from the history alone: " + checkCommand(r)
		}
		verdict.Failure = &JUnitMessage{Type: "verdict", Message: "a documented guarantee was violated: " + strings.Join(parts, ", "), Text: text}
	case results.Pass:
	default:
		verdict.Error = &JUnitMessage{Type: "verdict", Message: "verdict " + string(r.Verdict) + ": the run could not be checked" + causesText(r.UnknownCauses),
			Text: strings.Join(r.UnknownReasons, "\n")}
	}
	s.Cases = append(s.Cases, verdict)
	if c, ok := livenessCase(r, class, seedProp); ok {
		s.Cases = append(s.Cases, c)
	}

	for _, name := range Families(r) {
		a, found := r.Anomalies[name]
		c := JUnitCase{Name: "anomaly/" + string(name), Classname: class, Time: "0",
			Properties: []JUnitProperty{seedProp, {Name: "count", Value: strconv.Itoa(a.Count)}}}
		if found {
			c.Properties = append(c.Properties, JUnitProperty{Name: "judgement", Value: a.Judgement.String()})
		}
		if found && a.Why != "" {
			c.Properties = append(c.Properties, JUnitProperty{Name: "why", Value: a.Why})
		}
		switch n := a.ForbiddenCount(); {
		case a.Unchecked != "":
			c.Skipped = &JUnitMessage{Message: "not checked: " + a.Unchecked}
		case n > 0:
			c.Failure = &JUnitMessage{Type: string(name), Message: fmt.Sprintf("%d forbidden: %s", n, a.Why), Text: examplesText(a)}
		case a.Count > 0 && a.Judgement == guarantee.Unknown:
			c.Skipped = &JUnitMessage{Message: fmt.Sprintf("%d found, not judged: %s", a.Count, a.Why)}
			c.SystemOut = examplesText(a)
		case a.Count > 0:
			c.Skipped = &JUnitMessage{Message: fmt.Sprintf("%d found, permitted: %s", a.Count, a.Why)}
			c.SystemOut = examplesText(a)
		}
		s.Cases = append(s.Cases, c)
	}
	s.tally()
	return &JUnitSuites{Name: "verity", Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Skipped: s.Skipped,
		Time: s.Time, Suites: []JUnitSuite{s}}
}

// livenessCase is the case of the stated liveness bounds: failed (type "liveness", the
// breaches as message) when one was broken, an error when they could not be judged (as the
// verdict's unknown: it must not look green), skipped when none was stated; none for results
// written before liveness was judged.
func livenessCase(r *results.Results, class string, seed JUnitProperty) (JUnitCase, bool) {
	l := r.Liveness
	if l == nil {
		return JUnitCase{}, false
	}
	c := JUnitCase{Name: "liveness", Classname: class, Time: "0",
		Properties: []JUnitProperty{seed, {Name: "liveness_verdict", Value: string(l.Verdict)}}}
	for _, b := range BoundsText(l.Bounds.LivenessBounds) {
		c.Properties = append(c.Properties, JUnitProperty{Name: "bound", Value: b})
	}
	switch l.Verdict {
	case results.LivenessFail:
		c.Failure = &JUnitMessage{Type: "liveness", Message: strings.Join(l.Breaches(), "; "), Text: livenessText(l)}
	case results.LivenessUnknown:
		c.Error = &JUnitMessage{Type: "liveness", Message: "the stated liveness bounds could not be judged", Text: strings.Join(l.Reasons, "\n")}
	case results.LivenessNotStated:
		c.Skipped = &JUnitMessage{Message: "no liveness bound stated"}
		c.SystemOut = livenessText(l)
	default:
		c.SystemOut = livenessText(l)
	}
	return c, true
}

// livenessText lists the liveness findings' examples, one a line, and the verdict's reasons.
func livenessText(l *results.Liveness) string {
	var b strings.Builder
	for _, reason := range l.Reasons {
		b.WriteString(reason + "\n")
	}
	for _, f := range results.LivenessFamilies() {
		for _, e := range l.Findings[f].Examples {
			b.WriteString(string(f) + ": " + livenessExampleText(e) + "\n")
		}
	}
	return b.String()
}

// examplesText lists a family's examples, one a line, with the op indices that prove each.
func examplesText(a results.Anomaly) string {
	var b strings.Builder
	for _, e := range a.Examples {
		b.WriteString(exampleText(e))
		b.WriteByte('\n')
	}
	return b.String()
}

func exampleText(e results.Example) string {
	var parts []string
	if e.Value != "" {
		parts = append(parts, "value "+e.Value)
	}
	parts = append(parts, "ops "+joinInts(e.Ops))
	if e.Topic != "" {
		tp := e.Topic
		if e.Partition != nil {
			tp = history.PartitionName(e.Topic, *e.Partition)
		}
		parts = append(parts, tp)
	}
	if len(e.Offsets) > 0 {
		parts = append(parts, "offsets "+joinInts(e.Offsets))
	}
	if e.Process != nil {
		parts = append(parts, "process "+strconv.Itoa(*e.Process))
	}
	parts = append(parts, e.Judgement.String())
	if e.Note != "" {
		parts = append(parts, e.Note)
	}
	return strings.Join(parts, " · ")
}

func joinInts[T ~int64 | ~int](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatInt(int64(x), 10)
	}
	return strings.Join(s, ", ")
}

// WriteJUnit writes r's junit.xml to w.
func WriteJUnit(w io.Writer, r *results.Results) error { return writeXML(w, JUnit(r)) }

// MatrixJUnit is one document over a matrix's runs: each run's suite (JUnit), named by its cell
// and run so that CI tools list them apart, with the axes as properties.
// Each run in missing ("cell run k: why") gets a suite of its own with one error case, so that
// a run that did not complete shows in CI as an error, not as nothing.
func MatrixJUnit(name string, cells []Cell, missing []string) *JUnitSuites {
	doc := &JUnitSuites{Name: name}
	defer func() {
		for _, m := range missing {
			label, why, _ := strings.Cut(m, ": ")
			s := JUnitSuite{Name: "verity [" + label + "]", Tests: 1, Errors: 1, Time: "0",
				Cases: []JUnitCase{{Name: "verdict", Classname: "verity [" + label + "]", Time: "0",
					Error: &JUnitMessage{Type: "incomplete", Message: "the run did not complete: " + why}}}}
			doc.Tests++
			doc.Errors++
			doc.Suites = append(doc.Suites, s)
		}
	}()
	total := 0.0
	for _, c := range cells {
		one := JUnit(c.Results)
		for _, s := range one.Suites {
			for _, a := range c.Axes {
				s.Properties = append(s.Properties, JUnitProperty{Name: "axis." + a.Name, Value: a.Value})
			}
			s.Name = fmt.Sprintf("%s [%s] run %d", s.Name, AxesLabel(c.Axes), c.Run)
			for i := range s.Cases {
				s.Cases[i].Classname = s.Name
			}
			doc.Tests += s.Tests
			doc.Failures += s.Failures
			doc.Errors += s.Errors
			doc.Skipped += s.Skipped
			if t, err := strconv.ParseFloat(s.Time, 64); err == nil {
				total += t
			}
			doc.Suites = append(doc.Suites, s)
		}
	}
	doc.Time = fmt.Sprintf("%.3f", total)
	return doc
}

// WriteMatrixJUnit writes MatrixJUnit's document to w.
func WriteMatrixJUnit(w io.Writer, name string, cells []Cell, missing []string) error {
	return writeXML(w, MatrixJUnit(name, cells, missing))
}

func writeXML(w io.Writer, doc *JUnitSuites) error {
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding junit.xml: %w", err)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("writing junit.xml: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing junit.xml: %w", err)
	}
	return nil
}

// causesText is " (cause, cause)" for a verdict's unknown causes, or "".
func causesText(cs []results.UnknownCause) string {
	if len(cs) == 0 {
		return ""
	}
	return " (" + joinCauses(cs) + ")"
}

// joinCauses names causes: "cluster-not-healthy, nemesis-failed".
func joinCauses(cs []results.UnknownCause) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// tally counts s's cases: tests, and of them failures, errors and skipped.
func (s *JUnitSuite) tally() {
	s.Tests, s.Failures, s.Errors, s.Skipped = 0, 0, 0, 0
	for _, c := range s.Cases {
		s.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
}
