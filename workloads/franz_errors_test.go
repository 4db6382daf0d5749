package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

func TestFranzSendErrorTableIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range FranzSendErrorTable() {
		require.NotEmpty(t, r.Name)
		require.False(t, seen[r.Name], "row %s appears twice", r.Name)
		seen[r.Name] = true
		require.NotEmpty(t, r.Why, r.Name)
		require.True(t, (r.Err == nil) != (r.Match == nil), "%s: exactly one of Err and Match", r.Name)
		require.Contains(t, []history.Type{"", history.Fail, history.Info}, r.Once, r.Name)
		if r.OnceAcksAll != "" {
			require.NotEmpty(t, r.Once, "%s: OnceAcksAll refines Once", r.Name)
			require.Contains(t, []history.Type{history.Fail, history.Info}, r.OnceAcksAll, r.Name)
		}
		if r.Once != "" {
			// An answer is trusted only as franz-go passes it on, the bare *kerr.Error.
			_, isKerr := r.Err.(*kerr.Error)
			require.True(t, isKerr, "%s: a broker answer row names a *kerr.Error", r.Name)
		}
		n := 0
		for _, b := range []bool{r.Once != "", r.Deterministic, r.Idle} {
			if b {
				n++
			}
		}
		require.LessOrEqual(t, n, 1, "%s: at most one of Once, Deterministic and Idle", r.Name)
	}
}

// The franz-go table, row by row, in five situations of the record:
//
//	c1 once: its batch was its partition's first and the client wrote one produce request (acks=1)
//	c2 once, acks=all
//	c3 idle: first batch, no produce request written at all (acks=all)
//	c4 retried: first batch, two produce requests written
//	c5 behind: an earlier record of its partition was unanswered when it was handed over
func TestClassifyFranzSendEveryRow(t *testing.T) {
	ctxs := []FranzSendContext{
		{Buffered: true, Head: true, Writes: 1},
		{Buffered: true, Head: true, Writes: 1, AcksAll: true},
		{Buffered: true, Head: true, Writes: 0, AcksAll: true},
		{Buffered: true, Head: true, Writes: 2},
		{Buffered: true, Head: false, Writes: 0},
	}
	const F, I = history.Fail, history.Info
	want := map[string][5]history.Type{
		"NOT_ENOUGH_REPLICAS":               {F, F, F, I, I},
		"NOT_ENOUGH_REPLICAS_AFTER_APPEND":  {I, I, I, I, I},
		"REQUEST_TIMED_OUT":                 {I, I, I, I, I},
		"NOT_LEADER_OR_FOLLOWER":            {F, I, I, I, I},
		"FENCED_LEADER_EPOCH":               {F, F, F, I, I},
		"KAFKA_STORAGE_ERROR":               {I, I, I, I, I},
		"CORRUPT_MESSAGE":                   {F, F, F, I, I},
		"OUT_OF_ORDER_SEQUENCE_NUMBER":      {F, F, F, I, I},
		"UNKNOWN_PRODUCER_ID":               {F, F, F, I, I},
		"INVALID_PRODUCER_EPOCH":            {F, F, F, I, I},
		"MESSAGE_TOO_LARGE":                 {F, F, F, F, I},
		"RECORD_LIST_TOO_LARGE":             {F, F, F, F, I},
		"INVALID_RECORD":                    {F, F, F, F, I},
		"INVALID_TIMESTAMP":                 {F, F, F, F, I},
		"INVALID_REQUIRED_ACKS":             {F, F, F, F, I},
		"UNSUPPORTED_COMPRESSION_TYPE":      {F, F, F, F, I},
		"TOPIC_AUTHORIZATION_FAILED":        {F, F, F, F, I},
		"CLUSTER_AUTHORIZATION_FAILED":      {F, F, F, F, I},
		"INVALID_TOPIC_EXCEPTION":           {F, F, F, F, I},
		"UNSUPPORTED_VERSION":               {F, F, F, F, I},
		"LEADER_NOT_AVAILABLE":              {I, I, I, I, I},
		"UNKNOWN_TOPIC_OR_PARTITION":        {I, I, I, I, I},
		"UNKNOWN_TOPIC_ID":                  {I, I, I, I, I},
		"client: record timeout":            {I, I, F, I, I},
		"client: record retries":            {I, I, F, I, I},
		"client: aborting buffered records": {I, I, F, I, I},
		"client: context canceled":          {I, I, F, I, I},
		"client: context deadline exceeded": {I, I, F, I, I},
		"client: max buffered":              {I, I, F, I, I},
		"client: client closed":             {I, I, I, I, I},
		"network error or timeout":          {I, I, I, I, I},
	}
	samples := map[string]error{
		"network error or timeout": &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)},
	}
	rows := FranzSendErrorTable()
	require.Len(t, want, len(rows), "every row has its expected outcomes here, and nothing else")
	for _, r := range rows {
		exp, ok := want[r.Name]
		require.True(t, ok, "row %s has no expected outcomes", r.Name)
		err := r.Err
		if err == nil {
			err = samples[r.Name]
		}
		require.NotNil(t, err, "row %s needs a sample error", r.Name)
		for i, sc := range ctxs {
			o := ClassifyFranzSend(err, sc)
			assert.Equal(t, exp[i], o.Type, "%s in situation c%d %+v: rule %q, %s", r.Name, i+1, sc, o.Rule, o.Why)
			assert.Equal(t, r.Name, o.Rule, "%s in c%d", r.Name, i+1)
			assert.NotEmpty(t, o.Why)
		}
		// Whatever the error, a record franz-go never buffered was never sent.
		o := ClassifyFranzSend(err, FranzSendContext{Buffered: false, Head: false, Writes: 9})
		assert.Equal(t, history.Fail, o.Type, "%s, never buffered", r.Name)
	}
}

