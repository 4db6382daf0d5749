package sarama

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// liveSession is a group session sarama has not ended.
type liveSession struct{ sarama.ConsumerGroupSession }

func (liveSession) Context() context.Context { return context.Background() }

// After a transaction that did not commit, a member replays what it had handed out, from the
// same session; but after a commit the coordinator refused because it had dropped the member,
// it ends the session instead, so that it joins again rather than commit, forever, under a
// generation the coordinator fences.
func TestNoReplayOnceDropped(t *testing.T) {
	off := int64(7)
	rec := kclient.Event{Kind: kclient.EventRecord, Record: history.Record{Topic: "i", Partition: 0, Offset: &off}}
	m := &member{sess: liveSession{}, handed: []kclient.Event{rec}}
	require.NoError(t, m.Rewind(history.Fail))
	got, err := m.Poll(context.Background(), 10, time.Time{})
	require.NoError(t, err)
	require.Equal(t, []kclient.Event{rec}, got, "an abort replays what the session handed out")

	// The session's Consume returns once cancelled.
	m.running, m.cancel, m.errc = true, func() {}, make(chan error, 1)
	m.errc <- context.Canceled
	m.dropped = true
	require.NoError(t, m.Rewind(history.Fail))
	require.Nil(t, m.sess, "the dropped member's session ended")
	require.Empty(t, m.replay, "nothing replayed from it")
	require.False(t, m.dropped, "the next commit decides anew")
}

// An abort while the member has no session (a join under way) leaves the join alone: ending it
// would make the member join again, and the whole group rebalance, at each abort.
func TestAbortLeavesAJoinAlone(t *testing.T) {
	cancelled := false
	// The join's Consume returns once cancelled.
	m := &member{running: true, cancel: func() { cancelled = true }, errc: make(chan error, 1)}
	m.errc <- context.Canceled
	require.NoError(t, m.Rewind(history.Fail))
	require.False(t, cancelled, "the join under way was cancelled")
	require.True(t, m.running, "the join under way ended")
	require.Empty(t, m.replay, "nothing to replay without a session")

	// An unknown outcome still ends it: the committed offsets are not known here.
	require.NoError(t, m.Rewind(history.Info))
	require.True(t, cancelled, "an unknown outcome ends the join under way")
	require.False(t, m.running)
}

// A commit's error names the drop however sarama wrapped it; other errors do not.
func TestDroppedBy(t *testing.T) {
	for _, err := range []error{sarama.ErrUnknownMemberId, sarama.ErrIllegalGeneration,
		fmt.Errorf("committing: %w", sarama.ErrUnknownMemberId), sarama.Wrap(sarama.ErrTxnUnableToParseResponse, sarama.ErrIllegalGeneration)} {
		require.True(t, droppedBy(err), "%v", err)
	}
	for _, err := range []error{nil, sarama.ErrRebalanceInProgress, sarama.ErrNotCoordinatorForConsumer, fmt.Errorf("EOF")} {
		require.False(t, droppedBy(err), "%v", err)
	}
}
