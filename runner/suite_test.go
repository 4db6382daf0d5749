package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
	"github.com/verity-kafka/verity/verify/results/schematest"
)

func suiteOf(t *testing.T, names ...string) []scenarios.Resolved {
	t.Helper()
	var out []scenarios.Resolved
	for _, n := range names {
		out = append(out, builtin(t, n))
	}
	return out
}

func clientAxis(values ...string) MatrixAxis { return MatrixAxis{Name: clientKnob, Values: values} }

// cellsByLabel lists a plan's cells as "scenario axes: expectation or why not applicable".
func cellsByLabel(p suitePlan) []string {
	var out []string
	for _, c := range p.cells {
		what := "n/a " + c.notApplicable
		if c.notApplicable == "" {
			what = fmt.Sprintf("%s likely=%v side=%s", c.expect.Verdict, c.expect.Likely, c.expect.Side)
		}
		out = append(out, fmt.Sprintf("%s %s: %s", c.name, report.AxesLabel(c.axes), what))
	}
	return out
}

// Every scenario is crossed with the axes; a client that lacks what a scenario requires makes
// its cell not applicable; a regression adds its knob's two sides; the positive control of
// app-resend is expected under sarama and not under franz-go, which never gives a send up.
func TestSuitePlan(t *testing.T) {
	s := SuiteSpec{Scenarios: suiteOf(t, "default", "app-resend", "idempotent-inflight5-ack-loss", "regress-kip890-hanging-txn"),
		Axes: []MatrixAxis{clientAxis("sarama", "franz-go")}, Runs: 2}
	p, err := s.plan()
	require.NoError(t, err)
	require.Equal(t, []string{
		"default client=sarama: pass likely=[] side=",
		"default client=franz-go: pass likely=[] side=",
		"app-resend client=sarama: pass likely=[duplicate] side=",
		"app-resend client=franz-go: pass likely=[] side=",
		"idempotent-inflight5-ack-loss client=sarama: n/a the scenario requires idempotent-in-flight-5, which sarama lacks",
		"idempotent-inflight5-ack-loss client=franz-go: pass likely=[] side=",
		"regress-kip890-hanging-txn client=sarama,verification=false: pass likely=[] side=bad",
		"regress-kip890-hanging-txn client=sarama,verification=true: pass likely=[] side=fixed",
		"regress-kip890-hanging-txn client=franz-go,verification=false: pass likely=[] side=bad",
		"regress-kip890-hanging-txn client=franz-go,verification=true: pass likely=[] side=fixed",
	}, cellsByLabel(p))
	for i, c := range p.cells {
		require.Equal(t, i, c.index)
		if c.notApplicable == "" {
			require.Equal(t, filepath.Join(c.name, dirName(c.axes)), c.dir)
		}
	}
	franz := p.cells[3]
	require.Len(t, franz.expect.Notes, 1)
	require.Contains(t, franz.expect.Notes[0], "duplicate is likely does not hold with --client=franz-go (it needs idempotent-gives-up of the client, which franz-go lacks)")
	require.Empty(t, franz.scenario.Expect.LikelyNeeds, "no control left to need it")
	require.Equal(t, kafkaconf.FranzGo, franz.scenario.Client.Name)

	// Cells of one shape may share a cluster whichever scenario they belong to.
	cells, _ := p.runnable()
	require.Len(t, cells, 9)
	require.Equal(t, cells[0].shape, cells[2].shape, "default and app-resend share a cluster")
}

// A regression's own knob takes its sides, not the suite's values for that knob; the scenario
// says so.
func TestSuiteRegressionTakesItsKnob(t *testing.T) {
	s := SuiteSpec{Scenarios: suiteOf(t, "regress-kafka-17754"), Axes: []MatrixAxis{clientAxis("sarama", "franz-go@v1.21.6"),
		{Name: "kafka-version", Values: []string{"4.3.1"}}}, Runs: 3}
	p, err := s.plan()
	require.NoError(t, err)
	require.Equal(t, []string{
		"regress-kafka-17754 client=sarama,kafka-version=4.3.1: pass likely=[] side=bad",
		"regress-kafka-17754 client=franz-go,kafka-version=4.3.1: pass likely=[] side=fixed",
	}, cellsByLabel(p))
	require.Contains(t, p.scenarios[0].Note, "its --client takes its sides sarama (bad) and franz-go (fixed)")
}

