package verify

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

const malformedHeader = `{"verity_history":1,"started":"2026-01-01T00:00:00Z","seed":1,"config":{"producer":{"acks":"all","idempotence":true}}}` + "\n"

// Lines 2-6 of a history: process 1 has two sends in flight (i 0, 1), completed out of order
// (i 2, 3); process 2 has an invoke pending (i 4).
const asyncSends = `{"i":0,"t":1,"p":1,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"1-1"}}
{"i":1,"t":2,"p":1,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"1-2"}}
{"i":2,"t":3,"p":1,"type":"ok","f":"send","of":1,"value":{"topic":"t","partition":0,"offset":1,"value":"1-2"}}
{"i":3,"t":4,"p":1,"type":"ok","f":"send","of":0,"value":{"topic":"t","partition":0,"offset":0,"value":"1-1"}}
{"i":4,"t":5,"p":2,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"2-1"}}
`

const finalOfBoth = `{"i":20,"t":20,"p":9,"type":"ok","f":"final-read","value":{"topic":"t","partition":0,"isolation":"read_uncommitted","from":0,"end":2,"records":[{"topic":"t","partition":0,"offset":0,"value":"1-1"},{"topic":"t","partition":0,"offset":1,"value":"1-2"}]}}
`

// A completion whose "of" names no pending invoke of its process is malformed: taking it as a
// second write would make a forbidden duplicate look like a permitted resend.
func TestMalformedCompletion(t *testing.T) {
	cases := []struct {
		name string
		line string // the line after asyncSends (line 7 of the file)
	}{
		{"of names an invoke already completed",
			`{"i":5,"t":6,"p":1,"type":"ok","f":"send","of":0,"value":{"topic":"t","partition":0,"offset":2,"value":"1-1"}}`},
		{"of names another process's invoke",
			`{"i":5,"t":6,"p":1,"type":"ok","f":"send","of":4,"value":{"topic":"t","partition":0,"offset":2,"value":"2-1"}}`},
		{"of names a completion",
			`{"i":5,"t":6,"p":1,"type":"info","f":"send","of":2,"value":{"topic":"t","partition":0,"value":"1-2"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := malformedHeader + asyncSends + tc.line + "\n" + finalOfBoth
			rd, err := history.NewReader(strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Check(context.Background(), rd, strict(), Options{})
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("error %v, want a *MalformedError", err)
			}
			if me.Line != 7 || me.Index != 5 {
				t.Errorf("line %d, i %d; want line 7, i 5", me.Line, me.Index)
			}
			if !strings.Contains(err.Error(), "line 7") {
				t.Errorf("the message does not name the line: %v", err)
			}

			// A file: the error names the path and the line.
			path := filepath.Join(t.TempDir(), "history.jsonl")
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = CheckFile(context.Background(), path, Options{})
			if !errors.As(err, &me) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 7") {
				t.Errorf("CheckFile: %v", err)
			}

			// Op by op: the checker keeps the error and will not pass the history.
			rd, _ = history.NewReader(strings.NewReader(body))
			c := New(strict(), Options{})
			var op history.Op
			for rd.Next(&op) == nil {
				c.Add(&op)
			}
			r := c.Results()
			if !errors.As(c.Err(), &me) || me.Index != 5 {
				t.Errorf("Err() = %v", c.Err())
			}
			if r.Verdict == results.Pass {
				t.Errorf("verdict pass on a malformed history")
			}
			if a := r.Anomalies[guarantee.Duplicate]; a.Count > 0 {
				t.Errorf("the malformed completion was taken as a write: %+v", a)
			}
		})
	}
}

// Well-formed async completions, in any order, and a sync completion without "of": no error.
func TestWellFormedCompletions(t *testing.T) {
	body := malformedHeader + asyncSends +
		`{"i":5,"t":6,"p":2,"type":"ok","f":"send","of":4,"value":{"topic":"t","partition":0,"offset":2,"value":"2-1"}}` + "\n" +
		`{"i":6,"t":7,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"3-1"}}` + "\n" +
		`{"i":7,"t":8,"p":3,"type":"ok","f":"send","value":{"topic":"t","partition":0,"offset":3,"value":"3-1"}}` + "\n" +
		`{"i":20,"t":20,"p":9,"type":"ok","f":"final-read","value":{"topic":"t","partition":0,"isolation":"read_uncommitted","from":0,"end":4,"records":[` +
		`{"topic":"t","partition":0,"offset":0,"value":"1-1"},{"topic":"t","partition":0,"offset":1,"value":"1-2"},` +
		`{"topic":"t","partition":0,"offset":2,"value":"2-1"},{"topic":"t","partition":0,"offset":3,"value":"3-1"}]}}` + "\n"
	rd, err := history.NewReader(bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(context.Background(), rd, strict(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != results.Pass {
		t.Errorf("verdict %s: %v", r.Verdict, r.UnknownReasons)
	}
}

// A process whose ops overlap must name the invoke each completion completes: a completion
// without "of", when the process's latest invoke is completed but an earlier one of the same f
// is still open, is refused (taken alone it would make a second writer of its records), while a
// completion without "of" that no overtaken invoke could own is taken alone, as before.
func TestCompletionOfAnOvertakenInvoke(t *testing.T) {
	const overlap = `{"i":0,"t":1,"p":1,"type":"invoke","f":"txn","value":{"txn_id":"x","records":[{"topic":"t","partition":0,"value":"1-1"}],"intent":"commit"}}
{"i":1,"t":2,"p":1,"type":"invoke","f":"assign","value":{"topic":"t","partitions":[0]}}
{"i":2,"t":3,"p":1,"type":"ok","f":"assign","value":{"topic":"t","partitions":[0]}}
{"i":3,"t":4,"p":1,"type":"ok","f":"txn","value":{"txn_id":"x","records":[{"topic":"t","partition":0,"offset":0,"value":"1-1"}],"intent":"commit"}}
`
	rd, err := history.NewReader(strings.NewReader(malformedHeader + overlap))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Check(context.Background(), rd, strict(), Options{})
	var me *MalformedError
	if !errors.As(err, &me) || me.Index != 3 || !strings.Contains(err.Error(), "txn invoke 0 is still open") {
		t.Fatalf("error %v, want the txn completion (i 3) refused, naming its open invoke 0", err)
	}

	// Without the overtaking invoke, a completion with no open invoke is taken alone.
	alone := `{"i":0,"t":1,"p":1,"type":"ok","f":"txn","value":{"txn_id":"x","records":[{"topic":"t","partition":0,"offset":0,"value":"1-1"}],"intent":"commit"}}
{"i":1,"t":2,"p":9,"type":"invoke","f":"final-read","value":{"topic":"t","partition":0,"isolation":"read_committed","from":0}}
{"i":2,"t":3,"p":9,"type":"ok","f":"final-read","value":{"topic":"t","partition":0,"isolation":"read_committed","from":0,"end":2,"records":[{"topic":"t","partition":0,"offset":0,"value":"1-1"}]}}
`
	rd, _ = history.NewReader(strings.NewReader(malformedHeader + alone))
	if _, err := Check(context.Background(), rd, strict(), Options{}); err != nil {
		t.Fatalf("a completion taken alone: %v", err)
	}
}
