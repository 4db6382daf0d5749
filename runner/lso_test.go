package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/verity-kafka/verity/harness"
)

// scriptedOffsets answers each partition's samples from a script, then ends the watch.
type scriptedOffsets struct {
	mu     sync.Mutex
	script map[int32][]harness.Offsets
	calls  map[int32]int
	done   context.CancelFunc
}

func (s *scriptedOffsets) Offsets(_ context.Context, _ string, p int32) (harness.Offsets, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.calls[p]
	s.calls[p]++
	seq := s.script[p]
	if i >= len(seq)-1 {
		s.done()
		return seq[len(seq)-1], nil
	}
	return seq[i], nil
}

func TestWatchLSO(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := func(hw, lso int64) harness.Offsets { return harness.Offsets{HighWatermark: hw, LastStable: lso} }
	src := &scriptedOffsets{calls: map[int32]int{}, done: cancel, script: map[int32][]harness.Offsets{
		// Partition 0: the LSO stays at 10 while the HW goes from 12 to 40 (a held transaction).
		0: {o(10, 10), o(12, 10), o(20, 10), o(30, 10), o(40, 10), o(41, 41), o(41, 41)},
		// Partition 1: the LSO follows the HW: no stall.
		1: {o(1, 1), o(5, 5), o(9, 9), o(12, 12), o(15, 15), o(16, 16), o(16, 16)},
	}}
	stalls := watchLSO(ctx, src, map[string]int32{"t": 2}, time.Millisecond, 0)
	if len(stalls) != 1 {
		t.Fatalf("stalls %+v: want one, on partition 0", stalls)
	}
	st := stalls[0]
	if st.partition != 0 || st.lso != 10 || st.hwGain != 30 {
		t.Errorf("stall %+v: want the LSO held at 10 while the HW gained 30", st)
	}
}