// A regression is judged over both its sides: where one side does not apply, neither runs.
func TestSuiteRegressionSidesApplyTogether(t *testing.T) {
	r := builtin(t, "regress-kafka-17754")
	r.Requires = []kafkaconf.Capability{kafkaconf.CapTxnProtocolV2} // sarama, the bad side, lacks it
	p, err := SuiteSpec{Scenarios: []scenarios.Resolved{r}, Runs: 3}.plan()
	require.NoError(t, err)
	require.Equal(t, []string{
		"regress-kafka-17754 client=sarama: n/a the scenario requires txn-protocol-v2, which sarama lacks",
		"regress-kafka-17754 client=franz-go: n/a the regression is judged over both sides, and its bad side (--client sarama) does not apply: " +
			"the scenario requires txn-protocol-v2, which sarama lacks",
	}, cellsByLabel(p))
}

// A setting a scenario has no place for makes its cells not applicable; a value no scenario of
// the suite takes is one error naming it, as is an unknown axis.
func TestSuiteSettingsNoScenarioTakes(t *testing.T) {
	s := SuiteSpec{Scenarios: suiteOf(t, "default", "sink-naive"), Axes: []MatrixAxis{{Name: "sink", Values: []string{"naive", "inbox"}}}, Runs: 1}
	p, err := s.plan()
	require.NoError(t, err)
	labels := cellsByLabel(p)
	require.Len(t, labels, 4)
	require.Contains(t, labels[0], "default sink=naive: n/a --sink: the scenario has no sink")
	require.Equal(t, "sink-naive sink=inbox: pass likely=[] side=", labels[3], "inbox de-duplicates: its control is dropped")

	for _, c := range []struct {
		spec SuiteSpec
		want string
	}{
		{SuiteSpec{Scenarios: suiteOf(t, "default"), Axes: []MatrixAxis{{Name: "sink", Values: []string{"naive"}}}},
			"--sink=naive: no scenario of the suite takes it (--sink: the scenario has no sink"},
		{SuiteSpec{Scenarios: suiteOf(t, "default", "sink-naive"), Axes: []MatrixAxis{{Name: "acks", Values: []string{"all", "2"}}}},
			"--acks=2: no scenario of the suite takes it"},
		{SuiteSpec{Scenarios: suiteOf(t, "default"), Set: []scenarios.Setting{{Knob: knob(t, "duration"), Value: "-3s"}}},
			"--duration=-3s: no scenario of the suite takes it"},
		{SuiteSpec{Scenarios: suiteOf(t, "default"), Axes: []MatrixAxis{{Name: "colour", Values: []string{"red"}}}}, `suite axis "colour": want one of`},
		{SuiteSpec{Scenarios: suiteOf(t, "default", "default")}, "scenario default given twice"},
		{SuiteSpec{}, "no scenarios"},
	} {
		err := CheckSuite(c.spec)
		require.ErrorContains(t, err, c.want)
	}
}

func knob(t *testing.T, name string) scenarios.Knob {
	t.Helper()
	k, ok := scenarios.LookupKnob(name)
	require.True(t, ok, name)
	return k
}

// The shards of a suite run every run of the whole suite once, each with the seed and the fresh
// names it has in the whole suite.
func TestSuiteShardsKeepSeeds(t *testing.T) {
	s := SuiteSpec{Scenarios: suiteOf(t, "default", "app-resend", "idempotent-inflight5-ack-loss"), Axes: []MatrixAxis{clientAxis("sarama", "franz-go")},
		Runs: 3, Set: []scenarios.Setting{{Knob: knob(t, "seed"), Value: "40"}}, Out: "/out"}
	p, err := s.plan()
	require.NoError(t, err)
	cells, _ := p.runnable()
	whole := s.manifest(p, unitsOf(cells, s.Runs), nil, nil)
	require.Equal(t, 15, whole.TotalRuns)
	require.Len(t, whole.Runs, 15)
	key := func(r SuiteRun) string {
		return fmt.Sprintf("%d %s %s run %d seed %d cell %d", r.Index, r.Scenario, report.AxesLabel(r.Axes), r.Run, r.Seed, r.Cell)
	}
	var want []string
	for i, r := range whole.Runs {
		require.Equal(t, i, r.Index)
		require.Equal(t, int64(40+r.Run-1), r.Seed)
		want = append(want, key(r))
	}
	for _, n := range []int{2, 4, 7} {
		var got []string
		for k := 1; k <= n; k++ {
			sh := s
			sh.Shard = Shard{K: k, N: n}
			m := sh.manifest(p, sh.Shard.of(unitsOf(cells, s.Runs)), nil, nil)
			require.Equal(t, whole.NotApplicable, m.NotApplicable, "every shard lists the cells that do not apply")
			for _, r := range m.Runs {
				got = append(got, key(r))
			}
		}
		slices.Sort(got)
		sorted := slices.Sorted(slices.Values(want))
		require.Equal(t, sorted, got, "N=%d: every run once, as in the whole suite", n)
	}
}

