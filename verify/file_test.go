package verify

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/history/histgen"
	"github.com/verity-kafka/verity/verify/results"
)

// TestCheckFileReadsAheadAsCheck: CheckFile, which decodes the history ahead on other
// goroutines, gives what Check gives on a plain Reader — on generated histories, on one with
// an anomaly, and on one with a bad line.
func TestCheckFileReadsAheadAsCheck(t *testing.T) {
	gen := func(g func(io.Writer, int, int64) error, n int) string {
		var b bytes.Buffer
		if err := g(&b, n, 5); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	txn := gen(histgen.GenerateTxnReads, 30_000)
	lines := strings.SplitAfter(txn, "\n")
	// A poll's record moved to an offset another record holds: inconsistent offsets and
	// duplicates, findings made while the ops stream past.
	for i, l := range lines {
		if i > len(lines)/2 && strings.Contains(l, `"f":"poll"`) && strings.Contains(l, `"offset":`) {
			lines[i] = strings.Replace(l, `"offset":`, `"offset":1`, 1)
			break
		}
	}
	anomalous := strings.Join(lines, "")
	bad := strings.Join(lines[:len(lines)/3], "") + "{not json\n" + strings.Join(lines[len(lines)/3:], "")
	for name, h := range map[string]string{
		"stock": gen(histgen.Generate, 30_000), "txn reads": txn, "anomalous": anomalous, "bad line": bad,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.jsonl")
			if err := os.WriteFile(path, []byte(h), 0o644); err != nil {
				t.Fatal(err)
			}
			got, gotErr := CheckFile(context.Background(), path, Options{})
			rd, err := history.NewReader(bufio.NewReader(strings.NewReader(h)))
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := Check(context.Background(), rd, rd.Header().Config, Options{})
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("CheckFile error %v, Check error %v", gotErr, wantErr)
			}
			if wantErr != nil {
				if !strings.HasSuffix(gotErr.Error(), wantErr.Error()) {
					t.Fatalf("CheckFile error %q, Check error %q", gotErr, wantErr)
				}
				return
			}
			want.Seed, want.Config, want.History.Path = rd.Header().Seed, rd.Header().Config, path
			got.Timings, want.Timings = results.Timings{}, results.Timings{}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("CheckFile and Check differ: verdicts %s and %s", got.Verdict, want.Verdict)
			}
			if name == "anomalous" && got.Verdict == results.Pass {
				t.Fatalf("the anomalous history passed: the test checks nothing")
			}
		})
	}
}
