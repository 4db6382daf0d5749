package verify

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/history/histgen"
)

// BenchmarkCheck measures the checker on generated histories (histgen: sends, polls,
// transactions and final reads over 12 partitions) of 100k, 1M and 5M ops. For each size:
//
//	encoding-json  the naive floor: each line unmarshalled into a history.Op by encoding/json
//	reader         history.Reader alone (its hand-written decoder)
//	checks         the checks alone, on ops already decoded (decoding is outside the timing)
//	end-to-end     verify.CheckFile: open, read, check, results
//
// Each reports ops/s, file-B/op (history bytes per op), alloc-B/op (bytes allocated per op)
// and, for end-to-end, peak-MiB (the Go runtime's peak mapped memory during the check). The
// 1M and 5M sizes are skipped under -short; their files are generated once and cached in
// os.TempDir()/verity-bench.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000, 5_000_000} {
		b.Run(fmt.Sprintf("ops=%s", sizeLabel(n)), func(b *testing.B) {
			if n > 100_000 && testing.Short() {
				b.Skip("1M and 5M ops are skipped under -short")
			}
			path, size := benchHistory(b, n)
			b.Run("encoding-json", func(b *testing.B) { benchJSON(b, path, size) })
			b.Run("reader", func(b *testing.B) { benchReader(b, path, size) })
			b.Run("checks", func(b *testing.B) { benchChecks(b, path, size) })
			b.Run("end-to-end", func(b *testing.B) { benchEndToEnd(b, path, size) })
		})
	}
}

// BenchmarkCheckTxnReads times the checker on histories whose transactions read (the
// dependency graph's wr, process and realtime edges, its components and the cycle search).
func BenchmarkCheckTxnReads(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("ops=%s", sizeLabel(n)), func(b *testing.B) {
			if n > 100_000 && testing.Short() {
				b.Skip("1M ops are skipped under -short")
			}
			path, size := benchHistoryOf(b, "histgen-txnreads", n, histgen.GenerateTxnReads)
			b.Run("reader", func(b *testing.B) { benchReader(b, path, size) })
			b.Run("checks", func(b *testing.B) { benchChecks(b, path, size) })
			b.Run("end-to-end", func(b *testing.B) { benchEndToEnd(b, path, size) })
		})
	}
}

func sizeLabel(n int) string {
	if n%1_000_000 == 0 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return fmt.Sprintf("%dk", n/1000)
}

var benchFiles sync.Mutex

// benchHistory returns the path and size of a cached generated history of n ops.
func benchHistory(b *testing.B, n int) (string, int64) {
	return benchHistoryOf(b, "histgen", n, histgen.Generate)
}

// benchHistoryOf returns the path and size of a cached history of n ops that gen writes.
func benchHistoryOf(b *testing.B, name string, n int, gen func(io.Writer, int, int64) error) (string, int64) {
	benchFiles.Lock()
	defer benchFiles.Unlock()
	dir := filepath.Join(os.TempDir(), "verity-bench")
	path := filepath.Join(dir, fmt.Sprintf("%s-%d-seed1.jsonl", name, n))
	if st, err := os.Stat(path); err == nil {
		return path, st.Size()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	tmp, err := os.CreateTemp(dir, ".gen-*")
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err := gen(w, n, 1); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, st.Size()
}

// span is what one pass of a benchmark body handled: its ops, and — when only part of the
// pass counts (checks: not the decoding) — the time and allocation of that part.
type span struct {
	ops   int
	timed time.Duration // zero: the whole pass
	alloc uint64        // with timed set: bytes allocated in the timed part
}

// measure runs body once per b.Loop iteration and reports the per-op metrics.
func measure(b *testing.B, size int64, body func() span) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var total span
	partial := false
	for b.Loop() {
		start := time.Now()
		s := body()
		if s.timed == 0 {
			s.timed = time.Since(start)
		} else {
			partial = true
		}
		total.ops, total.timed, total.alloc = total.ops+s.ops, total.timed+s.timed, total.alloc+s.alloc
	}
	runtime.ReadMemStats(&after)
	if total.ops == 0 {
		b.Fatal("no ops")
	}
	if !partial {
		total.alloc = after.TotalAlloc - before.TotalAlloc
	}
	b.ReportMetric(float64(total.ops)/total.timed.Seconds(), "ops/s")
	b.ReportMetric(float64(size)*float64(b.N)/float64(total.ops), "file-B/op")
	b.ReportMetric(float64(total.alloc)/float64(total.ops), "alloc-B/op")
}

