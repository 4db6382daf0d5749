package franz

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// TestGroupCallbacks: the consumer turns the group's callbacks into the member's
// whole assignment after each change (the cooperative balancer reports what was added or
// revoked), noting nothing for the empty revoke franz-go makes at the end of every session.
func TestGroupCallbacks(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	require.NoError(t, err)
	defer cl.Close()
	c := &consumer{owned: map[string][]int32{}}
	parts := func() []map[string][]int32 {
		var out []map[string][]int32
		for _, ev := range c.queued {
			require.Equal(t, kclient.EventAssigned, ev.Kind)
			out = append(out, ev.Claims.Partitions)
		}
		c.queued = nil
		return out
	}
	ctx := t.Context()
	c.assigned(ctx, cl, map[string][]int32{"a": {1, 0}, "b": {3}})
	c.assigned(ctx, cl, map[string][]int32{"a": {2}})
	require.Equal(t, []map[string][]int32{{"a": {0, 1}, "b": {3}}, {"a": {0, 1, 2}, "b": {3}}}, parts())
	c.revoked(ctx, cl, map[string][]int32{})
	c.revoked(ctx, cl, map[string][]int32{"a": {}})
	require.Empty(t, parts(), "an empty revoke changes nothing")
	c.revoked(ctx, cl, map[string][]int32{"a": {1}, "b": {3}})
	require.Equal(t, []map[string][]int32{{"a": {0, 2}}}, parts())
	c.assigned(ctx, cl, map[string][]int32{})
	require.Equal(t, []map[string][]int32{{"a": {0, 2}}}, parts(), "a new generation without new partitions is noted")
	c.lost(ctx, cl, map[string][]int32{"a": {0, 2}})
	require.Equal(t, []map[string][]int32{{}}, parts())
	c.lost(ctx, cl, map[string][]int32{})
	require.Empty(t, parts(), "losing nothing when nothing is owned changes nothing")
}

// TestFetchErrors: ErrDataLoss in a fetch becomes a data-loss event with the client's
// offsets; a poll's own timeout is no event.
func TestFetchErrors(t *testing.T) {
	c := &consumer{log: slog.New(slog.DiscardHandler)}
	out := c.fetchError(nil, "t", 2, fmt.Errorf("wrapped: %w", &kgo.ErrDataLoss{Topic: "t", Partition: 2,
		ConsumedTo: 120, ConsumedToEpoch: 5, ResetTo: 100, ResetToEpoch: 5}))
	out = c.fetchError(out, "", -1, context.DeadlineExceeded)
	require.Equal(t, []kclient.Event{{Kind: kclient.EventDataLoss, Loss: kclient.Loss{Topic: "t", Partition: 2, Offset: 120, Epoch: 5,
		ResetTo: 100, ResetEpoch: 5}}}, out)
}
