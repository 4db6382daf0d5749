package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/verify/results"
)

// ManifestFile is the name of a matrix's manifest in its output directory.
const ManifestFile = "matrix.json"

// ManifestVersion is the manifest format's version; MergeMatrix refuses another.
const ManifestVersion = 1

// Manifest says what a matrix, or one shard of it, ran: enough to tell that shards belong to one
// matrix, and where each run's artifacts are. It is written from this type only.
type Manifest struct {
	Version  int          `json:"verity_matrix"`
	Scenario string       `json:"scenario"`
	Seed     int64        `json:"seed"` // the base seed; run k of every cell used Seed+k-1
	Runs     int          `json:"runs"` // runs per cell
	Axes     []MatrixAxis `json:"axes"`
	// Shard is "K/N"; "1/1" for a whole matrix.
	Shard string        `json:"shard"`
	Cells []ManifestRun `json:"cells"`
}

// ManifestRun is one run of a cell: where its artifacts are (relative to the manifest) and
// how it ended.
type ManifestRun struct {
	Axes    []report.Axis   `json:"axes"`
	Run     int             `json:"run"`
	Seed    int64           `json:"seed"`
	Dir     string          `json:"dir,omitempty"`
	Verdict results.Verdict `json:"verdict,omitempty"`
	// Liveness is the run's liveness verdict (results.json's liveness.verdict); empty when its
	// results have no liveness part.
	Liveness results.LivenessVerdict `json:"liveness,omitempty"`
	// Error is why the run did not complete; empty when it did.
	Error string `json:"error,omitempty"`
}

func (m Manifest) write(path string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("matrix: encoding %s: %w", ManifestFile, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("matrix: writing %s: %w", ManifestFile, err)
	}
	return nil
}

// readManifest reads dir's matrix.json.
func readManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return m, fmt.Errorf("%s: not a matrix's output: %w", dir, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s: reading %s: %w", dir, ManifestFile, err)
	}
	if m.Version != ManifestVersion {
		return m, fmt.Errorf("%s: %s version %d: this verity reads version %d", dir, ManifestFile, m.Version, ManifestVersion)
	}
	return m, nil
}

// sameMatrix reports how b differs from a as a matrix (its shard and cells aside), or "".
func sameMatrix(a, b Manifest) string {
	switch {
	case a.Scenario != b.Scenario:
		return fmt.Sprintf("scenario %s, not %s", b.Scenario, a.Scenario)
	case a.Seed != b.Seed:
		return fmt.Sprintf("seed %d, not %d", b.Seed, a.Seed)
	case a.Runs != b.Runs:
		return fmt.Sprintf("%d runs a cell, not %d", b.Runs, a.Runs)
	}
	ja, _ := json.Marshal(a.Axes)
	jb, _ := json.Marshal(b.Axes)
	if !bytes.Equal(ja, jb) {
		return fmt.Sprintf("axes %s, not %s", jb, ja)
	}
	return ""
}

// loadCells reads the results of the runs that completed, from the run folders below dir. The
// others are returned as "cell run k: why": not run, failed to run, or results unreadable.
func loadCells(dir string, runs []ManifestRun) ([]report.Cell, []string) {
	var out []report.Cell
	var missing []string
	for _, r := range runs {
		why := r.Error
		if why == "" && r.Dir == "" {
			why = "not run"
		}
		if why == "" {
			res, err := results.Read(filepath.Join(dir, r.Dir, "results.json"))
			if err == nil {
				out = append(out, report.Cell{Axes: r.Axes, Run: r.Run, Results: res, Report: filepath.Join(r.Dir, "report.html")})
				continue
			}
			why = err.Error()
		}
		missing = append(missing, fmt.Sprintf("%s run %d: %s", report.AxesLabel(r.Axes), r.Run, oneLine(why)))
	}
	return out, missing
}

// tables are a matrix's written tables.
type tables struct{ Markdown, MarkdownFile, HTMLFile, JUnitFile string }

