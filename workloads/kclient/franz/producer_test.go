package franz

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// A franz-go client that is full makes Produce wait for answers that, with no broker reachable,
// never come. The run's end interrupts the hand-over; franz-go then fails the record before
// buffering it, and that answer comes like any other: fail, the record was never sent.
func TestHandOverIsInterruptedWhenTheClientIsFull(t *testing.T) {
	p := newProducer(true, 2, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.MaxBufferedRecords(2), kgo.UnknownTopicRetries(-1),
		kgo.RecordDeliveryTimeout(time.Hour), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithHooks(&p.hooks))
	require.NoError(t, err)
	p.cl = cl
	defer p.Close()
	send := func(v string) kclient.Send { return kclient.Send{Record: history.Record{Topic: "t", Value: v}, Tag: v} }
	require.True(t, p.Hand(t.Context(), send("1-1")))
	require.True(t, p.Hand(t.Context(), send("1-2")))
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	require.True(t, p.Hand(ctx, send("1-3")), "franz-go took the record, and answers it")
	require.GreaterOrEqual(t, time.Since(began), 250*time.Millisecond, "the hand-over waited while the client was full")
	as := takeAnswers(t, p, 1)
	require.Len(t, as, 1, "only the interrupted record is answered; the others wait for a broker")
	require.Equal(t, "1-3", as[0].Tag)
	require.ErrorIs(t, as[0].Err, context.Canceled)
	require.Equal(t, history.Fail, as[0].Outcome.Type, "%s: %s", as[0].Outcome.Rule, as[0].Outcome.Why)

	// Closing the client fails the buffered records; their answers say which was its
	// partition's first unanswered record when handed over.
	p.cl.Close()
	p.taken = p.q.Take(p.taken[:0])
	for len(p.taken) < 2 {
		select {
		case <-p.q.Ready():
			p.taken = p.q.Take(p.taken)
		case <-time.After(10 * time.Second):
			t.Fatalf("the closed client answered %d of 2 buffered records", len(p.taken))
		}
	}
	head := map[any]bool{}
	for _, a := range p.taken {
		head[a.Tag] = a.mark.head
	}
	require.Equal(t, map[any]bool{"1-1": true, "1-2": false}, head, "the first record of the partition was still unanswered")
}

// takeAnswers waits for at least n answers, for up to 10 s.
func takeAnswers(t *testing.T, p *producer, n int) []kclient.Answer {
	t.Helper()
	var as []kclient.Answer
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for len(as) < n {
		select {
		case <-p.Ready():
			as = p.Take(as)
		case <-deadline.C:
			t.Fatalf("%d of %d answers after 10 s", len(as), n)
		}
	}
	return as
}