// fakeOutcome is what a fake run of a scenario found: a fail with forbidden lost writes, a pass
// with or without findings of a family.
func fakeResults(scenario string, seed int64, v results.Verdict, found ...guarantee.Anomaly) *results.Results {
	r := &results.Results{Version: results.Version, Scenario: scenario, Seed: seed, Verdict: v, Anomalies: map[guarantee.Anomaly]results.Anomaly{},
		Timings: results.Timings{RunS: 60}}
	for _, a := range found {
		j := guarantee.Permitted
		an := results.Anomaly{Count: 4, Judgement: j, Why: "permitted here"}
		if v == results.Fail {
			an = results.Anomaly{Count: 3, Forbidden: 3, Judgement: guarantee.Forbidden, Why: "forbidden here",
				Examples: []results.Example{{Ops: []int64{7, 9}, Judgement: guarantee.Forbidden}}}
		}
		r.Anomalies[a] = an
	}
	if v == results.Unknown {
		r.AddUnknown(results.UnknownReason{Cause: results.CauseFinalReadIncomplete, Text: "the final reads did not finish"})
	}
	return r
}

// fakeSuite writes the output of s (or its shard) as RunSuite would, each run's results made by
// found, and returns what writeSuite made of it.
func fakeSuite(t *testing.T, s SuiteSpec, found func(u unit) *results.Results) *SuiteResult {
	t.Helper()
	p, err := s.plan()
	require.NoError(t, err)
	cells, _ := p.runnable()
	units := s.Shard.of(unitsOf(cells, s.Runs))
	var ran []ranUnit
	for _, u := range units {
		dir := filepath.Join(s.Out, u.cell.dir, fmt.Sprintf("run-%d", u.k))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		r := found(u)
		if r == nil {
			ran = append(ran, ranUnit{unit: u, err: errTest})
			continue
		}
		_, err := results.Write(dir, r)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, HistoryFile), []byte("{}\n"), 0o644))
		ran = append(ran, ranUnit{unit: u, outcome: &Outcome{Dir: dir, Results: r, Wall: 75 * time.Second}})
	}
	res, err := writeSuite(s.Out, s.manifest(p, units, ran, nil))
	require.NoError(t, err)
	return res
}

// nightly is a small suite: app-resend's control fires under sarama only (as documented),
// default fails once under franz-go, the hanging-transaction regression is found again.
func nightly(t *testing.T, out string, shard Shard) SuiteSpec {
	return SuiteSpec{Scenarios: suiteOf(t, "default", "app-resend", "idempotent-inflight5-ack-loss", "regress-kip890-hanging-txn"),
		Axes: []MatrixAxis{clientAxis("sarama", "franz-go")}, Runs: 2, Out: out, Shard: shard}
}

func nightlyResults(u unit) *results.Results {
	s := u.cell.scenario
	seed := s.Seed + int64(u.k-1)
	client := report.AxisValue(u.cell.axes, clientKnob)
	switch {
	case s.Name == "default" && client == "franz-go" && u.k == 2:
		return fakeResults(s.Name, seed, results.Fail, guarantee.LostWrite)
	case s.Name == "app-resend" && client == "sarama" && u.k == 1:
		return fakeResults(s.Name, seed, results.Pass, guarantee.Duplicate)
	case s.Regression != nil && report.AxisValue(u.cell.axes, s.Regression.Knob) == s.Regression.Bad:
		return fakeResults(s.Name, seed, results.Fail, guarantee.HangingTransaction)
	}
	return fakeResults(s.Name, seed, results.Pass)
}

func judgements(m SuiteManifest) []string {
	var out []string
	for _, r := range m.Runs {
		s := fmt.Sprintf("%s %s run %d: %s", r.Scenario, report.AxesLabel(r.Axes), r.Run, r.Judgement)
		if r.Why != "" {
			s += " (" + r.Why + ")"
		}
		out = append(out, s)
	}
	return out
}