// writeTables writes matrix.md, matrix.html and junit.xml (one suite per run; an error case
// for each run in missing) into dir, the cells in the order given.
func writeTables(dir string, m Manifest, cells []report.Cell, missing []string) (tables, error) {
	var t tables
	var seeds []string
	for k := 1; k <= m.Runs; k++ {
		seeds = append(seeds, strconv.FormatInt(m.Seed+int64(k-1), 10))
	}
	t.Markdown = report.CompareMarkdown(cells) + fmt.Sprintf("\nScenario %s; runs 1..%d of every cell used seeds %s.\n",
		m.Scenario, m.Runs, strings.Join(seeds, ", "))
	if m.Shard != "1/1" && m.Shard != "" {
		t.Markdown += fmt.Sprintf("This is shard %s of the matrix: %d of its runs.\n", m.Shard, len(m.Cells))
	}
	t.MarkdownFile = filepath.Join(dir, "matrix.md")
	if err := os.WriteFile(t.MarkdownFile, []byte(t.Markdown), 0o644); err != nil {
		return t, fmt.Errorf("matrix: writing the table: %w", err)
	}
	page, err := report.CompareHTML(fmt.Sprintf("Verity matrix: %s, %d runs a cell (seeds %s)", m.Scenario, m.Runs, strings.Join(seeds, ", ")), cells)
	if err != nil {
		return t, fmt.Errorf("matrix: %w", err)
	}
	t.HTMLFile = filepath.Join(dir, "matrix.html")
	if err := os.WriteFile(t.HTMLFile, []byte(page), 0o644); err != nil {
		return t, fmt.Errorf("matrix: writing the table: %w", err)
	}
	var buf bytes.Buffer
	if err := report.WriteMatrixJUnit(&buf, "verity matrix "+m.Scenario, cells, missing); err != nil {
		return t, fmt.Errorf("matrix: %w", err)
	}
	t.JUnitFile = filepath.Join(dir, "junit.xml")
	if err := os.WriteFile(t.JUnitFile, buf.Bytes(), 0o644); err != nil {
		return t, fmt.Errorf("matrix: writing junit.xml: %w", err)
	}
	return t, nil
}

// Merged is what MergeMatrix made of the shards.
type Merged struct {
	Manifest Manifest // the whole matrix: every shard's runs, in canonical order
	tables
	// Incomplete are the runs that did not complete, as "cell run k: why".
	Incomplete []string
}

// Worst is the worst outcome over the merged runs (results.OutcomeOrder); a run that did not
// complete is unknown.
func (m *Merged) Worst() results.Outcome {
	var os []results.Outcome
	if len(m.Incomplete) > 0 {
		os = append(os, results.OutcomeUnknown)
	}
	for _, r := range m.Manifest.Cells {
		if r.Error != "" {
			os = append(os, results.OutcomeUnknown)
			continue
		}
		os = append(os, results.OutcomeOf(r.Verdict, r.Liveness))
	}
	return results.WorstOutcome(os...)
}

// MergeMatrix joins the outputs of a sharded matrix (each dir one shard's --out) into one
// matrix.json, matrix.md, matrix.html and junit.xml in out, whose links reach into the shards'
// run folders. Every shard 1..N must be there once, all of one matrix.
func MergeMatrix(dirs []string, out string) (*Merged, error) {
	out, dirs, mans, err := readShards(dirs, out, "matrix", readManifest, sameMatrix, func(m Manifest) string { return m.Shard })
	if err != nil {
		return nil, err
	}
	whole := mans[0]
	whole.Shard, whole.Cells = "1/1", nil
	var cells []report.Cell
	for i, m := range mans {
		rel, err := filepath.Rel(out, dirs[i])
		if err != nil {
			return nil, fmt.Errorf("merge: linking %s from %s: %w", dirs[i], out, err)
		}
		for _, r := range m.Cells {
			if r.Dir != "" {
				r.Dir = filepath.Join(rel, r.Dir)
			}
			whole.Cells = append(whole.Cells, r)
		}
	}
	order := canonicalOrder(whole)
	slices.SortStableFunc(whole.Cells, func(a, b ManifestRun) int { return order(a) - order(b) })
	cells, missing := loadCells(out, whole.Cells)
	merged := &Merged{Manifest: whole, Incomplete: missing}
	if err := whole.write(filepath.Join(out, ManifestFile)); err != nil {
		return nil, err
	}
	t, err := writeTables(out, whole, cells, missing)
	merged.tables = t
	return merged, err
}

