package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// RegressionAxes are the axes of a regression scenario's 2-cell matrix: its knob at the bad
// value, then at the fixed one.
func RegressionAxes(r scenarios.Regression) []MatrixAxis {
	return []MatrixAxis{{Name: r.Knob, Values: r.Values()}}
}

// RegressionSide is what the runs of one side of a regression showed.
type RegressionSide struct {
	Value string `json:"value"`
	Runs  int    `json:"runs"`
	// Showed counts the runs with one of the bug's anomalies judged forbidden; Passed the runs
	// that passed.
	Showed int `json:"showed"`
	Passed int `json:"passed"`
	// Counts sums each anomaly of the bug judged forbidden over the side's runs.
	Counts map[guarantee.Anomaly]int `json:"counts,omitempty"`
	// Example is the first run that showed one: its directory, anomaly and op indices.
	Example *RegressionExample `json:"example,omitempty"`
}

// RegressionExample is one run's proof of the bug.
type RegressionExample struct {
	Dir     string            `json:"dir"`
	Seed    int64             `json:"seed"`
	Anomaly guarantee.Anomaly `json:"anomaly"`
	Ops     []int64           `json:"ops"`
}

// RegressionResult is a regression matrix's finding: the bug is found again when the bad side
// showed its anomalies in at least two thirds of its runs and the fixed side showed none and
// passed every run.
type RegressionResult struct {
	Bug        string         `json:"bug"`
	Knob       string         `json:"knob"`
	Bad        RegressionSide `json:"bad"`
	Fixed      RegressionSide `json:"fixed"`
	Reproduced bool           `json:"reproduced"`
}

// JudgeRegression reads a matrix's runs as the two sides of regression r. Runs whose knob value
// is neither side's (another axis of the same name cannot exist) are left out.
func JudgeRegression(r scenarios.Regression, runs []MatrixRun) RegressionResult {
	out := RegressionResult{Bug: r.Bug, Knob: r.Knob, Bad: RegressionSide{Value: r.Bad}, Fixed: RegressionSide{Value: r.Fixed}}
	for _, run := range runs {
		var side *RegressionSide
		switch report.AxisValue(run.Axes, r.Knob) {
		case r.Bad:
			side = &out.Bad
		case r.Fixed:
			side = &out.Fixed
		default:
			continue
		}
		side.Runs++
		if run.Err != nil || run.Outcome == nil || run.Outcome.Results == nil {
			continue
		}
		res := run.Outcome.Results
		if res.Verdict == results.Pass {
			side.Passed++
		}
		showed := false
		for _, a := range r.Shows {
			// Only what the guarantee table forbids is the bug: the same family may be
			// permitted elsewhere in the run (an aborted read by a read_uncommitted consumer).
			got := res.Anomalies[a]
			if got.Forbidden == 0 {
				continue
			}
			showed = true
			if side.Counts == nil {
				side.Counts = map[guarantee.Anomaly]int{}
			}
			side.Counts[a] += got.Forbidden
			if side.Example != nil {
				continue
			}
			for _, e := range got.Examples {
				if e.Judgement == guarantee.Forbidden {
					side.Example = &RegressionExample{Dir: run.Outcome.Dir, Seed: res.Seed, Anomaly: a, Ops: slices.Clone(e.Ops)}
					break
				}
			}
		}
		if showed {
			side.Showed++
		}
	}
	out.Reproduced = out.Bad.Runs > 0 && 3*out.Bad.Showed >= 2*out.Bad.Runs &&
		out.Fixed.Runs > 0 && out.Fixed.Showed == 0 && out.Fixed.Passed == out.Fixed.Runs
	return out
}

// String is the finding in a few lines, for the terminal and matrix.md.
func (r RegressionResult) String() string {
	var b strings.Builder
	word := "NOT found again"
	if r.Reproduced {
		word = "found again"
	}
	fmt.Fprintf(&b, "regression %s: %s\n", r.Bug, word)
	for _, s := range []struct {
		name string
		side RegressionSide
	}{{"bad", r.Bad}, {"fixed", r.Fixed}} {
		fmt.Fprintf(&b, "  %-5s side (--%s %s): the bug's anomalies in %d of %d runs, %d passed", s.name, r.Knob, s.side.Value, s.side.Showed, s.side.Runs, s.side.Passed)
		if len(s.side.Counts) > 0 {
			var cs []string
			for _, a := range slices.Sorted(maps.Keys(s.side.Counts)) {
				cs = append(cs, fmt.Sprintf("%s %d", a, s.side.Counts[a]))
			}
			fmt.Fprintf(&b, " (%s)", strings.Join(cs, ", "))
		}
		b.WriteString("\n")
		if e := s.side.Example; e != nil {
			fmt.Fprintf(&b, "        e.g. seed %d: %s at ops %v (%s)\n", e.Seed, e.Anomaly, e.Ops, e.Dir)
		}
	}
	return b.String()
}

// RegressionFile is the file in a regression matrix's directory that holds its finding.
const RegressionFile = "regression.json"

// WriteRegression writes r into dir's regression.json and appends it to matrix.md.
func WriteRegression(dir string, r RegressionResult) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("writing the regression's finding: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, RegressionFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the regression's finding: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "matrix.md"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("adding the regression's finding to matrix.md: %w", err)
	}
	_, werr := fmt.Fprintf(f, "\n## Regression\n\n```\n%s```\n", r.String())
	return errors.Join(werr, f.Close())
}
