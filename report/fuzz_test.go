package report

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/verity-kafka/verity/history"
)

// FuzzTimeline: any history the reader accepts, however odd its nemesis and ISR events, gives
// a timeline and a page without panicking, within the memory bounds.
func FuzzTimeline(f *testing.F) {
	head := `{"verity_history":1,"started":"2026-01-01T00:00:00Z","seed":1}` + "\n"
	f.Add([]byte(head + `{"i":0,"t":5,"p":"nemesis","type":"invoke","f":"kill","value":{"nodes":[1]}}
{"i":1,"t":9,"p":"nemesis","type":"ok","f":"kill","value":{"nodes":[1]}}
{"i":2,"t":20,"p":"nemesis","type":"invoke","f":"start","value":{"nodes":[1],"fault":"kill"}}
{"i":3,"t":30,"p":"nemesis","type":"ok","f":"start","value":{"nodes":[1],"fault":"kill"}}
`))
	f.Add([]byte(head + `{"i":0,"t":1,"p":3,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"3-1"}}
{"i":1,"t":2000000,"p":3,"type":"ok","f":"send","value":{"topic":"t","partition":0,"offset":0,"value":"3-1"}}
{"i":2,"t":3,"p":"nemesis","type":"ok","f":"isr","value":{"topic":"t","partition":0,"leader":1,"isr":[1,2],"min_isr":2}}
{"i":3,"t":4000000000,"p":"nemesis","type":"invoke","f":"heal-all","value":null}
{"i":4,"t":9223372036854775807,"p":"nemesis","type":"fail","f":"heal-all"}
`))
	f.Add([]byte(head + `{"i":0,"t":-5,"p":"nemesis","type":"invoke","f":"heal","value":{"fault":"isolate"}}
{"i":1,"t":-1,"p":7,"type":"ok","f":"txn","of":0,"value":{"txn_id":"x","records":[],"intent":"commit"}}
`))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := history.NewReader(bytes.NewReader(in))
		if err != nil {
			return
		}
		tl, _ := ScanTimeline(context.Background(), r, 0)
		if tl == nil {
			t.Fatal("no timeline")
		}
		if len(tl.Buckets) > MaxBuckets || len(tl.Faults) > MaxFaults {
			t.Fatalf("bounds exceeded: %d buckets, %d faults", len(tl.Buckets), len(tl.Faults))
		}
		for _, p := range tl.Partitions {
			if len(p.States) > MaxISRStates {
				t.Fatalf("%d states", len(p.States))
			}
		}
		if err := RenderHTML(io.Discard, sampleResults("", history.Config{}), tl, Options{}, nil); err != nil {
			t.Fatalf("render: %v", err)
		}
	})
}
