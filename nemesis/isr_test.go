package nemesis

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/history"
)

// WatchISR records the first sample, every change, and every sample while the ISR is below min
// ISR; nothing while it stays full and the leader stays.
func TestWatchISR(t *testing.T) {
	_, fl, n, h := setup(t, 3, false)
	script := [][]int{{1, 2, 3}, {1, 2, 3}, {1, 2}, {1, 2}, {1}, {1}, {1}, {1, 2, 3}, {1, 2, 3}}
	var mu sync.Mutex
	i := 0
	done := make(chan struct{})
	fl.samples = func() []ISRSample {
		mu.Lock()
		defer mu.Unlock()
		isr := script[min(i, len(script)-1)]
		i++
		if i == len(script) {
			close(done)
		}
		return []ISRSample{{Topic: "t", Partition: 0, Leader: 1, Epoch: 3, ISR: isr, Replicas: []int{1, 2, 3}, From: []int{1, 2, 3}}}
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- n.WatchISR(ctx, []string{"t"}, time.Millisecond) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not sample")
	}
	cancel()
	require.NoError(t, <-errc)

	var seen [][]int
	ops := h.ops(t)
	for k, op := range ops {
		require.Equal(t, FISR, op.F)
		if op.Type == history.Invoke {
			require.Equal(t, history.OK, ops[k+1].Type)
			require.Empty(t, op.Value.Raw, "the observation is on the ok alone")
			continue
		}
		var ev ISREvent
		require.NoError(t, json.Unmarshal(op.Value.Raw, &ev))
		require.Equal(t, "t", ev.Topic)
		require.Equal(t, 2, *ev.MinISR)
		require.Equal(t, []int{1, 2, 3}, ev.Replicas)
		seen = append(seen, ev.ISR)
	}
	// first; change to [1 2]; change to [1] and every sample below (three); back to full.
	require.Equal(t, [][]int{{1, 2, 3}, {1, 2}, {1}, {1}, {1}, {1, 2, 3}}, seen)
}
