package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConcurrentWriters: many goroutines recording at once keep i strictly increasing (and
// dense) in file order, t non-decreasing in file order, every op present and every line whole.
func TestConcurrentWriters(t *testing.T) {
	const writers, perWriter = 8, 1000
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Go(func() {
			for n := range perWriter / 2 {
				r := rec("verity", int32(n%12), "", fmt.Sprintf("%d-%d", g, n))
				inv, err := w.Invoke(Client(g), FSend, Payload{Send: &r})
				if err != nil {
					errs <- err
					return
				}
				// Half the writers complete asynchronously, to exercise "of" under contention.
				complete := w.Complete
				if g%2 == 1 {
					complete = w.CompleteAsync
				}
				if _, err := complete(inv, OK, Payload{Send: ptr(r.At(int64(n)))}, ""); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	require.EqualValues(t, writers*perWriter, w.Count())
	require.EqualValues(t, buf.Len(), w.Bytes())

	r, err := NewReader(&buf)
	require.NoError(t, err)
	seen := map[string]int{}
	invokeOf := map[int64]Process{}
	var op Op
	var lastT int64
	for i := int64(0); ; i++ {
		err := r.Next(&op)
		if err == io.EOF {
			require.EqualValues(t, writers*perWriter, i)
			break
		}
		require.NoError(t, err)
		require.Equal(t, i, op.Index, "i is dense and in file order")
		require.GreaterOrEqual(t, op.Time, lastT, "t grows in file order")
		lastT = op.Time
		key := fmt.Sprintf("%s %s", op.Type, op.Value.Send.Value)
		seen[key]++
		if op.Type == Invoke {
			invokeOf[op.Index] = op.Process
		} else if op.Process.ID%2 == 1 {
			require.NotNil(t, op.Of)
			require.Equal(t, op.Process, invokeOf[*op.Of], "of names this process's invoke")
		} else {
			require.Nil(t, op.Of)
		}
	}
	require.Len(t, seen, writers*perWriter)
	for k, n := range seen {
		require.Equal(t, 1, n, k)
	}
}

func TestWriterRejects(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{})
	require.NoError(t, err)
	send := &Record{Topic: "t", Value: "v"}
	inv, err := w.Invoke(Client(1), FSend, Payload{Send: send})
	require.NoError(t, err)
	before := buf.Len()

	cases := []struct {
		name  string
		call  func() (Op, error)
		match string
	}{
		{"empty f", func() (Op, error) { return w.Invoke(Client(1), "", Payload{}) }, `missing "f"`},
		{"unknown type", func() (Op, error) { return w.Append(Op{Type: "done", F: FSend}) }, "unknown type"},
		{"of on an invoke", func() (Op, error) { return w.Append(Op{Type: Invoke, F: FSend, Of: ptr(int64(0))}) }, `"of" on an invoke`},
		{"of not earlier", func() (Op, error) { return w.Append(Op{Type: OK, F: FSend, Of: ptr(int64(99))}) }, "does not name an earlier op"},
		{"payload of another f", func() (Op, error) { return w.Invoke(Client(1), FPoll, Payload{Send: send}) }, "is a send payload"},
		{"two payload fields", func() (Op, error) {
			return w.Invoke(Client(1), FSend, Payload{Send: send, Raw: json.RawMessage(`{}`)})
		}, "2 fields set"},
		{"partition below -1", func() (Op, error) {
			return w.Invoke(Client(1), FPoll, Payload{Poll: &Poll{Records: []Record{{Topic: "t", Partition: -2, Value: "v"}}}})
		}, `poll value: "records": record 0: "partition" -2`},
		{"invalid raw", func() (Op, error) { return w.Invoke(NemesisP(), "kill", Payload{Raw: json.RawMessage(`{"nodes":`)}) }, "raw payload"},
		{"complete with invoke", func() (Op, error) { return w.Complete(inv, Invoke, Payload{}, "") }, "not a completion"},
		{"complete with junk type", func() (Op, error) { return w.CompleteAsync(inv, "junk", Payload{}, "") }, "not a completion"},
		{"complete a completion", func() (Op, error) {
			done := inv
			done.Type = OK
			return w.Complete(done, OK, Payload{}, "")
		}, "not an invoke"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.call()
			require.ErrorContains(t, err, c.match)
		})
	}
	require.Equal(t, before, buf.Len(), "a rejected op writes nothing")
	require.EqualValues(t, 1, w.Count())

	// The writer is still usable, and the next i follows on.
	op, err := w.Complete(inv, OK, Payload{Send: send}, "")
	require.NoError(t, err)
	require.EqualValues(t, 1, op.Index)

	_, err = NewWriter(&buf, Header{Version: 2})
	require.ErrorContains(t, err, "version 2")
}

// failAfter accepts n bytes, then fails every write, like a full disk.
type failAfter struct {
	n   int
	buf bytes.Buffer
}

var errDiskFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) <= f.n {
		f.n -= len(p)
		return f.buf.Write(p)
	}
	k := f.n
	f.n = 0
	f.buf.Write(p[:k])
	return k, errDiskFull
}

// TestWriterStickyError: after a failed (possibly partial) write nothing more is written, so
// the file still ends in its only torn line and stays readable.
func TestWriterStickyError(t *testing.T) {
	out := &failAfter{n: len(testHeader) + 200}
	w, err := NewWriter(out, Header{Started: "2026-01-01T00:00:00Z", Seed: 7})
	require.NoError(t, err)
	var failed error
	for i := 0; i < 10 && failed == nil; i++ {
		_, failed = w.Invoke(Client(1), FSend, Payload{Send: &Record{Topic: "t", Value: fmt.Sprint(i)}})
	}
	require.ErrorIs(t, failed, errDiskFull)
	_, err = w.Invoke(Client(1), FSend, Payload{})
	require.ErrorIs(t, err, errDiskFull, "sticky")
	require.ErrorIs(t, w.Close(), errDiskFull)
	require.EqualValues(t, out.buf.Len(), w.Bytes(), "Bytes counts the partial line too")

	r, err := NewReader(&out.buf)
	require.NoError(t, err)
	var op Op
	n := 0
	for ; r.Next(&op) == nil; n++ {
	}
	require.EqualValues(t, w.Count(), n)
	require.NotZero(t, r.Torn())
}

func TestWriterHeaderDefaults(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Seed: 9})
	require.NoError(t, err)
	require.Equal(t, Version, w.Header().Version)
	require.NotEmpty(t, w.Header().Started)
	require.Positive(t, w.Since())
	line, _, _ := strings.Cut(buf.String(), "\n")
	require.JSONEq(t, fmt.Sprintf(`{"verity_history":1,"started":%q,"seed":9}`, w.Header().Started), line)
}
