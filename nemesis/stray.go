package nemesis

import (
	"context"
	"errors"
	"fmt"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
)

// StrayTxnProduce writes one transactional record to a partition without adding the partition
// to a transaction first (a Produce of the protocol before KIP-890 part 2 from a client that
// skipped AddPartitionsToTxn): the synthetic request behind a hanging transaction. With
// transaction.partition.verification.enable the leader refuses it (the event completes info, as
// every action of DoReport that errs, with the refusal; the fault was carried out all the same:
// the refusal is what the scenario looks for); without, the record is appended and no marker
// will ever end it. It ends by itself.
//
// Event "stray-txn-produce": its invoke names the record it writes, so that a read of it is known
// to have a writer even when the answer is lost; its ok completion carries it with its offset.
type StrayTxnProduce struct {
	Topic     string
	Partition int32
}

func (f StrayTxnProduce) Name() string { return history.FStrayTxnProduce }
func (f StrayTxnProduce) String() string {
	return fmt.Sprintf("stray-txn-produce(%s-%d)", f.Topic, f.Partition)
}

func (f StrayTxnProduce) Available(Cluster) error { return nil }

func (f StrayTxnProduce) Inject(ctx context.Context, e *Env) (any, error) {
	value := fmt.Sprintf("stray-%s-%d", f.Topic, f.Partition)
	txnID := "verity-stray-" + f.Topic
	t := Targets{Note: fmt.Sprintf("transactional.id %s, no AddPartitionsToTxn", txnID),
		Records: []history.Record{{Topic: f.Topic, Partition: f.Partition, Value: value}}}
	err := e.DoReport(ctx, f.Name(), t, func(ctx context.Context, t *Targets) error {
		off, err := e.Cluster.StrayTxnProduce(ctx, f.Topic, f.Partition, txnID, value)
		if err != nil {
			return err
		}
		t.Records = []history.Record{(history.Record{Topic: f.Topic, Partition: f.Partition, Value: value}).At(off)}
		return nil
	})
	if errors.Is(err, harness.ErrStrayRefused) {
		e.Log.Info("the leader refused the stray transactional produce", "topic", f.Topic, "partition", f.Partition, "err", err)
		return nil, nil
	}
	return nil, err
}

func (f StrayTxnProduce) Heal(context.Context, *Env, any) error { return nil }
