package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/verity-kafka/verity/history"
)

// FISR is the f of an ISR observation event (verify/doc.go): value {"topic","partition","isr",
// "min_isr","replicas"}, plus the leader and epoch and the brokers whose answers were merged.
const FISR = "isr"

// ISREvent is the value of an ISR observation.
type ISREvent struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	ISR         []int  `json:"isr"`
	MinISR      *int   `json:"min_isr,omitempty"`
	Replicas    []int  `json:"replicas,omitempty"` // sorted; the checker scopes faults by it
	Leader      int32  `json:"leader"`
	LeaderEpoch int32  `json:"leader_epoch"`
	From        []int  `json:"from,omitempty"`
}

// WatchISR samples the partitions of topics every interval (default 500 ms), and at once
// after every injection and heal, until ctx ends; it records an "isr" event (an invoke with
// no value, then ok with the observation) for a partition when it is first seen, when its
// ISR, leader or leader epoch changes, and at every sample while its ISR is below
// min.insync.replicas: verify's unexpected-ack needs an observation below min ISR before a send
// and another after its acknowledgement, and its metadata-lost every leader epoch seen. Run it
// in its own goroutine for the length of the run.
//
// What an observation is worth: it merges the metadata of every broker that answered, the
// ISR being their union, so it shows an ISR below min ISR only when every broker that
// answered says so. Broker metadata still trails the partition leader's own view by the
// metadata log's propagation delay (tens of ms), and the event is written after the sample,
// so an acknowledgement that lands within that window of an ISR growth could be taken as made
// below min ISR. The window is small next to a fault's length; it is a limit of sampling.
func (n *Nemesis) WatchISR(ctx context.Context, topics []string, every time.Duration) error {
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	minISR := map[string]int{}
	type seen struct {
		isr    []int
		leader int32
		epoch  int32
	}
	last := map[string]seen{}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		for _, t := range topics {
			if _, ok := minISR[t]; !ok {
				if m, err := n.loc.MinISR(ctx, t); err == nil {
					minISR[t] = m
				}
			}
		}
		samples, err := n.loc.ISR(ctx, topics)
		if err != nil && ctx.Err() == nil {
			n.log.Debug("ISR sample failed", "err", err)
		}
		for _, s := range samples {
			key := fmt.Sprintf("%s-%d", s.Topic, s.Partition)
			m, known := minISR[s.Topic]
			prev, had := last[key]
			below := known && len(s.ISR) < m
			if had && !below && slices.Equal(prev.isr, s.ISR) && prev.leader == s.Leader && prev.epoch == s.Epoch {
				continue
			}
			ev := ISREvent{Topic: s.Topic, Partition: s.Partition, ISR: s.ISR, Replicas: s.Replicas, Leader: s.Leader,
				LeaderEpoch: s.Epoch, From: s.From}
			if known {
				ev.MinISR = &m
			}
			if err := n.recordISR(ev); err != nil {
				return err
			}
			last[key] = seen{isr: s.ISR, leader: s.Leader, epoch: s.Epoch}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-n.kick:
		}
	}
}

func (n *Nemesis) recordISR(ev ISREvent) error {
	if ev.ISR == nil {
		ev.ISR = []int{}
	}
	v, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("recording an ISR observation: %w", err)
	}
	// The invoke carries no value: the checker reads the observation from the ok alone.
	inv, err := n.rec.Invoke(history.NemesisP(), FISR, history.Payload{})
	if err != nil {
		return fmt.Errorf("recording an ISR observation: %w", err)
	}
	if _, err := n.rec.Complete(inv, history.OK, history.Payload{Raw: v}, ""); err != nil {
		return fmt.Errorf("recording an ISR observation: %w", err)
	}
	return nil
}

// kickISR asks a running WatchISR for a sample now (a fault just took effect or healed).
func (n *Nemesis) kickISR() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}
