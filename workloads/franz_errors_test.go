package workloads

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/kafkaconf"
	kfranz "github.com/verity-kafka/verity/workloads/kclient/franz"
)

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
		popts, warns, err := kfranz.ProducerOpts(c.spec("t", nil))
		require.NoError(t, err)
		cl, err := kgo.NewClient(append(kfranz.Base([]string{"127.0.0.1:1"}, "t"), popts...)...)
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
	require.Equal(t, int64(kfranz.MaxBuffered), cl.OptValue(kgo.MaxBufferedRecords))

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
	_, _, err = kfranz.ProducerOpts(c.spec("t", nil))
	require.NoError(t, err)
}