func TestClassifyFranzSendOtherCases(t *testing.T) {
	once := FranzSendContext{Buffered: true, Head: true, Writes: 1, AcksAll: true}
	cases := []struct {
		name string
		err  error
		sc   FranzSendContext
		want history.Type
	}{
		{"acknowledged", nil, FranzSendContext{}, history.OK},
		// franz-go wraps errors it met elsewhere (loading a producer id): not the batch's answer.
		{"wrapped answer", fmt.Errorf("unable to initialize a producer ID due to request failures: %w", kerr.NotEnoughReplicas), once, history.Info},
		// The broker's MESSAGE_TOO_LARGE comes with franz-go's sizes appended.
		{"message too large with sizes", fmt.Errorf("%w (uncompressed_bytes=2000000, compressed_bytes=1900000)", kerr.MessageTooLarge), once, history.Fail},
		// franz-go's own size check, before the record joins a batch.
		{"message too large before buffering", fmt.Errorf("%w (uncompressed_bytes=2000000)", kerr.MessageTooLarge), FranzSendContext{}, history.Fail},
		{"cancelled while Produce waited for room", context.Canceled, FranzSendContext{Head: true, Writes: 3}, history.Fail},
		{"eof", io.EOF, once, history.Info},
		{"first read eof", &kgo.ErrFirstReadEOF{}, once, history.Info},
		{"unlisted broker error", kerr.UnknownServerError, once, history.Info},
		{"unlisted client error", errors.New("unable to partition record due to no usable partitions"), once, history.Info},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := ClassifyFranzSend(c.err, c.sc)
			assert.Equal(t, c.want, o.Type, "rule %q: %s", o.Rule, o.Why)
			if c.err != nil {
				assert.NotEmpty(t, o.Why)
			}
		})
	}
}

func TestErrorTextNamesFranzErrors(t *testing.T) {
	got := ErrorText(kerr.NotEnoughReplicas)
	require.True(t, strings.HasPrefix(got, "kafka server: NOT_ENOUGH_REPLICAS: "), got)
	require.Contains(t, ErrorText(fmt.Errorf("%w (uncompressed_bytes=1, compressed_bytes=1)", kerr.MessageTooLarge)), "MESSAGE_TOO_LARGE")
	require.Equal(t, kgo.ErrRecordTimeout.Error(), ErrorText(kgo.ErrRecordTimeout))
}

// The franz-go producer's options, as the client reads them back: Kafka's settings, not
// franz-go's defaults (snappy, a 10ms linger, a key-hashing partitioner).
func TestFranzProducerOptions(t *testing.T) {
	franz, _ := kafkaconf.LookupClient(kafkaconf.FranzGo)
	opts := func(t *testing.T, c ProducerConfig) (*kgo.Client, []string) {
		t.Helper()
		c, _, err := c.Resolved(franz)
		require.NoError(t, err)
		popts, warns, err := c.franzProducerOpts()
		require.NoError(t, err)
		cl, err := kgo.NewClient(append(franzBase([]string{"127.0.0.1:1"}, "t"), popts...)...)
		require.NoError(t, err, "franz-go accepts the options")
		t.Cleanup(cl.Close)
		return cl, warns
	}
	cl, warns := opts(t, ProducerConfig{Topics: []string{"t"}})
	require.Empty(t, warns)
	require.Equal(t, []kgo.CompressionCodec{kgo.NoCompression()}, cl.OptValue(kgo.ProducerBatchCompression))
	require.Equal(t, time.Duration(0), cl.OptValue(kgo.ProducerLinger))
	require.Equal(t, kgo.AllISRAcks(), cl.OptValue(kgo.RequiredAcks))
	require.Equal(t, false, cl.OptValue(kgo.DisableIdempotentWrite))
	require.Equal(t, int64(kafkaconf.DefaultRetries), cl.OptValue(kgo.RecordRetries))
	require.Equal(t, 30*time.Second, cl.OptValue(kgo.RecordDeliveryTimeout))
	require.Equal(t, 10*time.Second, cl.OptValue(kgo.ProduceRequestTimeout))
	require.Equal(t, int64(franzMaxBuffered), cl.OptValue(kgo.MaxBufferedRecords))

	cl, warns = opts(t, ProducerConfig{Topics: []string{"t"}, Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksLeader), Retries: new(0)},
		Compression: "zstd", Linger: 5 * time.Millisecond, BatchBytes: 65536, BatchMessages: 10})
	require.Len(t, warns, 1, "franz-go has no batch message count, and says so")
	require.Contains(t, warns[0], "batch_messages=10")
	require.Equal(t, kgo.LeaderAck(), cl.OptValue(kgo.RequiredAcks))
	require.Equal(t, true, cl.OptValue(kgo.DisableIdempotentWrite))
	require.Equal(t, 5, cl.OptValue(kgo.MaxProduceRequestsInflightPerBroker))
	require.Equal(t, int64(0), cl.OptValue(kgo.RecordRetries))
	require.Equal(t, []kgo.CompressionCodec{kgo.ZstdCompression()}, cl.OptValue(kgo.ProducerBatchCompression))
	require.Equal(t, 5*time.Millisecond, cl.OptValue(kgo.ProducerLinger))
	require.Equal(t, int32(65536), cl.OptValue(kgo.ProducerBatchMaxBytes))

	cl, _ = opts(t, ProducerConfig{Topics: []string{"t"}, Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksNone)}})
	require.Equal(t, kgo.NoAck(), cl.OptValue(kgo.RequiredAcks))
}

