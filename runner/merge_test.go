package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

func TestParseShard(t *testing.T) {
	s, err := ParseShard(" 2/3 ")
	require.NoError(t, err)
	require.Equal(t, Shard{K: 2, N: 3}, s)
	require.Equal(t, "2/3", s.String())
	require.Equal(t, "1/1", Shard{}.String())
	for _, bad := range []string{"0/3", "4/3", "3", "a/b", "1/0", "-1/2", ""} {
		_, err := ParseShard(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "want K/N", bad)
	}
}

// Every run lands in exactly one shard, the shards' sizes differ by one at most, and a run keeps
// its place (cell, run number) whatever the shard.
func TestShardsPartitionTheRuns(t *testing.T) {
	cells := []cell{{axes: []report.Axis{{Name: "acks", Value: "1"}}}, {axes: []report.Axis{{Name: "acks", Value: "all"}}}}
	all := unitsOf(cells, 5)
	require.Len(t, all, 10)
	for _, n := range []int{1, 2, 3, 4, 10, 11} {
		var got []string
		sizes := map[int]int{}
		for k := 1; k <= n; k++ {
			for _, u := range (Shard{K: k, N: n}).of(all) {
				got = append(got, report.AxesLabel(u.cell.axes)+"#"+string(rune('0'+u.k)))
				sizes[k]++
			}
		}
		var want []string
		for _, u := range all {
			want = append(want, report.AxesLabel(u.cell.axes)+"#"+string(rune('0'+u.k)))
		}
		slices.Sort(got)
		slices.Sort(want)
		require.Equal(t, want, got, "N=%d: every run once", n)
		lo, hi := len(all), 0
		for k := 1; k <= n; k++ {
			lo, hi = min(lo, sizes[k]), max(hi, sizes[k])
		}
		require.LessOrEqual(t, hi-lo, 1, "N=%d: balanced shards %v", n, sizes)
	}
}

// fakeMatrix writes the output of one shard of a 2×2 matrix with 2 runs a cell, as RunMatrix
// would: each run's results.json in its folder and the manifest; outcome says each run's.
func fakeMatrix(t *testing.T, dir string, shard Shard, outcome func(axes []report.Axis, k int) results.Outcome) {
	t.Helper()
	axes := []MatrixAxis{{Name: "acks", Values: []string{"1", "all"}}, {Name: "fault", Values: []string{"kill", "isolate"}}}
	var cells []cell
	for _, a := range product(axes) {
		cells = append(cells, cell{axes: a})
	}
	man := Manifest{Version: ManifestVersion, Scenario: "default", Seed: 7, Runs: 2, Axes: axes, Shard: shard.String()}
	for _, u := range shard.of(unitsOf(cells, 2)) {
		rd := filepath.Join(dirName(u.cell.axes), "run-"+string(rune('0'+u.k)))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, rd), 0o755))
		o := outcome(u.cell.axes, u.k)
		r := &results.Results{Version: results.Version, Scenario: "default", Seed: 7 + int64(u.k-1), Verdict: results.Verdict(o),
			Anomalies: map[guarantee.Anomaly]results.Anomaly{}}
		switch o {
		case results.OutcomeFail:
			r.Anomalies[guarantee.LostWrite] = results.Anomaly{Count: 3, Forbidden: 3, Judgement: guarantee.Forbidden, Why: "acks=all"}
		case results.OutcomeLivenessFail:
			r.Verdict = results.Pass
			r.Liveness = &results.Liveness{Verdict: results.LivenessFail}
		}
		_, err := results.Write(filepath.Join(dir, rd), r)
		require.NoError(t, err)
		mr := ManifestRun{Axes: u.cell.axes, Run: u.k, Seed: 7 + int64(u.k-1), Dir: rd, Verdict: r.Verdict}
		if r.Liveness != nil {
			mr.Liveness = r.Liveness.Verdict
		}
		man.Cells = append(man.Cells, mr)
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, man.write(filepath.Join(dir, ManifestFile)))
}

func TestMergeGivesTheWholeTable(t *testing.T) {
	root := t.TempDir()
	verdict := func(axes []report.Axis, k int) results.Outcome {
		switch {
		case axes[0].Value == "1" && axes[1].Value == "kill" && k == 2:
			return results.OutcomeFail
		case axes[0].Value == "all" && axes[1].Value == "isolate" && k == 1:
			return results.OutcomeLivenessFail
		}
		return results.OutcomePass
	}
	fakeMatrix(t, filepath.Join(root, "whole"), Shard{}, verdict)
	var shards []string
	for k := 1; k <= 3; k++ {
		d := filepath.Join(root, "shard-"+string(rune('0'+k)))
		fakeMatrix(t, d, Shard{K: k, N: 3}, verdict)
		shards = append(shards, d)
	}
	// Merged in any order: the table is the whole matrix's.
	merged, err := MergeMatrix([]string{shards[2], shards[0], shards[1]}, filepath.Join(root, "merged"))
	require.NoError(t, err)
	whole, err := MergeMatrix([]string{filepath.Join(root, "whole")}, filepath.Join(root, "whole-again"))
	require.NoError(t, err)
	require.Equal(t, results.OutcomeFail, merged.Worst())
	require.Empty(t, merged.Incomplete)
	require.Len(t, merged.Manifest.Cells, 8)
	require.Equal(t, whole.Markdown, merged.Markdown, "the merged table is the unsharded one")
	man, err := os.ReadFile(filepath.Join(root, "merged", ManifestFile))
	require.NoError(t, err)
	require.Contains(t, string(man), `"name": "acks"`, "matrix.json is written in its own field names, not Go's")
	require.NotContains(t, string(man), `"Name"`)
	require.Contains(t, merged.Markdown, "seeds 7, 8")
	// The manifest lists the runs in the unsharded order, and links reach the shards' folders.
	for i, r := range merged.Manifest.Cells {
		w := whole.Manifest.Cells[i]
		require.Equal(t, report.AxesLabel(w.Axes)+string(rune('0'+w.Run)), report.AxesLabel(r.Axes)+string(rune('0'+r.Run)))
		require.FileExists(t, filepath.Join(root, "merged", r.Dir, "results.json"))
	}
	page, err := os.ReadFile(merged.HTMLFile)
	require.NoError(t, err)
	require.Contains(t, string(page), "../shard-")
	junit, err := os.ReadFile(merged.JUnitFile)
	require.NoError(t, err)
	require.Equal(t, 8, strings.Count(string(junit), "<testsuite "), "one suite per run")
	require.Contains(t, string(junit), `default [acks=1,fault=kill] run 2`)
	require.Contains(t, string(junit), `<failure message="a documented guarantee was violated: 3 lost-write"`)
}

