package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

const testHeader = `{"verity_history":1,"started":"2026-01-01T00:00:00Z","seed":7}`

// opLine is a valid send invoke with index i.
func opLine(i int) string {
	return fmt.Sprintf(`{"i":%d,"t":%d,"p":1,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"1-%d"}}`, i, 10*i, i)
}

// readAll reads a history and returns the indices it read, Torn() and the final error (nil
// at a clean end).
func readAll(t *testing.T, input string) (idx []int64, torn int, err error) {
	t.Helper()
	r, err := NewReader(strings.NewReader(input))
	require.NoError(t, err)
	var op Op
	for {
		err = r.Next(&op)
		if err == io.EOF {
			// EOF is sticky.
			require.ErrorIs(t, r.Next(&op), io.EOF)
			return idx, r.Torn(), nil
		}
		if err != nil {
			// So is any other error.
			require.Equal(t, err, r.Next(&op))
			return idx, r.Torn(), err
		}
		idx = append(idx, op.Index)
	}
}

func TestReaderLines(t *testing.T) {
	const torn = `{"i":3,"t":30,"p":1,"type":"invoke","f":"send","value":{"topic":"t","par`
	lines := func(ls ...string) string { return strings.Join(ls, "\n") }
	cases := []struct {
		name     string
		input    string
		want     []int64
		torn     int
		errLine  int    // 0: no error
		errMatch string // part of the error text
	}{
		{name: "header only", input: testHeader + "\n"},
		{name: "header without newline", input: testHeader},
		{name: "clean", input: lines(testHeader, opLine(0), opLine(1), opLine(2), ""), want: []int64{0, 1, 2}},
		{name: "last line without newline is fine when valid", input: lines(testHeader, opLine(0), opLine(1)), want: []int64{0, 1}},
		{name: "torn last line skipped", input: lines(testHeader, opLine(0), opLine(1), opLine(2), torn), want: []int64{0, 1, 2}, torn: 5},
		{name: "torn after one byte", input: lines(testHeader, opLine(0), "{"), want: []int64{0}, torn: 3},
		{name: "torn inside a string escape", input: lines(testHeader, opLine(0), `{"i":1,"error":"\u00`), want: []int64{0}, torn: 3},
		{name: "torn shape in the middle", input: lines(testHeader, opLine(0), torn, opLine(4), ""), want: []int64{0}, errLine: 3, errMatch: "history line 3: "},
		{name: "torn shape with newline at the end", input: lines(testHeader, opLine(0), torn, ""), want: []int64{0}, errLine: 3, errMatch: "history line 3: "},
		{name: "malformed middle line", input: lines(testHeader, opLine(0), opLine(1), `{"i":2,"t":1,"p":1,"type":"invoke","f":"send","value":{]}`, opLine(3)), want: []int64{0, 1}, errLine: 4, errMatch: "history line 4: "},
		{name: "garbage middle line", input: lines(testHeader, opLine(0), "hello", opLine(3)), want: []int64{0}, errLine: 3},
		{name: "repeated i", input: lines(testHeader, opLine(0), opLine(1), opLine(1), ""), want: []int64{0, 1}, errLine: 4, errMatch: "i 1 does not follow i 1"},
		{name: "decreasing i", input: lines(testHeader, opLine(0), opLine(5), opLine(3), ""), want: []int64{0, 5}, errLine: 4, errMatch: "i 3 does not follow i 5"},
		{name: "decreasing i on an unterminated last line", input: lines(testHeader, opLine(5), opLine(3)), want: []int64{5}, errLine: 3, errMatch: "does not follow"},
		{name: "gaps in i are allowed", input: lines(testHeader, opLine(2), opLine(7), ""), want: []int64{2, 7}},
		{name: "unknown type", input: lines(testHeader, opLine(0), `{"i":1,"t":1,"p":1,"type":"maybe","f":"send"}`), want: []int64{0}, errLine: 3, errMatch: `unknown type "maybe"`},
		{name: "missing f", input: lines(testHeader, `{"i":0,"t":1,"p":1,"type":"ok"}`, opLine(1)), errLine: 2, errMatch: `history line 2: missing "f"`},
		{name: "missing f on a valid unterminated last line", input: lines(testHeader, opLine(0), `{"i":1,"t":1,"p":1,"type":"ok"}`), want: []int64{0}, errLine: 3, errMatch: `missing "f"`},
		{name: "blank lines are skipped", input: lines(testHeader, "", opLine(0), "  \t", opLine(1), "", ""), want: []int64{0, 1}},
		{name: "CRLF line ends", input: strings.ReplaceAll(lines(testHeader, opLine(0), opLine(1), ""), "\n", "\r\n"), want: []int64{0, 1}},
		{name: "blank unterminated last line", input: lines(testHeader, opLine(0), "   "), want: []int64{0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			idx, torn, err := readAll(t, c.input)
			require.Equal(t, c.want, idx)
			require.Equal(t, c.torn, torn)
			if c.errLine == 0 {
				require.NoError(t, err)
				return
			}
			var le *LineError
			require.ErrorAs(t, err, &le)
			require.Equal(t, c.errLine, le.Line)
			require.Contains(t, err.Error(), fmt.Sprintf("history line %d: ", c.errLine))
			require.Contains(t, err.Error(), c.errMatch)
		})
	}
}

