package sarama

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// endedSession is a group session whose context is done, as sarama leaves it when a heartbeat
// finds the member dropped (UNKNOWN_MEMBER_ID).
type endedSession struct {
	sarama.ConsumerGroupSession
	ctx context.Context
}

func (s endedSession) Context() context.Context { return s.ctx }

// After a transaction that did not commit, a member replays what it had handed out, but not
// from a session sarama ended because the coordinator dropped the member: it reads the
// session's end instead, so that it joins again rather than commit, forever, under a generation
// the coordinator fences.
func TestNoReplayFromAnEndedSession(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sess := endedSession{ctx: ctx}
	off := int64(7)
	rec := kclient.Event{Kind: kclient.EventRecord, Record: history.Record{Topic: "i", Partition: 0, Offset: &off}}
	events := make(chan groupEvent)
	m := &member{events: events, running: true, errc: make(chan error, 1), cancel: func() {}, sess: sess,
		handed: []kclient.Event{rec}}
	require.NoError(t, m.Rewind(history.Fail))
	got, err := m.Poll(context.Background(), 10, time.Time{})
	require.NoError(t, err)
	require.Equal(t, []kclient.Event{rec}, got, "a live session replays what it handed out")

	// A session sarama ended for a rebalance still replays: its generation commits until the
	// rebalance completes.
	rctx, rcancel := context.WithCancelCause(context.Background())
	rcancel(sarama.ErrRebalanceInProgress)
	m.sess = endedSession{ctx: rctx}
	require.NoError(t, m.Rewind(history.Fail))
	got, err = m.Poll(context.Background(), 10, time.Time{})
	require.NoError(t, err)
	require.Equal(t, []kclient.Event{rec}, got, "a session ended for a rebalance replays")

	m.sess = sess
	require.NoError(t, m.Rewind(history.Fail))
	cancel(sarama.ErrUnknownMemberId)
	go func() { events <- groupEvent{kind: evCleanup, sess: sess} }()
	got, err = m.Poll(context.Background(), 10, time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, []kclient.Event{{Kind: kclient.EventRevoked}}, got, "a dropped member's session ends, no replay")
}
