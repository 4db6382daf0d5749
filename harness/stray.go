package harness

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// ErrStrayRefused is the leader's refusal of a stray transactional produce: the answer a broker
// that verifies transactional partitions gives, not a failure to send it.
var ErrStrayRefused = errors.New("the leader refused it")

// StrayTxnProduce writes one transactional record to a partition the way a broken client
// would: it initialises transactional.id txnID and sends the record in a Produce of the
// protocol before KIP-890 part 2 (v11), without AddPartitionsToTxn first, so the coordinator
// never hears of the partition. With transaction.partition.verification.enable (KIP-890 part
// 1) the leader asks the coordinator and refuses it; without, the record is appended, nothing
// will ever write its marker, and the partition's last stable offset stays below it: a hanging
// transaction. It returns the record's offset, or the leader's refusal as an error that wraps
// ErrStrayRefused.
func (c *Cluster) StrayTxnProduce(ctx context.Context, topic string, partition int32, txnID, value string) (int64, error) {
	what := fmt.Sprintf("a stray transactional produce to %s-%d", topic, partition)
	st, err := c.DescribePartition(ctx, topic, partition)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", what, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ClientID("verity-stray"),
		kgo.MaxVersions(kversion.V3_9_0()), kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		return -1, fmt.Errorf("%s: %w", what, err)
	}
	defer cl.Close()

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &txnID, 60_000
	init.ProducerID, init.ProducerEpoch = -1, -1
	ir, err := init.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(ir.ErrorCode)
	}
	if err != nil {
		return -1, fmt.Errorf("%s: initialising %s: %w", what, txnID, err)
	}

	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = &txnID, -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = txnBatch(ir.ProducerID, ir.ProducerEpoch, []byte(value), time.Now())
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(st.Leader)))
	if err != nil {
		return -1, fmt.Errorf("%s: %w", what, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("%s: the leader answered for %d topics", what, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, fmt.Errorf("%s: %w: %w", what, ErrStrayRefused, err)
	}
	return p.BaseOffset, nil
}

// txnBatch is a record batch (magic 2) of one record with value v, marked transactional, for
// producer id/epoch at sequence 0.
func txnBatch(id int64, epoch int16, v []byte, now time.Time) []byte {
	r := kmsg.Record{Value: v}
	body := r.AppendTo(nil)
	r.Length = int32(len(body) - 1) // the length excludes its own varint, 1 byte for 0
	records := r.AppendTo(nil)
	ms := now.UnixMilli()
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0x10, FirstTimestamp: ms, MaxTimestamp: ms,
		ProducerID: id, ProducerEpoch: epoch, NumRecords: 1, Records: records}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:12], uint32(len(out)-12)) // length: what follows the field
	// The CRC (Castagnoli) covers everything after it, from the attributes on.
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}