// Idempotent franz-go keeps five requests in flight: the resolved configuration says so, and
// says it departs from what was asked.
func TestFranzIdempotenceKeepsFiveInFlight(t *testing.T) {
	franz, _ := kafkaconf.LookupClient(kafkaconf.FranzGo)
	c, warns, err := ProducerConfig{Topics: []string{"t"}, Delivery: kafkaconf.Delivery{MaxInFlight: new(1)}}.Resolved(franz)
	require.NoError(t, err)
	require.True(t, *c.Idempotence)
	require.Equal(t, 5, *c.MaxInFlight)
	require.Len(t, warns, 1)
	require.Contains(t, warns[0], "franz-go's idempotent producer always keeps 5")
	_, _, err = c.franzProducerOpts()
	require.NoError(t, err)
}

// The answer queue never blocks its pusher, and a take returns everything pushed, in order.
func TestAnswerQueue(t *testing.T) {
	q := newAnswerQueue()
	ops := make([]*sendOp, 1000)
	for i := range ops {
		ops[i] = &sendOp{}
		q.push(sendAnswer{op: ops[i], offset: int64(i)})
	}
	select {
	case <-q.signal:
	default:
		t.Fatal("pushes signal the queue")
	}
	got := q.take(nil)
	require.Len(t, got, 1000)
	for i, a := range got {
		require.Same(t, ops[i], a.op)
	}
	q.push(sendAnswer{offset: 7})
	again := q.take(got[:0])
	require.Len(t, again, 1)
	require.Equal(t, int64(7), again[0].offset)
	q.drop()
	q.push(sendAnswer{offset: 8})
	require.Empty(t, q.take(nil), "answers after drop are discarded")
}

// A franz-go client that is full makes Produce wait for answers that, with no broker reachable,
// never come. The run's end interrupts the hand-over; franz-go then fails the record before
// buffering it, and that answer comes like any other: fail, the record was never sent.
func TestFranzHandOverIsInterruptedWhenTheClientIsFull(t *testing.T) {
	f := newFranzProducer(true, 2, slog.New(slog.NewTextHandler(io.Discard, nil)))
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.MaxBufferedRecords(2), kgo.UnknownTopicRetries(-1),
		kgo.RecordDeliveryTimeout(time.Hour), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithHooks(&f.hooks))
	require.NoError(t, err)
	f.cl = cl
	defer f.close()
	ops := []*sendOp{{rec: history.Record{Topic: "t", Value: "1-1"}}, {rec: history.Record{Topic: "t", Value: "1-2"}},
		{rec: history.Record{Topic: "t", Value: "1-3"}}}
	require.True(t, f.hand(t.Context(), ops[0]))
	require.True(t, f.hand(t.Context(), ops[1]))
	require.True(t, ops[0].mark.head)
	require.False(t, ops[1].mark.head, "the first record of the partition is still unanswered")
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	require.True(t, f.hand(ctx, ops[2]), "franz-go took the record, and answers it")
	require.GreaterOrEqual(t, time.Since(began), 250*time.Millisecond, "the hand-over waited while the client was full")
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	select {
	case <-f.ready():
	case <-deadline.C:
		t.Fatal("no answer for the interrupted record")
	}
	as := f.take(nil)
	require.Len(t, as, 1, "only the interrupted record is answered; the others wait for a broker")
	require.Same(t, ops[2], as[0].op)
	require.ErrorIs(t, as[0].err, context.Canceled)
	require.True(t, as[0].unbuffered)
	o := f.outcome(as[0])
	require.Equal(t, history.Fail, o.Type, "%s: %s", o.Rule, o.Why)
}