func TestSuiteJudgesEachRunByItsScenario(t *testing.T) {
	res := fakeSuite(t, nightly(t, t.TempDir(), Shard{}), nightlyResults)
	m := res.Manifest
	require.Equal(t, []string{
		"default client=sarama run 1: met",
		"default client=sarama run 2: met",
		"default client=franz-go run 1: met",
		"default client=franz-go run 2: not-met (expected pass, got fail (3 lost-write forbidden))",
		"app-resend client=sarama run 1: met",
		"app-resend client=sarama run 2: met",
		"app-resend client=franz-go run 1: met",
		"app-resend client=franz-go run 2: met",
		"idempotent-inflight5-ack-loss client=franz-go run 1: met",
		"idempotent-inflight5-ack-loss client=franz-go run 2: met",
		"regress-kip890-hanging-txn client=sarama,verification=false run 1: met",
		"regress-kip890-hanging-txn client=sarama,verification=false run 2: met",
		"regress-kip890-hanging-txn client=sarama,verification=true run 1: met",
		"regress-kip890-hanging-txn client=sarama,verification=true run 2: met",
		"regress-kip890-hanging-txn client=franz-go,verification=false run 1: met",
		"regress-kip890-hanging-txn client=franz-go,verification=false run 2: met",
		"regress-kip890-hanging-txn client=franz-go,verification=true run 1: met",
		"regress-kip890-hanging-txn client=franz-go,verification=true run 2: met",
	}, judgements(m))
	require.Equal(t, report.JudgementNotMet, m.Worst())
	require.Len(t, m.Regressions, 2, "one finding per client")
	require.True(t, m.Regressions[0].Result.Reproduced)
	require.Equal(t, []report.Axis{{Name: "client", Value: "sarama"}}, m.Regressions[0].Axes)
	require.Len(t, m.NotApplicable, 1)

	md := res.Markdown
	for _, want := range []string{
		"| scenario | client | verification | runs | expected | got | anomalies | write availability | wall time | result |",
		"| app-resend | sarama |  | 2 | pass, duplicate likely | pass ×2 | duplicate 4 in 1/2 runs (permitted) |",
		"| app-resend | franz-go |  | 2 | pass (see notes) | pass ×2 | none |",
		"| idempotent-inflight5-ack-loss | sarama |  | 0 | - | - | - | n/a | - | not applicable: the scenario requires idempotent-in-flight-5, which sarama lacks |",
		"| default | franz-go |  | 2 | pass | 1 fail, 1 pass | lost-write 3 in 1/2 runs (forbidden) | 100.0 % | 2m30s | 1 not-met, 1 met: expected pass, got fail (3 lost-write forbidden) |",
		"| regress-kip890-hanging-txn | sarama | false | 2 | the bug (hanging-transaction forbidden) in most runs | fail ×2 |",
		"- app-resend at client=franz-go: the scenario's claim that duplicate is likely does not hold with --client=franz-go (it needs idempotent-gives-up",
		"## Regression regress-kip890-hanging-txn at client=sarama",
		"regression KIP-890 part 1: found again",
		"Runs: 1 not-met, 1 not-applicable, 17 met",
	} {
		require.Contains(t, md, want)
	}
	page, err := os.ReadFile(res.HTMLFile)
	require.NoError(t, err)
	require.Contains(t, string(page), `<a href="app-resend/client=sarama/run-1/report.html">run 1</a>`)
	require.Contains(t, string(page), `<tr class="na">`)
	require.NotContains(t, string(page), "http")

	junit, err := os.ReadFile(res.JUnitFile)
	require.NoError(t, err)
	doc := string(junit)
	require.Equal(t, 18+1, strings.Count(doc, "<testcase "), "a case per run and one per cell that does not apply")
	require.Equal(t, 4, strings.Count(doc, "<testsuite "), "a suite per scenario")
	require.Contains(t, doc, `<testcase name="client=franz-go run 2" classname="verity.default"`)
	require.Contains(t, doc, `<failure message="expected pass, got fail (3 lost-write forbidden)" type="not-met">`)
	require.Contains(t, doc, `<skipped message="not applicable: the scenario requires idempotent-in-flight-5, which sarama lacks"`)
	require.Contains(t, doc, `tests="19" failures="1" errors="0" skipped="1"`)
}

