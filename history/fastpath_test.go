package history_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/history/histgen"
)

// The decoder's fast paths (recordFast, opPrefixFast) must decode exactly what the general
// path decodes, and leave every line they do not take to it, errors included. These tests
// decode the same lines both ways and compare the ops and the error texts.

// sameDecoding decodes line with both decoders and fails the test where they differ.
func sameDecoding(t testing.TB, fast, general func([]byte, *history.Op) error, line []byte) {
	t.Helper()
	var a, b history.Op
	errA, errB := fast(line, &a), general(line, &b)
	switch {
	case (errA == nil) != (errB == nil) || (errA != nil && errA.Error() != errB.Error()):
		t.Fatalf("line %q:\nfast path error    %v\ngeneral path error %v", line, errA, errB)
	case errA == nil && !reflect.DeepEqual(a.Clone(), b.Clone()):
		t.Fatalf("line %q:\nfast path    %+v\ngeneral path %+v", line, a.Clone(), b.Clone())
	}
}

func generatedLines(t testing.TB, gen func(io.Writer, int, int64) error, n int) [][]byte {
	var buf bytes.Buffer
	if err := gen(&buf, n, 7); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	return lines[1:] // the header
}

// TestFastPathsMatchGeneralOnGeneratedHistories: every line of a stock and a transaction-read
// history decodes the same both ways.
func TestFastPathsMatchGeneralOnGeneratedHistories(t *testing.T) {
	for name, gen := range map[string]func(io.Writer, int, int64) error{
		"stock": histgen.Generate, "txn-reads": histgen.GenerateTxnReads,
	} {
		t.Run(name, func(t *testing.T) {
			fast, general := history.DecodeLine(true), history.DecodeLine(false)
			for _, line := range generatedLines(t, gen, 20_000) {
				sameDecoding(t, fast, general, line)
			}
		})
	}
}

// oddLines are lines a writer would not produce (or would produce only rarely), next to the
// shapes the fast paths take, so that each of their checks is taken both ways.
var oddLines = []string{
	// The writer's shapes, as a reference.
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"key":"k","value":"3-1"}}`,
	`{"i":2,"t":3,"p":3,"type":"ok","f":"send","of":1,"value":{"topic":"t","partition":0,"offset":4,"key":"k","value":"3-1"}}`,
	`{"i":2,"t":3,"p":3,"type":"ok","f":"poll","value":{"isolation":"read_committed","records":[{"topic":"t","partition":0,"offset":0,"value":"v"},{"topic":"t","partition":11,"offset":9,"key":"k","value":""}]}}`,
	// Escaped strings, in every string the fast paths read.
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t\u0031","partition":0,"key":"k","value":"3-1"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"key":"k\"","value":"3-1"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"key":"k","value":"3\/1"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"key":"k","value":"\ud800"}}`,
	`{"i":1,"t":2,"p":3,"type":"invok\u0065","f":"send","value":null}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"s\u0065nd","value":null}`,
	"{\"i\":1,\"t\":2,\"p\":3,\"type\":\"invoke\",\"f\":\"send\",\"value\":{\"topic\":\"t\xff\",\"partition\":0,\"value\":\"\xc3\xa9\"}}",
	"{\"i\":1,\"t\":2,\"p\":3,\"type\":\"invoke\",\"f\":\"send\",\"value\":{\"topic\":\"t\",\"partition\":0,\"value\":\"a\tb\"}}",
	`{"\u0069":1,"t":2,"p":3,"type":"invoke","f":"send","value":null}`,
	// Missing fields and nulls.
	`{"t":2,"p":3,"type":"invoke","f":"send","value":null}`,
	`{"i":1,"p":3,"type":"invoke","f":"send","value":null}`,
	`{"i":1,"t":2,"type":"invoke","f":"send","value":null}`,
	`{"i":1,"t":2,"p":3,"f":"send","value":null}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","value":null}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"","value":null}`,
	`{"i":1,"t":2,"p":3,"type":"","f":"send"}`,
	`{"i":null,"t":2,"p":3,"type":"invoke","f":"send"}`,
	`{"i":1,"t":null,"p":null,"type":"invoke","f":"send"}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","of":null}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":null,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":null}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":null,"partition":0,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"partition":0,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"offset":null,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"key":null,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{}}`,
	`{"i":1,"t":2}`,
	`{"i":1}`,
	`{}`,
	`{"i":1,"t":2,"p":3,"type":"invoke"`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"v"`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"v`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","of":`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"se`,
	`{"i":1,"t":2,"p":`,
	`{"i":`,
	`{"i"`,
	`{`,
	// Unusual order, whitespace, unknown and duplicate members.
	`{"t":2,"i":1,"p":3,"type":"invoke","f":"send","value":null}`,
	`{"i":1,"t":2,"p":3,"f":"send","type":"invoke","value":null}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","value":{"topic":"t","partition":0,"value":"v"},"f":"send"}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"partition":0,"topic":"t","value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"v","key":"k"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"key":"k","offset":3,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"v","value":"w"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"v","headers":{}}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"v"} }`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"v" }}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t", "partition":0,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value": {"topic":"t","partition":0,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{ "topic":"t","partition":0,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic" :"t","partition":0,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition": 0,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0 ,"value":"v"}}`,
	` {"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":null}`,
	`{ "i":1,"t":2,"p":3,"type":"invoke","f":"send","value":null}`,
	`{"i": 1,"t":2,"p":3,"type":"invoke","f":"send","value":null}`,
	`{"i":1 ,"t":2,"p":3,"type":"invoke","f":"send","value":null}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send" ,"value":null}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","of":0 }`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":null} `,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":null}x`,
	`{"i":1,"i":2,"t":2,"p":3,"type":"invoke","f":"send"}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","i":null}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","f":""}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","type":"ok"}`,
	`{"i":1,"t":2,"p":3,"type":"ok","f":"send","of":0,"of":null}`,
	`{"i":1,"t":2,"p":"nemesis","type":"invoke","f":"kill","value":{"nodes":[1]}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"kill","value":{"nodes":[1]}}`,
	`{"i":1,"t":2,"p":3,"type":"done","f":"send"}`,
	`{"i":1,"t":2,"p":3,"type":"OK","f":"send"}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":[]}`,
	`{"i":1,"t":2,"p":3,"type":"ok","f":"poll","value":{"records":[{"topic":"t","partition":0,"value":"v"} ,{"topic":"t","partition":1,"value":"w"}]}}`,
	`{"i":1,"t":2,"p":3,"type":"ok","f":"poll","value":{"records":[{"topic":"t","partition":0,"value":"v"},null]}}`,
	`{"i":1,"t":2,"p":3,"type":"ok","f":"poll","value":{"records":[{"topic":"t","partition":0,"value":"v"},]}}`,
	// Numbers at the limits.
	`{"i":0,"t":0,"p":0,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"offset":0,"value":"v"}}`,
	`{"i":-0,"t":-0,"p":-0,"type":"invoke","f":"send","value":{"topic":"t","partition":-0,"offset":-0,"value":"v"}}`,
	`{"i":-1,"t":2,"p":3,"type":"invoke","f":"send"}`,
	`{"i":01,"t":2,"p":3,"type":"invoke","f":"send"}`,
	`{"i":1,"t":2,"p":03,"type":"invoke","f":"send"}`,
	`{"i":1.0,"t":2,"p":3,"type":"invoke","f":"send"}`,
	`{"i":1e3,"t":2,"p":3,"type":"invoke","f":"send"}`,
	`{"i":1,"t":2E3,"p":3,"type":"invoke","f":"send"}`,
	`{"i":+1,"t":2,"p":3,"type":"invoke","f":"send"}`,
	`{"i":-,"t":2,"p":3,"type":"invoke","f":"send"}`,
	`{"i":"1","t":2,"p":3,"type":"invoke","f":"send"}`,
	`{"i":999999999999999999,"t":2,"p":3,"type":"invoke","f":"send"}`,
	`{"i":9999999999999999999,"t":2,"p":3,"type":"invoke","f":"send"}`,
	`{"i":9223372036854775807,"t":-9223372036854775808,"p":9223372036854775807,"type":"ok","f":"send","of":9223372036854775806}`,
	`{"i":9223372036854775808,"t":2,"p":3,"type":"invoke","f":"send"}`,
	`{"i":1,"t":-9223372036854775809,"p":3,"type":"invoke","f":"send"}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":2147483647,"offset":9223372036854775807,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":2147483648,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":-2147483648,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":-1,"offset":-1,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":-2,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":1.5,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"offset":1e2,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"offset":123456789012345678,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"offset":1234567890123456789,"value":"v"}}`,
	`{"i":1,"t":2,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"offset":12345678901234567890,"value":"v"}}`,
	`{"i":3,"t":2,"p":3,"type":"ok","f":"send","of":3}`,
	`{"i":3,"t":2,"p":3,"type":"invoke","f":"send","of":1}`,
	`{"i":3,"t":2,"p":3,"type":"ok","f":"send","of":-1}`,
}

