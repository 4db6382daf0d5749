package remote

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/kclient"
)

var _ kclient.ShareClient = (*Client)(nil)

// ErrNoShare is the error of every share request to a program that has no share consumer: it
// answered unknown_op, as a program written before the share requests were added does.
var ErrNoShare = errors.New("this client program has no share consumer (KIP-932)")

// shareCall is call for the share requests: a program that does not know them says so with
// unknown_op, which becomes ErrNoShare rather than an error of the cluster.
func (c *Client) shareCall(ctx context.Context, op Op, handle string, args, res any) error {
	err := c.call(ctx, op, handle, args, res)
	if ke, ok := errors.AsType[*kclient.Error](err); ok && ke.Name == "unknown_op" {
		return fmt.Errorf("%s: %w", op, ErrNoShare)
	}
	return err
}

// ConfigureShareGroup asks the program to set the group's configs (share.configure).
func (c *Client) ConfigureShareGroup(ctx context.Context, clientID string, s kclient.ShareGroupSettings) error {
	a := ShareGroupArgs{ClientID: clientID, Group: s.Group, Start: s.Start, DeliveryLimit: s.DeliveryLimit}
	if s.LockDuration > 0 {
		d := Duration(s.LockDuration)
		a.LockDuration = &d
	}
	if err := c.shareCall(ctx, OpShareConfigure, "", a, nil); err != nil {
		return fmt.Errorf("configuring share group %s: %w", s.Group, err)
	}
	return nil
}

// ShareStartOffsets asks the program for the group's start offsets (share.start_offsets).
func (c *Client) ShareStartOffsets(ctx context.Context, clientID, group string, topics []string) (map[string]map[int32]int64, error) {
	var res ShareOffsetsResult
	if err := c.shareCall(ctx, OpShareStartOffsets, "", ShareOffsetsArgs{ClientID: clientID, Group: group, Topics: topics}, &res); err != nil {
		return nil, fmt.Errorf("share start offsets of %s: %w", group, err)
	}
	out, err := byNumber("offsets", res.Offsets, func(off int64) int64 { return off })
	if err != nil {
		return nil, fmt.Errorf("share start offsets of %s: the program's result: %w", group, err)
	}
	return out, nil
}

// shareConsumer is a share-group member the program runs. The program keeps what the member
// holds and refuses what the seam refuses (a poll while records are held, an ack of a record not
// held); the marks are kept here too, so that a commit whose answer never comes is reported for
// each of them.
type shareConsumer struct {
	c      *Client
	handle string
	// marked are the acknowledgements the program took since the last commit, in order. Only
	// the owning goroutine touches them.
	marked []shareMark
}

type shareMark struct {
	topic     string
	partition int32
	ack       kclient.Ack
}

func (c *Client) OpenShareConsumer(ctx context.Context, s kclient.ShareConsumerSpec) (kclient.ShareConsumer, error) {
	sc := &shareConsumer{c: c, handle: c.handle("s")}
	err := c.shareCall(ctx, OpShareOpen, sc.handle, ShareSpec{ClientID: s.ClientID, Group: s.Group, Topics: s.Topics, MaxRecords: s.MaxRecords}, nil)
	if errors.Is(err, ErrNoShare) {
		return nil, &kclient.PermanentError{Err: err}
	}
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// sharePollGrace is how long past its wait a share.poll is waited for.
const sharePollGrace = 30 * time.Second

// Poll waits for the program's answer even once ctx has ended (bounded by wait and a grace):
// the records it acquired are held by the program until acknowledged, and a poll whose answer
// was dropped would leave the member holding records it cannot name, refused every later poll.
func (sc *shareConsumer) Poll(ctx context.Context, wait time.Duration, max int) ([]kclient.Delivery, error) {
	if ctx.Err() != nil {
		return nil, nil
	}
	w := Duration(wait)
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait+sharePollGrace)
	defer cancel()
	var res SharePollResult
	err := sc.c.call(pctx, OpSharePoll, sc.handle, PollArgs{Max: max, Wait: &w}, &res)
	out := make([]kclient.Delivery, 0, len(res.Deliveries))
	for _, d := range res.Deliveries {
		if d.Record.Offset == nil {
			err = errors.Join(err, fmt.Errorf("share consumer: the program delivered a record of %s-%d without its offset", d.Record.Topic, d.Record.Partition))
			continue
		}
		out = append(out, kclient.Delivery{Record: d.Record.history(), Count: d.Count})
	}
	if err != nil {
		return out, fmt.Errorf("share consumer: polling: %w", err)
	}
	return out, nil
}