func TestReaderHeader(t *testing.T) {
	cases := []struct {
		name, input, match string
	}{
		{"empty", "", "missing the header"},
		{"blank line", "\n" + opLine(0), "history line 1: header"},
		{"not JSON", "hello\n", "history line 1: header"},
		{"not an object", "[1]\n", "history line 1: header"},
		{"no version", `{"started":"x"}` + "\n", "not a Verity history"},
		{"an op line first", opLine(0) + "\n", "not a Verity history"},
		{"other version", `{"verity_history":2}` + "\n", "verity_history 2"},
		{"version as a string", `{"verity_history":"1"}` + "\n", "history line 1: header"},
		{"torn header", `{"verity_history":1,"sta`, "torn header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(c.input))
			require.Nil(t, r)
			require.ErrorContains(t, err, c.match)
		})
	}
}

// TestReaderLongLines: lines longer than the read buffer, in the middle and torn at the end.
func TestReaderLongLines(t *testing.T) {
	recs := make([]Record, 40000) // about 2.6 MB, more than twice the buffer
	for i := range recs {
		recs[i] = rec("verity", 4, "", fmt.Sprintf("3-%d", i)).At(int64(i))
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{})
	require.NoError(t, err)
	inv, err := w.Invoke(Client(1), FFinalRead, Payload{FinalRead: &FinalRead{Topic: "verity", Partition: 4}})
	require.NoError(t, err)
	_, err = w.Complete(inv, OK, Payload{FinalRead: &FinalRead{Topic: "verity", Partition: 4, End: 40000, Records: recs}}, "")
	require.NoError(t, err)
	_, err = w.Invoke(Client(1), FFinalRead, Payload{FinalRead: &FinalRead{Topic: "verity", Partition: 5}})
	require.NoError(t, err)
	require.Greater(t, buf.Len(), 2*readBuffer)
	full := buf.String()

	// iotest.OneByteReader makes the bufio.Reader fill in the smallest steps there are.
	for _, in := range []io.Reader{strings.NewReader(full), iotest.OneByteReader(strings.NewReader(full)), iotest.DataErrReader(strings.NewReader(full))} {
		r, err := NewReader(in)
		require.NoError(t, err)
		var op Op
		require.NoError(t, r.Next(&op))
		require.NoError(t, r.Next(&op))
		require.Equal(t, recs, op.Value.FinalRead.Records)
		require.NoError(t, r.Next(&op))
		require.ErrorIs(t, r.Next(&op), io.EOF)
		require.Zero(t, r.Torn())
	}

	// The same big line cut short at the end of the file is a torn line.
	long := strings.Split(full, "\n")[2]
	idx, torn, err := readAll(t, testHeader+"\n"+opLine(0)+"\n"+long[:len(long)-10])
	require.NoError(t, err)
	require.Equal(t, []int64{0}, idx)
	require.Equal(t, 3, torn)
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	in := io.MultiReader(strings.NewReader(testHeader+"\n"+opLine(0)+"\n"), iotest.ErrReader(boom))
	r, err := NewReader(in)
	require.NoError(t, err)
	var op Op
	require.NoError(t, r.Next(&op))
	err = r.Next(&op)
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "line 3")
}

