package workloads

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/IBM/sarama/mocks"
	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/history"
	ksarama "github.com/verity-kafka/verity/workloads/kclient/sarama"
)

// mockRun builds a producer workload around sarama's mock producer, recording into buf.
func mockRun(t *testing.T, cfg ProducerConfig, buf *bytes.Buffer) (*producerRun, *mocks.AsyncProducer, *history.Writer) {
	t.Helper()
	mcfg := mocks.NewTestConfig()
	mcfg.Producer.Return.Successes = true
	mp := mocks.NewAsyncProducer(t, mcfg)
	run, w := saramaRun(t, cfg, buf, mp)
	return run, mp, w
}

// saramaRun builds a producer workload around prod, through the sarama adapter.
func saramaRun(t *testing.T, cfg ProducerConfig, buf *bytes.Buffer, prod sarama.AsyncProducer) (*producerRun, *history.Writer) {
	t.Helper()
	cfg, _, err := cfg.Resolved(Sarama())
	require.NoError(t, err)
	w, err := history.NewWriter(buf, history.Header{Seed: 1})
	require.NoError(t, err)
	env, err := Env{Brokers: []string{"mock"}, Recorder: w, Seed: 1}.withDefaults()
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	run := &producerRun{env: env, cfg: cfg, p: history.Client(4), values: NewValues(4),
		cl: ksarama.WrapProducer(prod, nil, new(atomic.Int64), cfg.spec("t", log)), log: log,
		choose: newChooser(NewRand(1, 4), cfg, map[string]int32{"t": 3})}
	run.stats.Process = 4
	return run, w
}