// A positive control that fires in no run of its cell is not met, whatever the verdicts; a
// regression not found again is not met on both sides; a run that did not complete is
// incomplete and an unknown verdict unknown.
func TestSuiteControlsRegressionsAndIncompleteRuns(t *testing.T) {
	res := fakeSuite(t, nightly(t, t.TempDir(), Shard{}), func(u unit) *results.Results {
		s := u.cell.scenario
		client := report.AxisValue(u.cell.axes, clientKnob)
		switch {
		case s.Name == "default" && client == "sarama" && u.k == 1:
			return nil // did not complete
		case s.Name == "default" && client == "sarama":
			return fakeResults(s.Name, s.Seed+1, results.Unknown)
		case s.Regression != nil && client == "sarama" && u.k == 1 && report.AxisValue(u.cell.axes, s.Regression.Knob) == s.Regression.Bad:
			return fakeResults(s.Name, s.Seed, results.Fail, guarantee.HangingTransaction) // bad side in 1 of 2: not found again
		}
		return fakeResults(s.Name, s.Seed, results.Pass)
	})
	got := judgements(res.Manifest)
	require.Equal(t, "default client=sarama run 1: incomplete (boom)", got[0])
	require.Equal(t, "default client=sarama run 2: unknown (verdict unknown: the final reads did not finish)", got[1])
	require.Equal(t, "app-resend client=sarama run 1: not-met (positive control duplicate fired in none of the cell's 2 runs)", got[4])
	require.Equal(t, "app-resend client=franz-go run 1: met", got[6], "franz-go cannot fire it: not expected")
	require.Contains(t, got[10], "regress-kip890-hanging-txn client=sarama,verification=false run 1: not-met (regression KIP-890 part 1 NOT found again: "+
		"the bad side showed it in 1 of 2 runs, the fixed side in 0 of 2 (2 passed))")
	require.Contains(t, got[12], "verification=true run 1: not-met (regression KIP-890 part 1 NOT found again")
	require.Equal(t, "regress-kip890-hanging-txn client=franz-go,verification=false run 1: not-met (regression KIP-890 part 1 NOT found again: "+
		"the bad side showed it in 0 of 2 runs, the fixed side in 0 of 2 (2 passed))", got[14])
	require.Equal(t, report.JudgementIncomplete, res.Manifest.Worst())
	require.Contains(t, res.Markdown, "regression KIP-890 part 1: NOT found again")
	require.Contains(t, res.Markdown, "| default | sarama |  | 2 | pass | unknown (final-read-incomplete), 1 incomplete (harness-error) |")
	require.Equal(t, []results.UnknownCause{results.CauseHarnessError}, res.Manifest.Runs[0].UnknownCauses)
	require.Equal(t, []results.UnknownCause{results.CauseFinalReadIncomplete}, res.Manifest.Runs[1].UnknownCauses)
	junit, err := os.ReadFile(res.JUnitFile)
	require.NoError(t, err)
	require.Contains(t, string(junit), `<property name="unknown_causes" value="harness-error">`)
}

// A run whose every forbidden finding a known issue explains is judged known-issue: listed in
// its own colour and as a skipped case, and the suite's exit does not fail for it; one
// forbidden finding no known issue explains makes the run not met.
func TestSuiteKnownIssueNeitherHidesNorFails(t *testing.T) {
	known := func(r *results.Results, n int) *results.Results {
		d := r.Anomalies[guarantee.Duplicate]
		d.Known, d.KnownIssues = n, []guarantee.KnownIssue{guarantee.ResendAfterSnapshotReload}
		r.Anomalies[guarantee.Duplicate] = d
		return r
	}
	res := fakeSuite(t, nightly(t, t.TempDir(), Shard{}), func(u unit) *results.Results {
		s, client := u.cell.scenario, report.AxisValue(u.cell.axes, clientKnob)
		switch {
		case s.Name == "default" && client == "sarama":
			return known(fakeResults(s.Name, s.Seed, results.Fail, guarantee.Duplicate), 3)
		case s.Name == "default" && client == "franz-go" && u.k == 1:
			return known(fakeResults(s.Name, s.Seed, results.Fail, guarantee.Duplicate), 2) // one not explained
		}
		return nightlyResults(u)
	})
	got := judgements(res.Manifest)
	const why = "expected pass, got fail (3 duplicate forbidden), every forbidden finding explained by known issue resend-after-snapshot-reload"
	require.Equal(t, "default client=sarama run 1: known-issue ("+why+")", got[0])
	require.Equal(t, "default client=franz-go run 1: not-met (expected pass, got fail (3 duplicate forbidden))", got[2])
	require.Equal(t, report.JudgementNotMet, res.Manifest.Worst())
	require.Contains(t, res.Markdown, "| default | sarama |  | 2 | pass | fail ×2 | duplicate 6 in 2/2 runs (forbidden) |")
	require.Contains(t, res.Markdown, "known-issue ×2: "+why)
	junit, err := os.ReadFile(res.JUnitFile)
	require.NoError(t, err)
	require.Contains(t, string(junit), `<skipped message="`+why+`" type="known-issue">`)
	page, err := os.ReadFile(res.HTMLFile)
	require.NoError(t, err)
	require.Contains(t, string(page), `class="known"`)

	// Alone, known issues fail nothing.
	m := res.Manifest
	m.Runs = slices.DeleteFunc(slices.Clone(m.Runs), func(r SuiteRun) bool { return r.Judgement != report.JudgementKnownIssue })
	require.Len(t, m.Runs, 2)
	require.Equal(t, report.JudgementMet, m.Worst())
}

