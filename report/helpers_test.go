package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/history/histgen"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// extra is an event the test inserts into a generated history, at a share of its length.
type extra struct {
	at    float64 // share of the history's length
	typ   history.Type
	f     string
	value string
}

// testExtras are nemesis faults, heals and ISR samples on top of histgen's kills and starts:
// an isolation healed by "heal", a latency toxic healed by "heal", a disk loss that ends by
// itself, a pause that only heal-all ends, a bridge whose injection failed (so never
// happened), and ISR samples of verity-0..2, one of them repeated while below min ISR.
func testExtras() []extra {
	isr := func(at float64, p, leader int, isr string) extra {
		return extra{at, history.OK, "isr", `{"topic":"verity","partition":` + itoa(p) + `,"leader":` + itoa(leader) + `,"isr":` + isr + `,"min_isr":2}`}
	}
	iso := `{"nodes":[2],"links":[["1","2"],["2","1"],["3","2"],["2","3"]],"cut":"blackhole","role":"leader of verity-1"}`
	isoHeal := `{"nodes":[2],"links":[["1","2"],["2","1"],["3","2"],["2","3"]],"cut":"blackhole","fault":"isolate"}`
	lat := `{"nodes":[1,3],"links":[["client","1"]],"toxic":{"type":"latency","latency":100}}`
	latHeal := `{"nodes":[1,3],"links":[["client","1"]],"toxic":{"type":"latency","latency":100},"fault":"latency"}`
	return []extra{
		isr(0.01, 0, 1, "[1,2,3]"), isr(0.01, 1, 2, "[1,2,3]"), isr(0.01, 2, 3, "[1,2,3]"),
		{0.20, history.Invoke, "isolate", iso}, {0.2005, history.OK, "isolate", iso},
		isr(0.22, 1, 1, "[1,3]"),
		isr(0.30, 0, 1, "[1]"), isr(0.31, 0, 1, "[1]"), isr(0.41, 0, 1, "[1]"),
		{0.40, history.Invoke, "heal", isoHeal}, {0.4005, history.OK, "heal", isoHeal},
		isr(0.42, 0, 1, "[1,2,3]"), isr(0.42, 1, 1, "[1,2,3]"),
		{0.50, history.Invoke, "latency", lat}, {0.501, history.OK, "latency", lat},
		{0.60, history.Invoke, "heal", latHeal}, {0.601, history.OK, "heal", latHeal},
		{0.70, history.Invoke, "disk-loss", `{"nodes":[3]}`}, {0.72, history.OK, "disk-loss", `{"nodes":[3]}`},
		{0.80, history.Invoke, "pause", `{"nodes":[1]}`}, {0.8001, history.OK, "pause", `{"nodes":[1]}`},
		{0.85, history.Invoke, "bridge", `{"nodes":[1,2,3]}`}, {0.8501, history.Fail, "bridge", `{"nodes":[1,2,3]}`},
		{0.95, history.Invoke, "heal-all", `{"nodes":[1]}`}, {0.951, history.OK, "heal-all", `{"nodes":[1]}`},
		{0.96, history.Invoke, "healthy", `{"note":"all brokers up"}`}, {0.97, history.OK, "healthy", `{"note":"all brokers up"}`},
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// writeTestHistory writes a histgen history of about nOps events with testExtras inserted to
// path, renumbering i (and "of") around the inserted events, and with time stretched 150 times
// (histgen packs 30k events into a second; a run takes a minute or two, and the ISR below min
// must outlast an acknowledgement by verify.ISRCommitLag to make it an unexpected-ack). It
// returns the number of acknowledged writes, for the throughput check.
func writeTestHistory(t testing.TB, path string, nOps int, seed int64) (acked int64) {
	t.Helper()
	var gen bytes.Buffer
	if err := histgen.Generate(&gen, nOps, seed); err != nil {
		t.Fatal(err)
	}
	const stretch = 150
	// The last event's t, to place the extras.
	end := lastTime(t, gen.Bytes()) * stretch
	r, err := history.NewReader(bytes.NewReader(gen.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := bufio.NewWriter(f)
	h, err := json.Marshal(r.Header())
	if err != nil {
		t.Fatal(err)
	}
	out.Write(append(h, '\n'))

	extras := testExtras()
	next := int64(0)
	renum := map[int64]int64{}
	var line []byte
	emit := func(op history.Op) {
		op.Index = next
		next++
		if line, err = history.AppendOp(line[:0], op); err != nil {
			t.Fatal(err)
		}
		out.Write(append(line, '\n'))
	}
	var op history.Op
	for {
		if err := r.Next(&op); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		op.Time *= stretch
		for len(extras) > 0 && int64(extras[0].at*float64(end)) <= op.Time {
			e := extras[0]
			extras = extras[1:]
			emit(history.Op{Time: int64(e.at * float64(end)), Process: history.NemesisP(), Type: e.typ, F: e.f,
				Value: history.Payload{Raw: json.RawMessage(e.value)}})
		}
		old := op.Index
		if op.Of != nil {
			of := renum[*op.Of]
			op.Of = &of
		}
		if op.Type == history.Invoke {
			renum[old] = next
		}
		if op.Type == history.OK && isWrite(op.F) {
			acked++
		}
		emit(op)
	}
	if err := out.Flush(); err != nil {
		t.Fatal(err)
	}
	return acked
}

func lastTime(t testing.TB, b []byte) int64 {
	r, err := history.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var op history.Op
	var last int64
	for r.Next(&op) == nil {
		last = op.Time
	}
	return last
}

// testSeed is the seed of the sample results: a number no op index of the examples uses, so
// that finding it on the page proves the seed is shown.
const testSeed = 918273

func part(p int32) *int32 { return &p }
func proc(p int) *int     { return &p }

// sampleResults are results.json of a failed run: a forbidden lost-write, a permitted
// duplicate, a reorder no guarantee covers, an unchecked eos-missing and a poll-skip of 0.
func sampleResults(historyPath string, config history.Config) *results.Results {
	return &results.Results{
		Version: results.Version, Verdict: results.Fail, Scenario: "acks1-leader-loss", Seed: testSeed,
		Config:     config,
		Deviations: []string{"replica.lag.time.max.ms=10000", "group.initial.rebalance.delay.ms=0"},
		Anomalies: map[guarantee.Anomaly]results.Anomaly{
			"lost-write": {Count: 2, Judgement: guarantee.Forbidden, Forbidden: 2,
				Why: "acks=all, min.insync.replicas=2, unclean=false: acknowledged writes must survive one broker loss",
				Examples: []results.Example{
					{Value: "3-17", Ops: []int64{120, 4410}, Topic: "verity", Partition: part(0), Offsets: []int64{57}, Process: proc(3)},
					{Value: "1-99", Ops: []int64{777, 9001}, Note: "acked, absent from the final read"},
				}},
			"duplicate": {Count: 3, Judgement: guarantee.Permitted,
				Why:      "enable.idempotence=false, retries=2147483647: when an acknowledgement is lost the producer retries",
				Examples: []results.Example{{Value: "2-5", Ops: []int64{31337, 31338}, Offsets: []int64{10, 11}}}},
			"reorder": {Count: 1, Judgement: guarantee.Unknown, Why: "producer settings no documented guarantee covers",
				Examples: []results.Example{{Ops: []int64{5150, 5151}}}},
			"eos-missing": {Unchecked: "no read-process-write ops in the history"},
			"poll-skip":   {Count: 0, Judgement: guarantee.Forbidden},
		},
		Stats: results.Stats{
			Ops:              map[string]results.Outcomes{"send": {OK: 1000, Fail: 12, Info: 3}, "txn": {OK: 40, Fail: 8}, "poll": {OK: 500}},
			UnknownSends:     3,
			UnknownLaterSeen: 1,
			UnavailableMs:    1234,
			Unavailability:   []results.Window{{Topic: "verity", Partition: 0, StartMs: 1000, EndMs: 2234, Failed: 12}},
			LatencyMs:        results.Percentiles{P50: 2.5, P99: 41, Max: 120},
		},
		Timings: results.Timings{ClusterReadyS: 20, RunS: 60, CheckS: 1.5},
		Assumed: []string{"retries=2147483647"},
		Faults:  []string{"kill", "isolate"},
		History: &results.HistoryInfo{Path: historyPath, Ops: 0},
	}
}

// hasAll returns the elements of want missing from have.
func hasAll[T comparable](have []T, want ...T) []T {
	var missing []T
	for _, w := range want {
		if !slices.Contains(have, w) {
			missing = append(missing, w)
		}
	}
	return missing
}