func TestMergeRefusesWhatIsNotOneWholeMatrix(t *testing.T) {
	root := t.TempDir()
	pass := func([]report.Axis, int) results.Outcome { return results.OutcomePass }
	d := func(name string) string { return filepath.Join(root, name) }
	fakeMatrix(t, d("1of2"), Shard{K: 1, N: 2}, pass)
	fakeMatrix(t, d("2of2"), Shard{K: 2, N: 2}, pass)
	fakeMatrix(t, d("1of3"), Shard{K: 1, N: 3}, pass)
	other := d("other")
	fakeMatrix(t, other, Shard{K: 2, N: 2}, pass)
	b, err := os.ReadFile(filepath.Join(other, ManifestFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(other, ManifestFile), []byte(strings.Replace(string(b), `"seed": 7`, `"seed": 9`, 1)), 0o644))

	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{d("1of2")}, "shard(s) 2/2 missing"},
		{[]string{d("1of2"), d("1of2")}, "given twice"},
		{[]string{d("1of2"), d("1of3")}, "one of 2"},
		{[]string{d("1of2"), other}, "another matrix"},
		{[]string{root}, "not a matrix's output"},
	} {
		_, err := MergeMatrix(tc.dirs, d("out"))
		require.ErrorContains(t, err, tc.want, "%v", tc.dirs)
	}
	_, err = MergeMatrix([]string{d("1of2"), d("2of2")}, d("out"))
	require.NoError(t, err)
}

// A run whose results are gone is listed as incomplete and is an error in junit.xml, not a hole
// in the table; a relative --out links into the shards all the same.
func TestMergeSaysWhatIsMissing(t *testing.T) {
	root := t.TempDir()
	pass := func([]report.Axis, int) results.Outcome { return results.OutcomePass }
	fakeMatrix(t, filepath.Join(root, "s1"), Shard{K: 1, N: 2}, pass)
	fakeMatrix(t, filepath.Join(root, "s2"), Shard{K: 2, N: 2}, pass)
	require.NoError(t, os.Remove(filepath.Join(root, "s2", "acks=1_fault=kill", "run-2", "results.json")))
	t.Chdir(filepath.Join(root, "s1"))
	m, err := MergeMatrix([]string{".", "../s2"}, "../merged")
	require.NoError(t, err)
	require.Len(t, m.Incomplete, 1)
	require.Contains(t, m.Incomplete[0], "acks=1,fault=kill run 2: reading results")
	require.Equal(t, results.OutcomeUnknown, m.Worst())
	junit, err := os.ReadFile(filepath.Join(root, "merged", "junit.xml"))
	require.NoError(t, err)
	require.Contains(t, string(junit), `type="incomplete"`)
	require.Equal(t, 8, strings.Count(string(junit), "<testsuite "), "7 runs and the missing one")
	require.Contains(t, m.Markdown, "| 1 |", "the cell whose run is missing counts 1 run")
}

// A merged matrix whose runs kept every guarantee but one broke a stated bound ends as
// fail (liveness), as that run did on its own; the manifest carries the liveness verdict.
func TestMergeKeepsALivenessFailure(t *testing.T) {
	root := t.TempDir()
	outcome := func(axes []report.Axis, k int) results.Outcome {
		if axes[1].Value == "isolate" && k == 2 {
			return results.OutcomeLivenessFail
		}
		return results.OutcomePass
	}
	fakeMatrix(t, filepath.Join(root, "s1"), Shard{K: 1, N: 2}, outcome)
	fakeMatrix(t, filepath.Join(root, "s2"), Shard{K: 2, N: 2}, outcome)
	m, err := MergeMatrix([]string{filepath.Join(root, "s1"), filepath.Join(root, "s2")}, filepath.Join(root, "merged"))
	require.NoError(t, err)
	require.Equal(t, results.OutcomeLivenessFail, m.Worst())
	man, err := os.ReadFile(filepath.Join(root, "merged", ManifestFile))
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(man), `"liveness": "fail"`), "the two isolate runs 2")
}
