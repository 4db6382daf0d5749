package workloads

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-kafka/verity/history"
)

// Until sees each completion, and the workloads' context ends the first time it says so,
// not before and not again.
func TestUntilEndsTheWorkloads(t *testing.T) {
	w, err := history.NewWriter(&bytes.Buffer{}, history.Header{Seed: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stops, crashes := 0, 0
	r := &untilRecorder{Recorder: w, stop: func() { stops++; cancel() }, until: func(op history.Op) bool {
		if op.F == history.FCrash {
			crashes++
		}
		return crashes >= 2
	}}
	note := func(f string) {
		inv, err := r.Invoke(history.Client(1), f, history.Payload{})
		require.NoError(t, err)
		_, err = r.Complete(inv, history.OK, history.Payload{}, "")
		require.NoError(t, err)
	}
	note(history.FCrash)
	note(history.FSend)
	require.NoError(t, ctx.Err(), "one crash: the workloads go on")
	note(history.FCrash)
	require.Error(t, ctx.Err(), "the second crash ends them")
	note(history.FCrash)
	require.Equal(t, 1, stops)
}