// TestReaderKeptValuesSurvive: strings, offsets and of pointers that the caller keeps stay
// intact however many lines follow; only payload structs and record slices are reused.
func TestReaderKeptValuesSurvive(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{})
	require.NoError(t, err)
	var invs []Op
	for i := range 2000 {
		inv, err := w.Invoke(Client(i%7), FSend, Payload{Send: ptr(rec("verity", int32(i%12), fmt.Sprint("k", i%5), fmt.Sprint("v-", i)))})
		require.NoError(t, err)
		invs = append(invs, inv)
		if i%3 == 0 {
			_, err = w.CompleteAsync(invs[i/2], OK, Payload{Send: ptr(rec("verity", 1, "", fmt.Sprint("v-", i)).At(int64(i)))}, "")
			require.NoError(t, err)
		}
	}
	r, err := NewReader(&buf)
	require.NoError(t, err)
	type kept struct {
		value string
		off   *int64
		of    *int64
	}
	var ks []kept
	var op Op
	for r.Next(&op) == nil {
		ks = append(ks, kept{op.Value.Send.Value, op.Value.Send.Offset, op.Of})
	}
	n := 0
	for _, k := range ks {
		if k.off == nil {
			require.Equal(t, fmt.Sprint("v-", n), k.value)
			n++
			continue
		}
		require.Equal(t, fmt.Sprint("v-", *k.off), k.value)
		require.NotNil(t, k.of)
		require.Equal(t, invs[*k.off/2].Index, *k.of)
	}
	require.Equal(t, 2000, n)
}

func TestOpenCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path, Header{Seed: 3})
	require.NoError(t, err)
	written := writeSamples(t, w)
	require.NoError(t, w.Close())
	require.NoError(t, w.Close(), "a second Close is a no-op")
	_, err = w.Invoke(Client(1), FSend, Payload{})
	require.ErrorIs(t, err, os.ErrClosed)

	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, w.Bytes(), st.Size())

	r, err := Open(path)
	require.NoError(t, err)
	require.EqualValues(t, 3, r.Header().Seed)
	var op Op
	n := 0
	for ; r.Next(&op) == nil; n++ {
		require.Equal(t, normalize(t, written[n]), op.Clone())
	}
	require.Equal(t, len(written), n)
	require.NoError(t, r.Close())
	require.NoError(t, r.Close())

	_, err = Open(filepath.Join(t.TempDir(), "missing.jsonl"))
	require.ErrorIs(t, err, os.ErrNotExist)
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("nope\n"), 0o644))
	_, err = Open(bad)
	require.ErrorContains(t, err, "bad.jsonl")
}

// A record that leaves its partition out is refused at its line, saying what to write, rather
// than read as partition 0; -1 (NoPartition) is how a history says the partition is not known.
func TestReaderRefusesAMissingPartition(t *testing.T) {
	for _, c := range []struct{ name, line, says string }{
		{"send", `{"i":1,"p":1,"type":"invoke","f":"send","value":{"topic":"t","value":"1-1"}}`, `write "partition": -1 when it is not known`},
		{"poll", `{"i":1,"p":1,"type":"ok","f":"poll","value":{"isolation":"read_committed","records":[{"topic":"t","offset":0,"value":"1-1"}]}}`, `"records": record 0: a record without "partition"`},
		{"txn", `{"i":1,"p":1,"type":"invoke","f":"txn","value":{"txn_id":"x","records":[{"topic":"t","value":"1-1"}],"intent":"commit"}}`, `txn value: "records": record 0`},
		{"final read", `{"i":1,"p":9,"type":"ok","f":"final-read","value":{"topic":"t","isolation":"read_uncommitted","from":0,"end":0,"records":[]}}`, `it states the partition it scanned`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := readAll(t, testHeader+"\n"+opLine(0)+"\n"+c.line+"\n")
			var le *LineError
			require.ErrorAs(t, err, &le)
			require.Equal(t, 3, le.Line)
			require.ErrorContains(t, err, "history line 3: ")
			require.ErrorContains(t, err, c.says)
		})
	}

	unknown := `{"i":1,"p":1,"type":"info","f":"send","value":{"topic":"t","partition":-1,"value":"1-1"},"error":"x"}`
	r, err := NewReader(strings.NewReader(testHeader + "\n" + unknown + "\n"))
	require.NoError(t, err)
	var op Op
	require.NoError(t, r.Next(&op))
	require.Equal(t, NoPartition, op.Value.Send.Partition)
	line, err := AppendOp(nil, op)
	require.NoError(t, err)
	require.Contains(t, string(line), `"partition":-1`)
}

func TestPartitionName(t *testing.T) {
	require.Equal(t, "orders-3", PartitionName("orders", 3))
	require.Equal(t, "orders (no partition)", PartitionName("orders", NoPartition))
}
