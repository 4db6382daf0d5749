package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// shareClient is the served client's share consumer, or nil after refusing req as unknown: a
// client without one (sarama) serves a program that does not know the share requests.
func (s *server) shareClient(req Request) kclient.ShareClient {
	sc, ok := s.cl.(kclient.ShareClient)
	if !ok {
		s.refuse(req.ID, "unknown_op", "%s: %s has no share consumer", req.Op, s.cl.Name())
		return nil
	}
	return sc
}

// shareGlobal answers share.configure and share.start_offsets.
func (s *server) shareGlobal(req Request) {
	sc := s.shareClient(req)
	if sc == nil {
		return
	}
	switch req.Op {
	case OpShareConfigure:
		var a ShareGroupArgs
		if err := json.Unmarshal(req.Args, &a); err != nil {
			s.refuse(req.ID, "bad_request", "%s: %v", req.Op, err)
			return
		}
		gs := kclient.ShareGroupSettings{Group: a.Group, Start: a.Start, DeliveryLimit: a.DeliveryLimit}
		if a.LockDuration != nil {
			gs.LockDuration = time.Duration(*a.LockDuration)
		}
		s.reply(req.ID, struct{}{}, sc.ConfigureShareGroup(s.ctx, a.ClientID, gs))
	case OpShareStartOffsets:
		var a ShareOffsetsArgs
		if err := json.Unmarshal(req.Args, &a); err != nil {
			s.refuse(req.ID, "bad_request", "%s: %v", req.Op, err)
			return
		}
		offs, err := sc.ShareStartOffsets(s.ctx, a.ClientID, a.Group, a.Topics)
		if err != nil {
			s.reply(req.ID, nil, err)
			return
		}
		s.reply(req.ID, ShareOffsetsResult{Offsets: byText(offs, func(off int64) int64 { return off })}, nil)
	}
}

// shareOp handles a share consumer's requests; an error is a request the instance cannot take.
// The deliveries a poll returned are kept by place, so that share.ack can hand the consumer the
// deliveries it returned.
func (s *server) shareOp(in *instance, req Request) error {
	args := func(v any) error { return json.Unmarshal(req.Args, v) }
	if req.Op == OpShareOpen {
		sc := s.shareClient(req)
		if sc == nil {
			return nil
		}
		var sp ShareSpec
		if err := args(&sp); err != nil {
			return err
		}
		c, err := sc.OpenShareConsumer(s.ctx, kclient.ShareConsumerSpec{ClientID: sp.ClientID, Group: sp.Group, Topics: sp.Topics,
			MaxRecords: sp.MaxRecords, Log: s.log})
		in.share = c
		s.reply(req.ID, struct{}{}, err)
		return nil
	}
	if in.share == nil {
		return errors.New("not a share consumer")
	}
	switch req.Op {
	case OpSharePoll:
		var a PollArgs
		if err := args(&a); err != nil {
			return err
		}
		var wait time.Duration
		if a.Wait != nil {
			wait = time.Duration(*a.Wait)
		}
		ds, err := in.share.Poll(s.ctx, wait, a.Max)
		res := SharePollResult{Deliveries: make([]Delivery, len(ds))}
		for i, d := range ds {
			res.Deliveries[i] = Delivery{Record: wireRecord(d.Record), Count: d.Count}
		}
		s.reply(req.ID, res, err)
	case OpShareAck:
		var a ShareAckArgs
		if err := args(&a); err != nil {
			return err
		}
		ds := make([]kclient.Delivery, len(a.Records))
		for i, p := range a.Records {
			ds[i] = kclient.Delivery{Record: history.Record{Topic: p.Topic, Partition: p.Partition}.At(p.Offset)}
		}
		s.reply(req.ID, struct{}{}, in.share.Ack(a.Type, ds...))
	case OpShareCommit:
		var a ShareCommitArgs
		if err := args(&a); err != nil {
			return err
		}
		ctx, cancel := s.ctx, func() {}
		if a.Within != nil {
			ctx, cancel = context.WithTimeout(s.ctx, time.Duration(*a.Within))
		}
		rs := in.share.Commit(ctx)
		cancel()
		res := ShareCommitResult{Results: make([]AckResult, len(rs))}
		for i, r := range rs {
			w := AckResult{Topic: r.Topic, Partition: r.Partition, Outcome: wireOutcome(r.Type), Acks: make([]WireAck, len(r.Acks))}
			for j, ack := range r.Acks {
				w.Acks[j] = WireAck{Offset: ack.Offset, Type: ack.Type}
			}
			if r.Type != history.OK {
				// The seam's result carries the error's text alone.
				w.Error = &Error{Name: "error", Text: r.Error}
			}
			res.Results[i] = w
		}
		s.reply(req.ID, res, nil)
	default:
		return fmt.Errorf("not a share consumer's request")
	}
	return nil
}
