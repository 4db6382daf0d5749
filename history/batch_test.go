package history

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
)

type countingWriter struct {
	bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.Buffer.Write(p)
}

func TestAppendBatchWritesConsecutiveEventsInOneWrite(t *testing.T) {
	var out countingWriter
	w, err := NewWriter(&out, Header{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	writes := out.writes
	rec := func(v string) *Record { return &Record{Topic: "t", Partition: 0, Value: v} }
	inv, err := w.AppendBatch([]Op{
		{Process: Client(4), Type: Invoke, F: FSend, Value: Payload{Send: rec("4-1")}},
		{Process: Client(4), Type: Invoke, F: FSend, Value: Payload{Send: rec("4-2")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if inv[0].Index != 0 || inv[1].Index != 1 || out.writes != writes+1 {
		t.Fatalf("indices %d, %d and %d writes; want 0, 1 and one write", inv[0].Index, inv[1].Index, out.writes-writes)
	}
	if _, err := w.Invoke(Client(5), FSend, Payload{Send: rec("5-1")}); err != nil {
		t.Fatal(err)
	}
	of0, of1 := inv[0].Index, inv[1].Index
	r1 := rec("4-2").At(8)
	r0 := rec("4-1").At(7)
	done, err := w.AppendBatch([]Op{
		{Process: Client(4), Type: OK, F: FSend, Of: &of1, Value: Payload{Send: &r1}},
		{Process: Client(4), Type: Info, F: FSend, Of: &of0, Value: Payload{Send: &r0}, Error: "timeout"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if done[0].Index != 3 || done[1].Index != 4 || done[0].Time != done[1].Time {
		t.Fatalf("completions %+v", done)
	}
	// A bad op fails the whole batch, and nothing of it is written.
	bad := int64(99)
	if _, err := w.AppendBatch([]Op{
		{Process: Client(4), Type: OK, F: FSend, Value: Payload{Send: &r1}},
		{Process: Client(4), Type: OK, F: FSend, Of: &bad, Value: Payload{Send: &r1}},
	}); err == nil {
		t.Fatal(`an "of" naming a later op must fail the batch`)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendBatch([]Op{{Process: Client(4), Type: Invoke, F: FSend, Value: Payload{Send: rec("x")}}}); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}

	rd, err := NewReader(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var op Op
	for {
		err := rd.Next(&op)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(op.Type)+" "+op.Value.Send.Value)
	}
	want := []string{"invoke 4-1", "invoke 4-2", "invoke 5-1", "ok 4-2", "info 4-1"}
	if len(got) != len(want) {
		t.Fatalf("read back %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("read back %v, want %v", got, want)
		}
	}
	if w.Count() != 5 {
		t.Fatalf("Count %d, want 5", w.Count())
	}
}
