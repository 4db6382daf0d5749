package histmodel

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// opSource hands a rendered history's ops to verify.Check, as a history.Reader would.
type opSource struct {
	ops []history.Op
	i   int
}

func (s *opSource) Next(op *history.Op) error {
	if s.i == len(s.ops) {
		return io.EOF
	}
	*op = s.ops[s.i]
	s.i++
	return nil
}

// check judges h with the checker, as `verity check` would.
func check(t testing.TB, h *History) *results.Results {
	t.Helper()
	r, err := verify.Check(context.Background(), &opSource{ops: h.Ops}, h.Header.Config, verify.Options{MaxExamples: 5})
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return r
}

// randomParts picks the parts of seed's history: every part half the time, then what needs
// asks for.
func randomParts(seed uint64, needs Needs) Parts {
	rng := rand.New(rand.NewPCG(seed, 0x9a27))
	p := Parts{Transactions: rng.IntN(2) == 0, RPW: rng.IntN(2) == 0, Consumers: rng.IntN(2) == 0,
		ISR: rng.IntN(2) == 0, Nemesis: rng.IntN(2) == 0, Unknown: rng.IntN(2) == 0}
	modes := sink.Modes()
	if rng.IntN(2) == 0 {
		p.Sink = modes[rng.IntN(len(modes))].Mode
	}
	p = needs.Apply(p, rng)
	// Drawn last, so that the other parts of a seed are what they were before share groups.
	p.Share = p.Share || rng.IntN(2) == 0
	return p
}

// findings lists the families with findings in r, in report order.
func findings(r *results.Results) []guarantee.Anomaly {
	var out []guarantee.Anomaly
	for _, a := range guarantee.Anomalies() {
		if r.Anomalies[a].Count > 0 {
			out = append(out, a)
		}
	}
	return out
}

// TestMain collects garbage less often than by default: every check allocates the checker's
// first 4 MB chunk of record states, and at the default pace the collector runs every few
// checks and spends more time than the checks (measured: 2,000 clean histories take 40% less
// CPU at 400).
func TestMain(m *testing.M) {
	debug.SetGCPercent(400)
	os.Exit(m.Run())
}
