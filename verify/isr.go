package verify

import (
	"encoding/json"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/metrics"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// unexpected-ack: an acks=all write acknowledged while its partition's ISR was known to be
// smaller than min.insync.replicas.
//
// The ISR is known from observation events the harness writes into the history (any process,
// usually the nemesis; any type):
//
//	{"p":"nemesis","type":"info","f":"isr","value":{"topic":"t","partition":0,"isr":[1],"min_isr":2,"replicas":[1,2,3]}}
//
// "min_isr" is optional (default: the topic's configured min.insync.replicas). "replicas" (the
// partition's replica set) is optional too; it scopes faults to the partitions whose replicas
// they touched (faults.go). Observations are samples, and the ISR may grow between two of
// them, so "known below" is strict: an observation showing ISR < min ISR before the send was
// invoked, no observation showing otherwise until its acknowledgement, and another
// observation showing ISR < min ISR at least ISRCommitLag after it.
//
// The lag is there because observations read the brokers' metadata, which trails the leader:
// the leader acknowledges against its maximal ISR (the ISR plus a replica it has asked the
// controller to add, Partition.checkEnoughReplicasReachOffset) and takes the controller's
// answer as soon as it comes, while the brokers learn the new ISR only when they replay the
// record from the metadata log. A write acknowledged just before an expansion reaches the
// metadata is therefore no evidence; one followed by ISRCommitLag of ISR still below min is.

// ISREvent is the payload of an "isr" observation event.
type ISREvent struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	ISR       []int  `json:"isr"`
	MinISR    *int   `json:"min_isr,omitempty"`
	Replicas  []int  `json:"replicas,omitempty"`
	// Leader and LeaderEpoch feed metadata-lost (metadata.go); optional.
	Leader      *int32 `json:"leader,omitempty"`
	LeaderEpoch *int32 `json:"leader_epoch,omitempty"`
}

type isrPart struct {
	below      bool
	epoch      uint32 // id of the current below-min-ISR period
	belowSince uint32 // first observation of that period
	pending    []ackCand
}

type ackCand struct {
	v                    uint32
	since, invoke, acked uint32
	ackedAt              int64 // the acknowledgement's time (ns)
}

// ISRCommitLag is how long after an acknowledgement the metadata must still show the ISR
// below min ISR for the acknowledgement to count: an expansion the leader already acted on
// reaches the brokers' metadata well within it, even on a loaded machine.
const ISRCommitLag = 10 * time.Second

type isrState struct {
	parts     []isrPart
	nextEpoch uint32
	observed  bool
	confirmed []finding
}

// epochAt is the below-min-ISR period tp is in, or 0.
func (s *isrState) epochAt(tp uint32) uint32 {
	if int(tp) < len(s.parts) && s.parts[tp].below {
		return s.parts[tp].epoch
	}
	return 0
}

func (s *isrState) observe(c *Checker, op *history.Op, ord uint32) {
	if op.Type == history.Fail || len(op.Value.Raw) == 0 {
		return
	}
	var ev ISREvent
	if err := json.Unmarshal(op.Value.Raw, &ev); err != nil {
		c.log.Debug("isr event unreadable, ignored", "i", op.Index, "err", err)
		return
	}
	s.observed = true
	tp := c.parts.id(ev.Topic, ev.Partition)
	c.faults.observeReplicas(tp, ev.Replicas)
	if ev.Leader != nil && ev.LeaderEpoch != nil {
		c.meta.observe(c, tp, *ev.Leader, *ev.LeaderEpoch, ord)
		if c.share.on {
			c.share.leader(tp, *ev.Leader, *ev.LeaderEpoch, op.Time)
		}
	}
	if int(tp) >= len(s.parts) {
		grown := make([]isrPart, len(c.parts.ps)+8)
		copy(grown, s.parts)
		s.parts = grown
	}
	minISR := c.topicSettings(tp).MinISR
	if ev.MinISR != nil {
		minISR = *ev.MinISR
	}
	if c.opts.Metrics != nil {
		o := metrics.Observation{Index: op.Index, TimeMS: op.Time / int64(time.Millisecond), Topic: ev.Topic, Partition: ev.Partition,
			Leader: -1, ISR: ev.ISR, Replicas: ev.Replicas, MinISR: minISR}
		if ev.Leader != nil {
			o.Leader = *ev.Leader
		}
		c.observed = append(c.observed, o)
	}
	if c.liveOn {
		leader := int32(-1)
		if ev.Leader != nil {
			leader = *ev.Leader
		}
		c.live.isr(tp, leader, len(ev.ISR), minISR, ev.Replicas, op.Time, ord)
	}
	ps := &s.parts[tp]
	if len(ev.ISR) >= minISR {
		ps.below = false
		ps.pending = ps.pending[:0]
		return
	}
	if !ps.below {
		s.nextEpoch++
		ps.below, ps.epoch, ps.belowSince = true, s.nextEpoch, ord
	}
	waiting := ps.pending[:0]
	for _, a := range ps.pending {
		if op.Time-a.ackedAt < int64(ISRCommitLag) {
			waiting = append(waiting, a)
			continue
		}
		s.confirmed = append(s.confirmed, finding{a: guarantee.UnexpectedAck, v: a.v, tp: tp,
			off: c.vals.at(a.v).off, off2: -1, ops: [4]uint32{a.since, a.invoke, a.acked, ord}, proc: -1})
	}
	ps.pending = waiting
}

// acked notes an ok send to tp invoked while tp was below min ISR.
func (s *isrState) acked(pd *pending, tp uint32, v, ord uint32, at int64) {
	if int(tp) >= len(s.parts) {
		return
	}
	ps := &s.parts[tp]
	if ps.below && ps.epoch == pd.isrEpoch {
		ps.pending = append(ps.pending, ackCand{v: v, since: ps.belowSince, invoke: pd.ord, acked: ord, ackedAt: at})
	}
}

// checkUnexpectedAck reports the confirmed acks of acks=all writers — the anomaly is defined
// for them alone, since min.insync.replicas applies to acks=all writes only; unconfirmed ones
// (no observation ISRCommitLag after the ack while the ISR stayed below) are dropped.
func (c *Checker) checkUnexpectedAck() {
	for _, f := range c.isr.confirmed {
		st := c.vals.at(f.v)
		if st.kind() == kindNone || c.producerSettings(st.proc).Acks != kafkaconf.AcksAll {
			continue
		}
		c.find(f)
	}
	c.isr.confirmed = nil
}