// A run the suite's interruption ended did not complete, but it is no harness error; a run that
// failed before it is one.
func TestSuiteInterruptionIsNoHarnessError(t *testing.T) {
	s := nightly(t, t.TempDir(), Shard{})
	s.Scenarios = s.Scenarios[:1]
	p, err := s.plan()
	require.NoError(t, err)
	cells, _ := p.runnable()
	units := unitsOf(cells, s.Runs)
	stopped := context.Canceled
	ran := []ranUnit{{unit: units[0], err: fmt.Errorf("starting the cluster: %w", errTest)},
		{unit: units[1], err: fmt.Errorf("run default: interrupted (%w)", stopped)}}
	m := s.manifest(p, units, ran, stopped)
	require.Equal(t, []results.UnknownCause{results.CauseHarnessError}, m.Runs[0].UnknownCauses, "a run that failed: %+v", m.Runs[0])
	require.Empty(t, m.Runs[1].UnknownCauses, "a run the interruption ended: %+v", m.Runs[1])
	require.Empty(t, m.Runs[2].UnknownCauses, "a run never started: %+v", m.Runs[2])
}

// Shards of a suite merged give the unsharded suite's table and judgements, whatever the order
// they are given in, though a shard alone can judge a control or a regression only pending.
func TestSuiteMergeGivesTheWholeTable(t *testing.T) {
	root := t.TempDir()
	whole := fakeSuite(t, nightly(t, filepath.Join(root, "whole"), Shard{}), nightlyResults)
	var shards []string
	for k := 1; k <= 3; k++ {
		d := filepath.Join(root, fmt.Sprintf("shard-%d", k))
		sh := fakeSuite(t, nightly(t, d, Shard{K: k, N: 3}), nightlyResults)
		require.Contains(t, sh.Markdown, fmt.Sprintf("This is shard %d/3 of the suite: 6 of its 18 runs.", k))
		if k == 1 {
			require.Positive(t, sh.Manifest.Count(report.JudgementPending), "a shard holds some runs of a regression: pending")
		}
		shards = append(shards, d)
	}
	merged, err := MergeSuite([]string{shards[2], shards[0], shards[1]}, filepath.Join(root, "merged"))
	require.NoError(t, err)
	again, err := MergeSuite([]string{filepath.Join(root, "whole")}, filepath.Join(root, "whole-again"))
	require.NoError(t, err)
	require.Equal(t, judgements(whole.Manifest), judgements(merged.Manifest))
	require.Equal(t, tableOf(again.Markdown), tableOf(merged.Markdown), "the merged table is the unsharded one")
	require.Equal(t, whole.Manifest.Regressions[0].Result.Bad.Showed, merged.Manifest.Regressions[0].Result.Bad.Showed)
	require.Equal(t, report.JudgementNotMet, merged.Manifest.Worst())
	require.Equal(t, "1/1", merged.Manifest.Shard)
	for _, r := range merged.Manifest.Runs {
		require.FileExists(t, filepath.Join(root, "merged", r.Dir, "results.json"))
	}
	page, err := os.ReadFile(merged.HTMLFile)
	require.NoError(t, err)
	require.Contains(t, string(page), "../shard-")
	b, err := os.ReadFile(filepath.Join(root, "merged", SuiteFile))
	require.NoError(t, err)
	schematest.Valid(t, schematest.Suite, b)

	// verity index takes a suite's runs as it takes a matrix's: every run folder below.
	runs, skipped, err := report.CollectRuns(root)
	require.NoError(t, err)
	require.Empty(t, skipped)
	require.Len(t, runs, 18*2)
}