// TestFastPathsMatchGeneralOnOddLines compares the two on hand-made lines, and on every
// truncation and a set of one-byte changes of each: whatever the fast paths take or leave,
// the result and any error must be the general path's.
func TestFastPathsMatchGeneralOnOddLines(t *testing.T) {
	fast, general := history.DecodeLine(true), history.DecodeLine(false)
	lines := append([]string(nil), oddLines...)
	gen := generatedLines(t, histgen.GenerateTxnReads, 300)[280:] // completions with reads, polls
	if testing.Short() {
		gen = gen[:4]
	}
	for _, l := range gen {
		lines = append(lines, string(l))
	}
	for _, line := range lines {
		sameDecoding(t, fast, general, []byte(line))
		for n := range len(line) {
			sameDecoding(t, fast, general, []byte(line[:n]))
			for _, c := range []byte(` "\,:{}[]0-9.ea`) {
				b := []byte(line)
				b[n] = c
				sameDecoding(t, fast, general, b)
			}
		}
	}
}

// TestValuesFromTheArenaSurvive: record values cut from the arena's shared chunks keep their
// contents across many chunks of later lines.
func TestValuesFromTheArenaSurvive(t *testing.T) {
	var buf strings.Builder
	buf.WriteString(`{"verity_history":1}` + "\n")
	const n = 20_000
	for i := range n {
		fmt.Fprintf(&buf, `{"i":%d,"t":0,"p":1,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"value-%d-%s"}}`+"\n",
			i, i, strings.Repeat("x", i%50))
	}
	r, err := history.NewReader(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	var op history.Op
	for {
		err := r.Next(&op)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, op.Value.Send.Value)
	}
	if len(kept) != n {
		t.Fatalf("read %d ops, want %d", len(kept), n)
	}
	for i, v := range kept {
		if want := fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i%50)); v != want {
			t.Fatalf("value %d is %q, want %q", i, v, want)
		}
	}
}

// FuzzFastPaths compares the fast paths with the general path on arbitrary lines.
func FuzzFastPaths(f *testing.F) {
	for _, l := range oddLines {
		f.Add([]byte(l))
	}
	for _, l := range generatedLines(f, histgen.GenerateTxnReads, 200)[150:] {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		sameDecoding(t, history.DecodeLine(true), history.DecodeLine(false), line)
	})
}
