package report

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/history/histgen"
)

// BenchmarkRender renders report.html and junit.xml of a histgen history of 100k and 1M
// events (about 350 bytes each). It reports the time per render, the history read per
// second, and the peak live heap during a render (sampled every 2 ms), which must not grow
// with the number of events: the history is streamed into per-second buckets.
func BenchmarkRender(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(strconv.Itoa(n/1000)+"k-ops", func(b *testing.B) {
			dir := b.TempDir()
			hist := filepath.Join(dir, "history.jsonl")
			f, err := os.Create(hist)
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriterSize(f, 1<<20)
			if err := histgen.Generate(w, n, 1); err != nil {
				b.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			st, err := os.Stat(hist)
			if err != nil {
				b.Fatal(err)
			}
			r, err := history.Open(hist)
			if err != nil {
				b.Fatal(err)
			}
			res := sampleResults(hist, r.Header().Config)
			r.Close()
			runtime.GC()

			var peak uint64
			var elapsed time.Duration
			renders := 0
			for b.Loop() {
				stop := sampleHeap(&peak)
				began := time.Now()
				if _, err := Write(context.Background(), dir, res, "", Options{}); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(began)
				stop()
				renders++
			}
			per := elapsed / time.Duration(renders)
			b.ReportMetric(float64(per.Milliseconds()), "ms/render")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(st.Size())/(1<<20), "history-MiB")
			b.ReportMetric(float64(n)/per.Seconds(), "events/s")
		})
	}
}

// sampleHeap records the largest live heap (bytes of heap objects) into *peak until stop is
// called.
func sampleHeap(peak *uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > *peak {
			*peak = v
		}
	}
	wg.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				read()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		read()
	}
}