// tableOf is a suite.md with its links into the run folders cut to the folders' own paths: a
// merge links into the shards, not into the unsharded suite's output.
func tableOf(md string) string {
	return regexp.MustCompile(`\.\./(whole|shard-\d)/`).ReplaceAllString(md, "")
}

func TestSuiteMergeRefusesWhatIsNotOneWholeSuite(t *testing.T) {
	root := t.TempDir()
	d := func(name string) string { return filepath.Join(root, name) }
	fakeSuite(t, nightly(t, d("1of2"), Shard{K: 1, N: 2}), nightlyResults)
	fakeSuite(t, nightly(t, d("2of2"), Shard{K: 2, N: 2}), nightlyResults)
	other := nightly(t, d("other"), Shard{K: 2, N: 2})
	other.Runs = 3
	fakeSuite(t, other, nightlyResults)
	fakeMatrix(t, d("matrix"), Shard{}, func([]report.Axis, int) results.Outcome { return results.OutcomePass })
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{d("1of2")}, "shard(s) 2/2 missing"},
		{[]string{d("1of2"), d("1of2")}, "given twice"},
		{[]string{d("1of2"), d("other")}, "another suite"},
		{[]string{d("1of2"), d("matrix")}, "not a suite's output"},
	} {
		_, err := MergeSuite(tc.dirs, d("out"))
		require.ErrorContains(t, err, tc.want, "%v", tc.dirs)
	}
	_, err := MergeSuite([]string{d("2of2"), d("1of2")}, d("out"))
	require.NoError(t, err)
	require.True(t, IsSuite(d("out")))
	require.False(t, IsSuite(d("matrix")))
}

// suite.json is a contract: what the suite writes matches docs/schema/suite.schema.json, whose
// lists of tags and judgements are the code's, and what it must not hold is refused.
func TestSuiteManifestSchema(t *testing.T) {
	res := fakeSuite(t, nightly(t, t.TempDir(), Shard{K: 1, N: 2}), nightlyResults)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(res.MarkdownFile), SuiteFile))
	require.NoError(t, err)
	schematest.Valid(t, schematest.Suite, b)
	require.Contains(t, string(b), `"verity_suite": 1`)
	require.NotContains(t, string(b), `"Name"`, "written in its own field names")
	for name, bad := range map[string]string{
		"an unknown key":       strings.Replace(string(b), `"runs_per_cell"`, `"colour": 1, "runs_per_cell"`, 1),
		"an unknown judgement": strings.Replace(string(b), `"judgement": "met"`, `"judgement": "fine"`, 1),
		"a bad shard":          strings.Replace(string(b), `"shard": "1/2"`, `"shard": "first"`, 1),
	} {
		require.NotEqual(t, string(b), bad, name)
		require.Error(t, schematest.Check(schematest.Suite, []byte(bad)), "%s passed the schema", name)
	}

	var schema struct {
		Defs map[string]struct {
			Enum []string `json:"enum"`
		} `json:"$defs"`
	}
	sb, err := os.ReadFile(filepath.Join(schematest.Dir(), schematest.Suite))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(sb, &schema))
	var tags, js []string
	for _, tag := range scenarios.Tags() {
		tags = append(tags, string(tag))
	}
	for _, j := range report.Judgements() {
		js = append(js, string(j))
	}
	require.Equal(t, tags, schema.Defs["tag"].Enum, "the schema's tags are scenarios.Tags()")
	require.Equal(t, js, schema.Defs["judgement"].Enum, "the schema's judgements are report.Judgements()")
}

// fakeLiveness gives r the liveness verdict v against unanswering-leader's max_stall 25s, with
// one breach when v is fail.
func fakeLiveness(r *results.Results, v results.LivenessVerdict) *results.Results {
	l := &results.Liveness{Verdict: v, Bounds: results.LivenessBounds{LivenessBounds: history.LivenessBounds{MaxStallMS: new(int64(25000))},
		StuckAfterMS: 15000, MinStallMS: 1000}, HorizonMS: 90000, Clients: []results.ClientLiveness{},
		Findings: map[results.LivenessFamily]results.LivenessFindings{}}
	switch v {
	case results.LivenessFail:
		l.Findings[results.MaxStall] = results.LivenessFindings{Count: 1, Examples: []results.LivenessFinding{{Client: "producer 2",
			Kind: results.KindProducer, Topic: "verity", FromMS: 21000, ToMS: 61000, Recovered: true, Bound: "max_stall 25s",
			Ops: []int64{1}, Note: "40.0 s without progress"}}}
		l.Reasons = l.Breaches()
	case results.LivenessUnknown:
		l.Reasons = []string{"the producers' progress could not be followed"}
	}
	r.Liveness = l
	return r
}

