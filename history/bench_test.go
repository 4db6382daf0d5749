package history_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/history/histgen"
)

// BenchmarkWriterSend measures what recording costs a producer per send event: encoding, the
// lock, and one write. "file" writes to a real file (a write syscall per event, as in a run),
// "discard" isolates the encoding, "parallel" has every P recording at once into one file.
func BenchmarkWriterSend(b *testing.B) {
	open := map[string]func(b *testing.B) *history.Writer{
		"file": func(b *testing.B) *history.Writer {
			w, err := history.Create(filepath.Join(b.TempDir(), "history.jsonl"), history.Header{Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			return w
		},
		"discard": func(b *testing.B) *history.Writer {
			w, err := history.NewWriter(io.Discard, history.Header{Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			return w
		},
	}
	// Values are made up front and the record reused, so that B/op and allocs/op are the
	// writer's own.
	values := make([]string, 1024)
	for i := range values {
		values[i] = "3-" + strconv.Itoa(100000+i)
	}
	for _, name := range []string{"file", "discard"} {
		b.Run(name, func(b *testing.B) {
			w := open[name](b)
			var off int64
			rec := &history.Record{Topic: "verity", Partition: 7, Key: "k17", Offset: &off}
			b.ReportAllocs()
			start := w.Bytes()
			n := 0
			for b.Loop() {
				n++
				off, rec.Value = int64(n), values[n%len(values)]
				if _, err := w.Append(history.Op{Process: history.Client(3), Type: history.OK, F: history.FSend,
					Value: history.Payload{Send: rec}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(w.Bytes()-start)/float64(n), "file-B/op")
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("parallel-file", func(b *testing.B) {
		w := open["file"](b)
		start := w.Bytes()
		var mu sync.Mutex
		proc := 0
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			mu.Lock()
			p := proc
			proc++
			mu.Unlock()
			rec := history.Record{Topic: "verity", Partition: int32(p % 12), Key: "k17"}
			n := 0
			for pb.Next() {
				n++
				rec.Value = values[n%len(values)]
				if _, err := w.Append(history.Op{Process: history.Client(p), Type: history.Invoke, F: history.FSend,
					Value: history.Payload{Send: &rec}}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(w.Bytes()-start)/float64(w.Count()), "file-B/op")
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	})
}

// benchOps is the size of the generated history the reader benchmarks read.
const benchOps = 100_000

// generated returns a synthetic history of benchOps events (send, poll, txn, final-read over
// 12 partitions). b.Loop runs a benchmark function once, so this is not in the timing.
func generated(b *testing.B) []byte {
	var buf bytes.Buffer
	if err := histgen.Generate(&buf, benchOps, 1); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkReader reads the whole generated history per iteration with the hand decoder.
func BenchmarkReader(b *testing.B) {
	data := generated(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	ops := 0
	for b.Loop() {
		r, err := history.NewReader(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		var op history.Op
		for {
			err := r.Next(&op)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			ops++
		}
	}
	reportOps(b, ops, len(data))
}

// BenchmarkReaderEncodingJSON is the baseline: the same history, each line unmarshalled into
// an Op by encoding/json (Op.UnmarshalJSON decodes the payload that f names; its records, by
// Record.UnmarshalJSON, with the package's decoder).
func BenchmarkReaderEncodingJSON(b *testing.B) {
	data := generated(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	ops := 0
	for b.Loop() {
		br := bufio.NewReaderSize(bytes.NewReader(data), 1<<20)
		if _, err := br.ReadSlice('\n'); err != nil { // the header
			b.Fatal(err)
		}
		for {
			line, err := br.ReadSlice('\n')
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			var op history.Op
			if err := json.Unmarshal(line, &op); err != nil {
				b.Fatal(err)
			}
			ops++
		}
	}
	reportOps(b, ops, len(data))
}

func reportOps(b *testing.B, ops, size int) {
	b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64(size)/float64(benchOps), "file-B/op")
}
