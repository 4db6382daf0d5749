package runner

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func TestJudgeRegression(t *testing.T) {
	r := regressionOf(t, "regress-kafka-17754")
	showing := func(a guarantee.Anomaly, n int, ops ...int64) *Outcome {
		return &Outcome{Dir: "d", Results: &results.Results{Verdict: results.Fail, Seed: 7, Anomalies: map[guarantee.Anomaly]results.Anomaly{
			a: {Count: n + 5, Forbidden: n, Judgement: guarantee.Forbidden, Examples: []results.Example{
				{Ops: []int64{1}, Judgement: guarantee.Permitted}, {Ops: ops, Judgement: guarantee.Forbidden}}}}}}
	}
	// The bug's family, permitted where it was found (a read_uncommitted reader's aborted reads).
	permitted := &Outcome{Dir: "d", Results: &results.Results{Verdict: results.Pass, Anomalies: map[guarantee.Anomaly]results.Anomaly{
		guarantee.AbortedRead: {Count: 40, Judgement: guarantee.Permitted, Examples: []results.Example{{Ops: []int64{3}, Judgement: guarantee.Permitted}}}}}}
	clean := &Outcome{Dir: "d", Results: &results.Results{Verdict: results.Pass}}
	// Another family failing the run is not the bug.
	other := &Outcome{Dir: "d", Results: &results.Results{Verdict: results.Fail, Anomalies: map[guarantee.Anomaly]results.Anomaly{
		guarantee.LostWrite: {Count: 1, Judgement: guarantee.Forbidden}}}}
	run := func(side string, k int, o *Outcome) MatrixRun {
		return MatrixRun{Axes: []report.Axis{{Name: r.Knob, Value: side}}, Run: k, Outcome: o}
	}
	for _, c := range []struct {
		name       string
		runs       []MatrixRun
		reproduced bool
		bad, fixed int
	}{
		{"bad in 2 of 3, fixed clean", []MatrixRun{run(r.Bad, 1, showing(guarantee.AbortedRead, 2, 10, 12)), run(r.Bad, 2, clean),
			run(r.Bad, 3, showing(guarantee.PartialTransaction, 1, 30)), run(r.Fixed, 1, clean), run(r.Fixed, 2, clean), run(r.Fixed, 3, clean)}, true, 2, 0},
		{"permitted findings of the family are not the bug", []MatrixRun{run(r.Bad, 1, showing(guarantee.AbortedRead, 2, 10)),
			run(r.Bad, 2, showing(guarantee.AbortedRead, 1, 11)), run(r.Bad, 3, permitted),
			run(r.Fixed, 1, permitted), run(r.Fixed, 2, permitted), run(r.Fixed, 3, clean)}, true, 2, 0},
		{"bad in 1 of 3", []MatrixRun{run(r.Bad, 1, showing(guarantee.AbortedRead, 2, 10)), run(r.Bad, 2, clean), run(r.Bad, 3, other),
			run(r.Fixed, 1, clean), run(r.Fixed, 2, clean), run(r.Fixed, 3, clean)}, false, 1, 0},
		{"fixed side shows it once", []MatrixRun{run(r.Bad, 1, showing(guarantee.AbortedRead, 2, 10)), run(r.Bad, 2, showing(guarantee.AbortedRead, 1, 5)),
			run(r.Fixed, 1, clean), run(r.Fixed, 2, showing(guarantee.AbortedRead, 1, 40))}, false, 2, 1},
		{"fixed side fails otherwise", []MatrixRun{run(r.Bad, 1, showing(guarantee.AbortedRead, 2, 10)), run(r.Fixed, 1, other)}, false, 1, 0},
		{"a fixed run that did not complete", []MatrixRun{run(r.Bad, 1, showing(guarantee.AbortedRead, 2, 10)),
			{Axes: []report.Axis{{Name: r.Knob, Value: r.Fixed}}, Run: 1, Err: errors.New("cluster did not start")}}, false, 1, 0},
		{"no runs", nil, false, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := JudgeRegression(r, c.runs)
			if got.Reproduced != c.reproduced || got.Bad.Showed != c.bad || got.Fixed.Showed != c.fixed {
				t.Errorf("reproduced %v, bad %d, fixed %d; want %v, %d, %d\n%s", got.Reproduced, got.Bad.Showed, got.Fixed.Showed,
					c.reproduced, c.bad, c.fixed, got)
			}
			if c.bad > 0 && (got.Bad.Example == nil || len(got.Bad.Example.Ops) == 0 || got.Bad.Example.Ops[0] == 1) {
				t.Errorf("the bad side's finding carries no forbidden example's op indices: %+v", got.Bad.Example)
			}
			want := "found again"
			if !c.reproduced {
				want = "NOT found again"
			}
			if !strings.Contains(got.String(), want) {
				t.Errorf("String() does not say %q:\n%s", want, got)
			}
		})
	}
}

func TestRegressionAxes(t *testing.T) {
	r := regressionOf(t, "regress-kafka-17754")
	axes := RegressionAxes(r)
	if len(axes) != 1 || axes[0].Name != r.Knob || !slices.Equal(axes[0].Values, []string{r.Bad, r.Fixed}) {
		t.Fatalf("axes %+v", axes)
	}
	if !slices.Contains(AxisNames(), r.Knob) {
		t.Errorf("knob %s is not an axis", r.Knob)
	}
}

func regressionOf(t *testing.T, name string) scenarios.Regression {
	t.Helper()
	s, err := scenarios.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	if s.Regression == nil {
		t.Fatalf("%s has no regression section", name)
	}
	return *s.Regression
}