func benchJSON(b *testing.B, path string, size int64) {
	measure(b, size, func() span {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		br := bufio.NewReaderSize(f, 1<<20)
		if _, err := br.ReadBytes('\n'); err != nil { // the header
			b.Fatal(err)
		}
		n := 0
		for {
			line, err := br.ReadBytes('\n')
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
			n++
		}
		return span{ops: n}
	})
}

func benchReader(b *testing.B, path string, size int64) {
	measure(b, size, func() span {
		rd, err := history.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer rd.Close()
		var op history.Op
		n := 0
		for {
			err := rd.Next(&op)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		return span{ops: n}
	})
}

// benchChecks times Add and Results only: ops are decoded in batches outside the timing.
// cloneOp copies what the reader would reuse (payload structs and record lists), shallowly:
// cheaper than history.Op.Clone, so that the untimed copying disturbs the timed checks less.
func cloneOp(op *history.Op) history.Op {
	c := *op
	v := &c.Value
	if v.Send != nil {
		s := *v.Send
		v.Send = &s
	}
	if v.Txn != nil {
		t := *v.Txn
		t.Records, t.Reads = slices.Clone(t.Records), slices.Clone(t.Reads)
		v.Txn = &t
	}
	if v.Poll != nil {
		p := *v.Poll
		p.Records = slices.Clone(p.Records)
		v.Poll = &p
	}
	if v.FinalRead != nil {
		f := *v.FinalRead
		f.Records = slices.Clone(f.Records)
		v.FinalRead = &f
	}
	if v.RPW != nil {
		r := *v.RPW
		r.Input, r.Output = slices.Clone(r.Input), slices.Clone(r.Output)
		v.RPW = &r
	}
	return c
}

func benchChecks(b *testing.B, path string, size int64) {
	const batch = 1 << 16
	buf := make([]history.Op, 0, batch)
	measure(b, size, func() span {
		rd, err := history.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer rd.Close()
		c := New(rd.Header().Config, Options{})
		var timed time.Duration
		var alloc uint64
		var ms runtime.MemStats
		n := 0
		var op history.Op
		for done := false; !done; {
			b.StopTimer()
			buf = buf[:0]
			for len(buf) < batch {
				err := rd.Next(&op)
				if errors.Is(err, io.EOF) {
					done = true
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				buf = append(buf, cloneOp(&op))
			}
			b.StartTimer()
			runtime.ReadMemStats(&ms)
			a0, start := ms.TotalAlloc, time.Now()
			for i := range buf {
				c.Add(&buf[i])
			}
			timed += time.Since(start)
			runtime.ReadMemStats(&ms)
			alloc += ms.TotalAlloc - a0
			n += len(buf)
		}
		runtime.ReadMemStats(&ms)
		a0, start := ms.TotalAlloc, time.Now()
		r := c.Results()
		timed += time.Since(start)
		runtime.ReadMemStats(&ms)
		alloc += ms.TotalAlloc - a0
		if r.Verdict != "pass" {
			b.Fatalf("a generated history must pass, got %s: %v", r.Verdict, r.UnknownReasons)
		}
		return span{ops: n, timed: timed, alloc: alloc}
	})
}

func benchEndToEnd(b *testing.B, path string, size int64) {
	var peak uint64
	measure(b, size, func() span {
		stop := samplePeak(&peak)
		r, err := CheckFile(context.Background(), path, Options{})
		stop()
		if err != nil {
			b.Fatal(err)
		}
		if r.Verdict != "pass" {
			b.Fatalf("a generated history must pass, got %s: %v", r.Verdict, r.UnknownReasons)
		}
		return span{ops: int(r.History.Ops)}
	})
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
}

// samplePeak records the Go runtime's peak mapped memory (total minus released to the OS,
// which tracks RSS) every few milliseconds until stop is called.
func samplePeak(peak *uint64) (stop func()) {
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	read := func() {
		metrics.Read(samples)
		if v := samples[0].Value.Uint64() - samples[1].Value.Uint64(); v > *peak {
			*peak = v
		}
	}
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				read()
				return
			case <-t.C:
				read()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