// A stated liveness bound judges a run whose safety verdict is as expected: broken where the
// cell's client is known to break it, a known issue; broken elsewhere, not met; unjudged,
// unknown. A cell whose client may break it and whose runs all kept it is met. The runs'
// liveness verdicts are kept in the manifest, through a merge.
func TestSuiteJudgesLiveness(t *testing.T) {
	spec := func(out string) SuiteSpec {
		return SuiteSpec{Scenarios: suiteOf(t, "unanswering-leader"), Axes: []MatrixAxis{clientAxis("franz-go", "sarama")}, Runs: 2, Out: out}
	}
	root := t.TempDir()
	res := fakeSuite(t, spec(filepath.Join(root, "broke")), func(u unit) *results.Results {
		s, client := u.cell.scenario, report.AxisValue(u.cell.axes, clientKnob)
		r := fakeResults(s.Name, s.Seed+int64(u.k-1), results.Pass)
		switch {
		case client == "franz-go" && u.k == 1:
			return fakeLiveness(r, results.LivenessFail)
		case client == "franz-go":
			return fakeLiveness(r, results.LivenessUnknown)
		case u.k == 1:
			return fakeLiveness(r, results.LivenessFail)
		}
		return fakeLiveness(r, results.LivenessPass)
	})
	why := builtin(t, "unanswering-leader").Expect.Liveness.Why
	require.Equal(t, []string{
		"unanswering-leader client=franz-go run 1: not-met (liveness failed: max_stall 25s broken: 40.0 s without progress)",
		"unanswering-leader client=franz-go run 2: unknown (liveness unknown: the producers' progress could not be followed)",
		"unanswering-leader client=sarama run 1: known-issue (max_stall 25s broken, a known behaviour of sarama (it lacks leaves-unanswering-leader): " + why + ")",
		"unanswering-leader client=sarama run 2: met",
	}, judgements(res.Manifest))
	var verdicts []results.LivenessVerdict
	for _, r := range res.Manifest.Runs {
		verdicts = append(verdicts, r.Liveness)
	}
	require.Equal(t, []results.LivenessVerdict{results.LivenessFail, results.LivenessUnknown, results.LivenessFail, results.LivenessPass}, verdicts)
	e := res.Manifest.Runs[2].Expect.Liveness
	require.NotNil(t, e)
	require.True(t, e.Breaks)
	require.Equal(t, []kafkaconf.Capability{kafkaconf.CapLeavesUnansweringLeader}, e.Lacks)
	require.False(t, res.Manifest.Runs[0].Expect.Liveness.Breaks, "franz-go leaves the old leader")
	require.Contains(t, res.Markdown, "| pass, max_stall 25s broken (a known behaviour of sarama) |")
	b, err := os.ReadFile(filepath.Join(root, "broke", SuiteFile))
	require.NoError(t, err)
	schematest.Valid(t, schematest.Suite, b)

	merged, err := MergeSuite([]string{filepath.Join(root, "broke")}, filepath.Join(root, "merged"))
	require.NoError(t, err)
	require.Equal(t, judgements(res.Manifest), judgements(merged.Manifest))
	for i, r := range merged.Manifest.Runs {
		require.Equal(t, verdicts[i], r.Liveness, "run %d's liveness verdict after the merge", i)
	}

	// A known break is timing-dependent: a cell whose runs all kept the bound meets it.
	kept := fakeSuite(t, spec(filepath.Join(root, "kept")), func(u unit) *results.Results {
		s := u.cell.scenario
		return fakeLiveness(fakeResults(s.Name, s.Seed+int64(u.k-1), results.Pass), results.LivenessPass)
	})
	got := judgements(kept.Manifest)
	require.Equal(t, "unanswering-leader client=franz-go run 1: met", got[0])
	require.Equal(t, "unanswering-leader client=sarama run 1: met", got[2])
}