func readOps(t *testing.T, buf *bytes.Buffer) []history.Op {
	t.Helper()
	r, err := history.NewReader(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	var ops []history.Op
	var op history.Op
	for {
		err := r.Next(&op)
		if errors.Is(err, io.EOF) {
			return ops
		}
		require.NoError(t, err)
		ops = append(ops, op.Clone())
	}
}

// One at a time, with application resends: outcomes classified by the table, a resend of the
// same value after fail and after info, each completion the process's next event.
func TestProducerRecordsOutcomesAndResends(t *testing.T) {
	var buf bytes.Buffer
	run, mp, w := mockRun(t, ProducerConfig{Topics: []string{"t"}, AppResend: 1, MaxSends: 5}, &buf)
	mp.ExpectInputAndSucceed()                                    // 4-1
	mp.ExpectInputAndFail(sarama.ErrNotEnoughReplicas)            // 4-2: refused, one attempt
	mp.ExpectInputAndSucceed()                                    // 4-2 again
	mp.ExpectInputAndSucceed()                                    // 4-3
	mp.ExpectInputAndFail(sarama.ErrNotEnoughReplicasAfterAppend) // 4-4: may be written
	mp.ExpectInputAndSucceed()                                    // 4-4 again
	mp.ExpectInputAndSucceed()                                    // 4-5
	st, err := run.runAll(context.Background())
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Equal(t, ProducerStats{Process: 4, OK: 5, Fail: 1, Info: 1, Resends: 2}, ProducerStats{Process: st.Process, OK: st.OK, Fail: st.Fail, Info: st.Info, Resends: st.Resends})

	ops := readOps(t, &buf)
	require.Len(t, ops, 14)
	want := []struct {
		typ   history.Type
		value string
	}{
		{history.Invoke, "4-1"}, {history.OK, "4-1"},
		{history.Invoke, "4-2"}, {history.Fail, "4-2"},
		{history.Invoke, "4-2"}, {history.OK, "4-2"},
		{history.Invoke, "4-3"}, {history.OK, "4-3"},
		{history.Invoke, "4-4"}, {history.Info, "4-4"},
		{history.Invoke, "4-4"}, {history.OK, "4-4"},
		{history.Invoke, "4-5"}, {history.OK, "4-5"},
	}
	for i, o := range ops {
		require.Equal(t, history.FSend, o.F)
		require.Equal(t, want[i].typ, o.Type, "op %d", i)
		require.Equal(t, want[i].value, o.Value.Send.Value, "op %d", i)
		require.Nil(t, o.Of, "one at a time: completions follow their invoke")
		switch o.Type {
		case history.Invoke:
			require.Nil(t, o.Value.Send.Offset, "no offset before the broker assigns one")
		case history.OK:
			require.NotNil(t, o.Value.Send.Offset)
		case history.Fail:
			require.Contains(t, o.Error, "NOT_ENOUGH_REPLICAS")
		}
	}
}

// Async: invokes in hand-off order, completions with "of", every invoke completed once.
func TestAsyncProducerCompletionsCarryOf(t *testing.T) {
	var buf bytes.Buffer
	run, mp, w := mockRun(t, ProducerConfig{Topics: []string{"t"}, Async: true, Window: 7, MaxSends: 50}, &buf)
	for i := range 50 {
		if i%10 == 9 {
			mp.ExpectInputAndFail(sarama.ErrRequestTimedOut)
		} else {
			mp.ExpectInputAndSucceed()
		}
	}
	st, err := run.runAll(context.Background())
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Equal(t, int64(45), st.OK)
	require.Equal(t, int64(5), st.Info)

	ops := readOps(t, &buf)
	invokes := map[int64]history.Op{}
	completed := map[int64]bool{}
	n := 0
	for _, o := range ops {
		if o.Type == history.Invoke {
			n++
			require.Equal(t, ValueOf(4, int64(n)), o.Value.Send.Value, "invokes in the order records were handed over")
			invokes[o.Index] = o
			continue
		}
		require.NotNil(t, o.Of, "an async completion carries of")
		inv, ok := invokes[*o.Of]
		require.True(t, ok, "of names an invoke")
		require.False(t, completed[*o.Of], "one completion per invoke")
		completed[*o.Of] = true
		require.Equal(t, inv.Value.Send.Value, o.Value.Send.Value)
	}
	require.Len(t, completed, 50)
}

// slowProducer answers each record only once the next one has been handed over (the last when
// it closes): a broker too slow for the delivery timeout.
type slowProducer struct {
	sarama.AsyncProducer
	in   chan *sarama.ProducerMessage
	succ chan *sarama.ProducerMessage
	errs chan *sarama.ProducerError
	stop chan struct{}
}

func newSlowProducer() *slowProducer {
	p := &slowProducer{in: make(chan *sarama.ProducerMessage), succ: make(chan *sarama.ProducerMessage),
		errs: make(chan *sarama.ProducerError), stop: make(chan struct{})}
	go func() {
		defer close(p.succ)
		defer close(p.errs)
		var held *sarama.ProducerMessage
		for {
			select {
			case m := <-p.in:
				if held != nil {
					held.Offset = 99
					p.succ <- held // late: its send already completed as info
				}
				held = m
			case <-p.stop:
				return
			}
		}
	}()
	return p
}

func (p *slowProducer) Input() chan<- *sarama.ProducerMessage     { return p.in }
func (p *slowProducer) Successes() <-chan *sarama.ProducerMessage { return p.succ }
func (p *slowProducer) Errors() <-chan *sarama.ProducerError      { return p.errs }
func (p *slowProducer) AsyncClose()                               { close(p.stop) }

func TestDeliveryTimeoutCompletesInfoAndIgnoresLateAnswers(t *testing.T) {
	var buf bytes.Buffer
	run, w := saramaRun(t, ProducerConfig{Topics: []string{"t"}, MaxSends: 3, DeliveryTimeout: 50 * time.Millisecond,
		Drain: time.Second}, &buf, newSlowProducer())
	st, err := run.runAll(context.Background())
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Equal(t, int64(3), st.Info)
	require.Equal(t, int64(3), st.TimedOut)
	require.Zero(t, st.OK, "a late answer does not complete a send twice")
	ops := readOps(t, &buf)
	require.Len(t, ops, 6)
	for i, o := range ops {
		if i%2 == 1 {
			require.Equal(t, history.Info, o.Type)
			require.Contains(t, o.Error, "delivery timeout")
			require.Equal(t, ops[i-1].Value.Send.Value, o.Value.Send.Value)
		}
	}
}