func (sc *shareConsumer) Ack(t kclient.AckType, ds ...kclient.Delivery) error {
	if _, err := history.ParseAckType(string(t)); err != nil {
		return err
	}
	a := ShareAckArgs{Type: t, Records: make([]Place, 0, len(ds))}
	for _, d := range ds {
		if d.Record.Offset == nil {
			return fmt.Errorf("share consumer: %s %s-%d: a delivery without its offset", t, d.Record.Topic, d.Record.Partition)
		}
		a.Records = append(a.Records, Place{Topic: d.Record.Topic, Partition: d.Record.Partition, Offset: *d.Record.Offset})
	}
	if err := sc.c.call(context.Background(), OpShareAck, sc.handle, a, nil); err != nil {
		return fmt.Errorf("share consumer: %s: %w", t, err)
	}
	for _, p := range a.Records {
		sc.marked = append(sc.marked, shareMark{p.Topic, p.Partition, kclient.Ack{Offset: p.Offset, Type: t}})
	}
	return nil
}

// Commit waits for the program's results until ctx ends; a partition the program gives no
// result for, or a result that breaks the rules (ok with an error, fail without one), is
// unknown.
func (sc *shareConsumer) Commit(ctx context.Context) []kclient.AckResult {
	if len(sc.marked) == 0 {
		return nil
	}
	marked := sc.marked
	sc.marked = nil
	var a ShareCommitArgs
	if dl, ok := ctx.Deadline(); ok {
		d := Duration(max(time.Until(dl), 0))
		a.Within = &d
	}
	var res ShareCommitResult
	err := sc.c.call(ctx, OpShareCommit, sc.handle, a, &res)
	type tp struct {
		topic     string
		partition int32
	}
	mine := map[tp][]kclient.Ack{}
	for _, m := range marked {
		k := tp{m.topic, m.partition}
		mine[k] = append(mine[k], m.ack)
	}
	var out []kclient.AckResult
	if err == nil {
		for _, r := range res.Results {
			k := tp{r.Topic, r.Partition}
			if _, ok := mine[k]; !ok {
				continue // a partition this member marked nothing in
			}
			out = append(out, sc.result(r, mine[k]))
			delete(mine, k)
		}
	}
	why := "the client program gave no result for the partition's acknowledgements"
	if err != nil {
		why = "no answer for the acknowledgements: " + err.Error()
	}
	for k, acks := range mine {
		out = append(out, kclient.AckResult{Topic: k.topic, Partition: k.partition, Acks: acks, Type: history.Info, Error: why})
	}
	slices.SortFunc(out, func(a, b kclient.AckResult) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// result is the program's result r, with the acknowledgements this side marked (the program's
// list is its own account of the same, kept only when it is whole).
func (sc *shareConsumer) result(r AckResult, acks []kclient.Ack) kclient.AckResult {
	out := kclient.AckResult{Topic: r.Topic, Partition: r.Partition, Acks: acks}
	t, err := r.Outcome.history()
	switch {
	case err != nil:
		out.Type, out.Error = history.Info, "the client program answered "+err.Error()
	case t == history.OK && r.Error != nil:
		out.Type, out.Error = history.Info, "the client program answered ok with an error: "+r.Error.Text
	case t != history.OK && r.Error == nil:
		out.Type, out.Error = history.Info, fmt.Sprintf("the client program answered %s without an error", t)
	default:
		out.Type = t
		if r.Error != nil {
			out.Error = r.Error.Text
		}
	}
	return out
}

// Close asks the program to end the member as a crash would (close on a share consumer).
func (sc *shareConsumer) Close() { sc.c.closeInstance(sc.handle) }
