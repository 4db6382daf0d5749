package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"github.com/verity-kafka/verity/history"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func parseJUnit(t *testing.T, r *results.Results) JUnitSuites {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "<?xml") {
		t.Error("no XML declaration")
	}
	var doc JUnitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, buf.String())
	}
	return doc
}

func prop(ps []JUnitProperty, name string) string {
	for _, p := range ps {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// A test case fails exactly when its family has forbidden findings; the verdict case fails
// exactly on a fail verdict and errs on unknown; permitted, unjudged and unchecked families
// are skipped; the seed is everywhere.
func TestJUnit(t *testing.T) {
	failing := sampleResults("", history.Config{})
	passing := sampleResults("", history.Config{})
	passing.Verdict = results.Pass
	delete(passing.Anomalies, "lost-write")
	unknown := sampleResults("", history.Config{})
	unknown.Verdict = results.Unknown
	unknown.UnknownReasons = []string{"final reads of verity-3 are incomplete"}
	delete(unknown.Anomalies, "lost-write")
	split := sampleResults("", history.Config{}) // one family judged by two rows
	split.Anomalies["lost-write"] = results.Anomaly{Count: 5, Forbidden: 2, Judgement: guarantee.Forbidden,
		ByRule:   []results.RuleCount{{Count: 3, Judgement: guarantee.Permitted, Why: "acks=1"}, {Count: 2, Judgement: guarantee.Forbidden, Why: "acks=all"}},
		Examples: []results.Example{{Value: "1-1", Ops: []int64{1, 2}}}}
	legacy := sampleResults("", history.Config{}) // results with only the fields results.md requires
	legacy.Anomalies["lost-write"] = results.Anomaly{Count: 1, Judgement: guarantee.Forbidden, Why: "w", Examples: []results.Example{{Ops: []int64{7}}}}
	legacy.Anomalies["duplicate"] = results.Anomaly{Count: 4, Judgement: guarantee.Permitted, Why: "p"}
	extra := sampleResults("", history.Config{}) // a family the guarantee catalogue does not list still gets a case
	extra.Anomalies["not-in-catalogue"] = results.Anomaly{Count: 1, Judgement: guarantee.Permitted, Why: "w"}

	cases := []struct {
		name        string
		r           *results.Results
		failed      map[string]bool // anomaly families with a failure
		verdictFail bool
		verdictErr  bool
	}{
		{"fail", failing, map[string]bool{"lost-write": true}, true, false},
		{"pass", passing, nil, false, false},
		{"unknown", unknown, nil, false, true},
		{"split by rule", split, map[string]bool{"lost-write": true}, true, false},
		{"fields of results.md only", legacy, map[string]bool{"lost-write": true}, true, false},
		{"family outside the catalogue", extra, map[string]bool{"lost-write": true}, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := parseJUnit(t, c.r)
			if len(doc.Suites) != 1 {
				t.Fatalf("%d suites", len(doc.Suites))
			}
			s := doc.Suites[0]
			seed := fmt.Sprint(testSeed)
			if prop(s.Properties, "seed") != seed || prop(s.Properties, "verdict") != string(c.r.Verdict) || prop(s.Properties, "scenario") != c.r.Scenario ||
				prop(s.Properties, "client") != ClientText(c.r) || prop(s.Properties, "client") == "" {
				t.Errorf("suite properties %+v", s.Properties)
			}
			// The cases expected, worked out here rather than by Families (the code under test):
			// the verdict first, then one case for each family of the guarantee catalogue and for
			// each family the results name, each once.
			want := map[string]bool{"verdict": true}
			for _, a := range guarantee.Anomalies() {
				want["anomaly/"+string(a)] = true
			}
			for name := range c.r.Anomalies {
				want["anomaly/"+string(name)] = true
			}
			got := map[string]bool{}
			for _, tc := range s.Cases {
				if got[tc.Name] {
					t.Errorf("case %s appears twice", tc.Name)
				}
				got[tc.Name] = true
			}
			if len(s.Cases) != len(want) || !maps.Equal(got, want) {
				t.Errorf("cases %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
			}
			if len(s.Cases) == 0 || s.Cases[0].Name != "verdict" {
				t.Errorf("the verdict case should come first")
			}
			failures, skipped, errs := 0, 0, 0
			for _, tc := range s.Cases {
				if prop(tc.Properties, "seed") != seed {
					t.Errorf("case %s has no seed property", tc.Name)
				}
				switch {
				case tc.Failure != nil:
					failures++
				case tc.Error != nil:
					errs++
				case tc.Skipped != nil:
					skipped++
				}
				if tc.Name == "verdict" {
					if (tc.Failure != nil) != c.verdictFail || (tc.Error != nil) != c.verdictErr {
						t.Errorf("verdict case %+v", tc)
					}
					continue
				}
				family := strings.TrimPrefix(tc.Name, "anomaly/")
				a, found := c.r.Anomalies[guarantee.Anomaly(family)]
				if got := tc.Failure != nil; got != c.failed[family] {
					t.Errorf("%s: failure %t, want %t (%+v)", family, got, c.failed[family], a)
				}
				if tc.Failure != nil {
					for _, e := range a.Examples {
						if !strings.Contains(tc.Failure.Text, "ops "+joinInts(e.Ops)) {
							t.Errorf("%s failure lacks the op indices %v", family, e.Ops)
						}
					}
				}
				wantSkip := tc.Failure == nil && (a.Unchecked != "" || a.Count > 0)
				if (tc.Skipped != nil) != wantSkip {
					t.Errorf("%s: skipped %v, want %t", family, tc.Skipped, wantSkip)
				}
				if found && prop(tc.Properties, "judgement") != a.Judgement.String() {
					t.Errorf("%s: judgement property %q, want %s", family, prop(tc.Properties, "judgement"), a.Judgement)
				}
				if prop(tc.Properties, "count") != fmt.Sprint(a.Count) {
					t.Errorf("%s: count property %q, want %d", family, prop(tc.Properties, "count"), a.Count)
				}
			}
			if s.Tests != len(s.Cases) || s.Failures != failures || s.Skipped != skipped || s.Errors != errs ||
				doc.Tests != s.Tests || doc.Failures != s.Failures {
				t.Errorf("counts: suite %d/%d/%d/%d, cases %d/%d/%d/%d", s.Tests, s.Failures, s.Errors, s.Skipped, len(s.Cases), failures, errs, skipped)
			}
		})
	}
}

// A broken stated bound fails the liveness case with type liveness and the breaches as message;
// the safety verdict's case stays green; results without liveness get no liveness case.
func TestJUnitLiveness(t *testing.T) {
	r := sampleResults("", history.Config{})
	r.Verdict = results.Pass
	delete(r.Anomalies, "lost-write")
	r.Liveness = sampleLiveness()
	doc := parseJUnit(t, r)
	var live, verdict *JUnitCase
	for i, c := range doc.Suites[0].Cases {
		switch c.Name {
		case "liveness":
			live = &doc.Suites[0].Cases[i]
		case "verdict":
			verdict = &doc.Suites[0].Cases[i]
		}
	}
	if live == nil || live.Failure == nil {
		t.Fatalf("liveness case %+v", live)
	}
	if live.Failure.Type != "liveness" || live.Failure.Message != "max_stall 25s broken: 40.0 s without progress, more than max_stall 25s" {
		t.Errorf("failure %+v", live.Failure)
	}
	if !strings.Contains(live.Failure.Text, "ops 120, 130") || prop(live.Properties, "bound") != "max_stall 25s" {
		t.Errorf("failure text %q, properties %+v", live.Failure.Text, live.Properties)
	}
	if verdict == nil || verdict.Failure != nil || verdict.Error != nil {
		t.Errorf("verdict case %+v", verdict)
	}
	if doc.Failures != 1 {
		t.Errorf("%d failures, want the liveness one", doc.Failures)
	}

	r.Liveness.Verdict = results.LivenessUnknown
	if c := findCase(parseJUnit(t, r), "liveness"); c == nil || c.Error == nil {
		t.Errorf("unknown liveness: %+v", c)
	}
	r.Liveness = nil
	if c := findCase(parseJUnit(t, r), "liveness"); c != nil {
		t.Errorf("results without liveness have a liveness case %+v", c)
	}
}

func findCase(doc JUnitSuites, name string) *JUnitCase {
	for i, c := range doc.Suites[0].Cases {
		if c.Name == name {
			return &doc.Suites[0].Cases[i]
		}
	}
	return nil
}
