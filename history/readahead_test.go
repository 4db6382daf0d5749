package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// readTrace is everything a caller of Next can see: each op with the Line after it, then the
// final error with Line and Torn.
type readTrace struct {
	ops   []Op
	lines []int
	err   string
	line  int
	torn  int
}

func traceReader(t *testing.T, in io.Reader, ahead func(*Reader)) readTrace {
	t.Helper()
	r, err := NewReader(in)
	require.NoError(t, err)
	defer r.Close()
	if ahead != nil {
		ahead(r)
	}
	var tr readTrace
	var op Op
	for {
		err := r.Next(&op)
		if err != nil {
			tr.err, tr.line, tr.torn = err.Error(), r.Line(), r.Torn()
			require.Equal(t, err, r.Next(&op), "the error is sticky")
			return tr
		}
		tr.ops = append(tr.ops, op.Clone())
		tr.lines = append(tr.lines, r.Line())
	}
}

// TestReadAheadReadsAsNext: with ReadAhead, Next returns the same ops, lines, errors and torn
// line as without, whatever the number of workers and however the lines fall into blocks.
func TestReadAheadReadsAsNext(t *testing.T) {
	var samples bytes.Buffer
	w, err := NewWriter(&samples, Header{})
	require.NoError(t, err)
	writeSamples(t, w)
	_, body, _ := strings.Cut(samples.String(), "\n")
	var many strings.Builder
	many.WriteString(testHeader + "\n")
	for i := range 3000 {
		many.WriteString(opLine(i) + "\n")
		if i%97 == 0 {
			many.WriteString("\n  \n")
		}
	}
	big := many.String()
	lines := func(ls ...string) string { return strings.Join(ls, "\n") }
	torn := `{"i":3,"t":30,"p":1,"type":"invoke","f":"send","value":{"topic":"t","par`
	inputs := map[string]string{
		"samples":                   testHeader + "\n" + body,
		"many":                      big,
		"many without last newline": strings.TrimSuffix(big, "\n"),
		"many then torn":            big + torn,
		"many then a bad line":      big + "hello\n" + opLine(5000) + "\n",
		"bad line in the middle":    strings.Replace(big, opLine(1500)+"\n", "{]\n", 1),
		"i goes back in the middle": strings.Replace(big, opLine(2000)+"\n", opLine(3)+"\n", 1),
		"header only":               testHeader + "\n",
		"torn only":                 lines(testHeader, torn),
		"torn after one op":         lines(testHeader, opLine(0), "{"),
		"torn shape in the middle":  lines(testHeader, opLine(0), torn, opLine(4), ""),
		"blank unterminated last":   lines(testHeader, opLine(0), "   "),
		"missing f on the last":     lines(testHeader, opLine(0), `{"i":1,"t":1,"p":1,"type":"ok"}`),
		"CRLF":                      strings.ReplaceAll(lines(testHeader, opLine(0), opLine(1), ""), "\n", "\r\n"),
	}
	for name, input := range inputs {
		t.Run(name, func(t *testing.T) {
			want := traceReader(t, strings.NewReader(input), nil)
			for _, workers := range []int{1, 2, 3} {
				for _, block := range []int{1, 200, 4096, aheadBlock} {
					got := traceReader(t, strings.NewReader(input), func(r *Reader) { r.readAhead(workers, block) })
					if !reflect.DeepEqual(want, got) {
						t.Fatalf("workers %d, blocks of %d bytes: read ahead differs:\nwant err %q line %d torn %d, %d ops\ngot  err %q line %d torn %d, %d ops",
							workers, block, want.err, want.line, want.torn, len(want.ops), got.err, got.line, got.torn, len(got.ops))
					}
				}
			}
		})
	}
}

// TestReadAheadLongLinesAndReadErrors: lines longer than a block, and a reading error after
// some lines, come out as without ReadAhead.
func TestReadAheadLongLinesAndReadErrors(t *testing.T) {
	recs := make([]Record, 20000)
	for i := range recs {
		recs[i] = rec("verity", 4, "", fmt.Sprintf("3-%d", i)).At(int64(i))
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{})
	require.NoError(t, err)
	for range 3 {
		inv, err := w.Invoke(Client(1), FFinalRead, Payload{FinalRead: &FinalRead{Topic: "verity", Partition: 4}})
		require.NoError(t, err)
		_, err = w.Complete(inv, OK, Payload{FinalRead: &FinalRead{Topic: "verity", Partition: 4, End: 20000, Records: recs}}, "")
		require.NoError(t, err)
	}
	full := buf.String()
	boom := errors.New("disk on fire")
	inputs := map[string]func() io.Reader{
		"long lines":          func() io.Reader { return strings.NewReader(full) },
		"one byte at a time":  func() io.Reader { return iotest.OneByteReader(strings.NewReader(full)) },
		"long torn last line": func() io.Reader { return strings.NewReader(full[:len(full)-100]) },
		"read error":          func() io.Reader { return io.MultiReader(strings.NewReader(full[:len(full)/2]), iotest.ErrReader(boom)) },
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			want := traceReader(t, in(), nil)
			for _, block := range []int{100, 1 << 20} {
				got := traceReader(t, in(), func(r *Reader) { r.readAhead(2, block) })
				require.Equal(t, want, got, "blocks of %d bytes", block)
			}
		})
	}
}

// TestReadAheadClose: Close stops the goroutines of a reader read only in part, and a Next
// after it fails instead of waiting forever.
func TestReadAheadClose(t *testing.T) {
	var many strings.Builder
	many.WriteString(testHeader + "\n")
	for i := range 20000 {
		many.WriteString(opLine(i) + "\n")
	}
	r, err := NewReader(strings.NewReader(many.String()))
	require.NoError(t, err)
	r.readAhead(2, 256)
	var op Op
	for range 10 {
		require.NoError(t, r.Next(&op))
	}
	require.NoError(t, r.Close())
	for r.Next(&op) == nil { // what was decoded before Close may still come
	}
	require.ErrorIs(t, r.Next(&op), r.Next(&op))
}
