package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/verity-kafka/verity/history"
)

// FuzzCheck feeds arbitrary bytes through the history reader and every checker: whatever the
// input, nothing may panic, and results must encode.
func FuzzCheck(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	f.Add([]byte("{\"verity_history\":1}\n{\"i\":0,\"t\":0,\"p\":1,\"type\":\"ok\",\"f\":\"send\",\"value\":{\"topic\":\"t\",\"partition\":-4,\"offset\":9223372036854775807,\"value\":\"x\"}}\n"))
	f.Add([]byte("{\"verity_history\":1,\"config\":{\"topic\":\"oops\",\"producer\":{\"acks\":7}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd, err := history.NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		c := New(rd.Header().Config, Options{})
		var op history.Op
		for {
			err := rd.Next(&op)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				var le *history.LineError
				if !errors.As(err, &le) {
					t.Fatalf("a reading error that is not a LineError: %v", err)
				}
				break
			}
			c.Add(&op)
		}
		c.SetTorn(rd.Torn())
		if _, err := json.Marshal(c.Results()); err != nil {
			t.Fatalf("results do not encode: %v", err)
		}
	})
}

// fuzzSeeds are the family tests' histories as bytes, so the fuzzer starts from every shape
// the checkers know.
func fuzzSeeds() [][]byte {
	var out [][]byte
	builders := []func(h *hb){
		func(h *hb) {
			inv := h.sendInvoke(4, rec("t", 0, "4-1"))
			h.sendInvoke(4, rec("t", 0, "4-2"))
			h.sendDone(4, inv, rec("t", 0, "4-1"), OK, 1, true)
			h.poll(7, RC, at(rec("t", 0, "4-1"), 1), at(rec("t", 0, "4-2"), 0))
			h.txn(5, "tx", history.IntentAbort, Fail, rec("t", 1, "5-1"))
			h.rpw(8, "p", OK, recs(at(rec("t", 0, "4-1"), 1)), recs(at(rec("o", 0, "8-1"), 0)))
			h.isr("t", 0, 2, 1)
			h.nemesis("disk-loss", `{"nodes":[1]}`)
			h.op(7, "assign")
			h.finalBoth("t", 0, 0, 3, at(rec("t", 0, "4-1"), 1))
		},
	}
	for _, build := range builders {
		h := newHB()
		build(h)
		var buf bytes.Buffer
		buf.WriteString(`{"verity_history":1,"started":"2026-01-01T00:00:00Z","seed":1,"config":{"producer":{"acks":"all"}}}` + "\n")
		for _, op := range h.ops {
			line, err := history.AppendOp(nil, op)
			if err != nil {
				panic(err)
			}
			buf.Write(append(line, '\n'))
		}
		out = append(out, buf.Bytes())
	}
	return out
}

// TestRandomHistoriesDoNotPanic builds thousands of random, mostly ill-formed op sequences in
// Go — wild offsets and indices, completions without invokes, async completions naming any
// op, records in any partition — and checks them: no panic, results encode.
func TestRandomHistoriesDoNotPanic(t *testing.T) {
	rounds := 3000
	if testing.Short() {
		rounds = 500
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...int64) int64 { return xs[rng.IntN(len(xs))] }
	offset := func() *int64 {
		if rng.IntN(8) == 0 {
			return nil
		}
		o := pick(0, 1, 2, 3, 5, 8, -1, -7, 1<<20, 1<<40, math.MaxInt64, int64(rng.IntN(50)))
		return &o
	}
	record := func() history.Record {
		return history.Record{Topic: []string{"t", "u", ""}[rng.IntN(3)], Partition: int32(pick(0, 1, 2, -1, math.MaxInt32)),
			Offset: offset(), Value: []string{"1-1", "1-2", "2-1", "x", "", "01-1", "-", "9999999999-1"}[rng.IntN(8)]}
	}
	records := func() []history.Record {
		rs := make([]history.Record, rng.IntN(4))
		for i := range rs {
			rs[i] = record()
		}
		return rs
	}
	fs := []string{"send", "txn", "poll", "final-read", "rpw", "assign", "crash", "isr", "kill", "disk-loss"}
	types := []history.Type{history.Invoke, history.OK, history.Fail, history.Info, "weird"}
	for round := range rounds {
		cfg := strict()
		if round%3 == 1 {
			cfg = acks1()
		}
		c := New(cfg, Options{})
		n := rng.IntN(60)
		for i := range n {
			op := history.Op{Index: int64(i) * pick(1, 1, 1, -3, 1<<40), Time: int64(rng.IntN(1e9)),
				Process: history.Client(rng.IntN(4)), Type: types[rng.IntN(len(types))], F: fs[rng.IntN(len(fs))]}
			if rng.IntN(10) == 0 {
				op.Process = history.NemesisP()
			}
			if rng.IntN(5) == 0 {
				of := pick(0, int64(i-1), int64(i), -1, 1<<50)
				op.Of = &of
			}
			switch op.F {
			case "send":
				r := record()
				op.Value.Send = &r
			case "txn":
				op.Value.Txn = &history.Txn{TxnID: strconv.Itoa(rng.IntN(2)), Records: records(), Intent: []string{"commit", "abort", ""}[rng.IntN(3)]}
			case "poll":
				op.Value.Poll = &history.Poll{Isolation: []string{RC, RU, ""}[rng.IntN(3)], Records: records()}
			case "final-read":
				op.Value.FinalRead = &history.FinalRead{Topic: "t", Partition: int32(rng.IntN(2)), Isolation: []string{RC, RU, "x"}[rng.IntN(3)],
					From: pick(0, 5, -1, math.MaxInt64), End: pick(0, 3, 9, math.MinInt64, math.MaxInt64), Records: records(), Incomplete: rng.IntN(5) == 0}
			case "rpw":
				op.Value.RPW = &history.RPW{TxnID: "p", Input: records(), Output: records()}
			case "isr":
				op.Value.Raw = json.RawMessage([]string{`{"topic":"t","partition":0,"isr":[1],"min_isr":2}`, `{"isr":null}`, `7`, `{"min_isr":-5}`}[rng.IntN(4)])
			case "disk-loss", "kill":
				op.Value.Raw = json.RawMessage([]string{`{"nodes":[1,2]}`, `[]`, ``}[rng.IntN(3)])
			}
			c.Add(&op)
		}
		if _, err := json.Marshal(c.Results()); err != nil {
			t.Fatalf("round %d: results do not encode: %v", round, err)
		}
	}
}