// readShards reads the manifests of a sharded matrix's or suite's outputs (each dir one shard's
// --out, read by read), checks that they are every shard of one whole (same says how two
// differ, "" when they do not; shard gives a manifest's "K/N"), and makes out, the merge's
// output. It returns out and dirs made absolute, and the manifests in dirs' order.
func readShards[M any](dirs []string, out, what string, read func(string) (M, error), same func(a, b M) string,
	shard func(M) string) (string, []string, []M, error) {
	out, dirs, err := absDirs(dirs, out)
	if err != nil {
		return "", nil, nil, err
	}
	mans := make([]M, 0, len(dirs))
	shards := make([]string, 0, len(dirs))
	for _, d := range dirs {
		m, err := read(d)
		if err != nil {
			return "", nil, nil, fmt.Errorf("merge: %w", err)
		}
		if len(mans) > 0 {
			if diff := same(mans[0], m); diff != "" {
				return "", nil, nil, fmt.Errorf("merge: %s is another %s than %s: %s", d, what, dirs[0], diff)
			}
		}
		mans = append(mans, m)
		shards = append(shards, shard(m))
	}
	if err := checkShards(dirs, shards); err != nil {
		return "", nil, nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", nil, nil, fmt.Errorf("merge: making %s: %w", out, err)
	}
	return out, dirs, mans, nil
}

// absDirs makes the shards' directories and the merge's output absolute, so that the links from
// the output into the shards can always be made.
func absDirs(dirs []string, out string) (string, []string, error) {
	if len(dirs) == 0 {
		return "", nil, errors.New("merge: no shard directories given")
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", nil, fmt.Errorf("merge: %s: %w", out, err)
	}
	dirs = slices.Clone(dirs)
	for i, d := range dirs {
		if dirs[i], err = filepath.Abs(d); err != nil {
			return "", nil, fmt.Errorf("merge: %s: %w", d, err)
		}
	}
	return abs, dirs, nil
}

// checkShards checks that the shards (each "K/N", the i-th from dirs[i]) are every shard 1..N of
// one whole, each once.
func checkShards(dirs, shards []string) error {
	n := 0
	seen := map[int]string{}
	for i, sh := range shards {
		s, err := ParseShard(sh)
		if err != nil {
			return fmt.Errorf("merge: %s: %w", dirs[i], err)
		}
		if n != 0 && s.N != n {
			return fmt.Errorf("merge: %s is shard %s, %s one of %d", dirs[i], sh, dirs[0], n)
		}
		n = s.N
		if prev, dup := seen[s.K]; dup {
			return fmt.Errorf("merge: shard %d/%d given twice: %s and %s", s.K, n, prev, dirs[i])
		}
		seen[s.K] = dirs[i]
	}
	var absent []string
	for k := 1; k <= n; k++ {
		if _, ok := seen[k]; !ok {
			absent = append(absent, fmt.Sprintf("%d/%d", k, n))
		}
	}
	if len(absent) > 0 {
		return fmt.Errorf("merge: shard(s) %s missing: give every shard's output directory", strings.Join(absent, ", "))
	}
	return nil
}

// canonicalOrder ranks a manifest's runs as an unsharded matrix orders them: cells in the
// order of the axes' values, then runs.
func canonicalOrder(m Manifest) func(ManifestRun) int {
	return func(r ManifestRun) int {
		rank := 0
		for _, a := range m.Axes {
			v := ""
			for _, ra := range r.Axes {
				if ra.Name == a.Name {
					v = ra.Value
				}
			}
			rank = rank*len(a.Values) + max(slices.Index(a.Values, v), 0)
		}
		return rank*(m.Runs+1) + r.Run
	}
}
