package sarama

import (
	"context"
	"fmt"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// groupEvent is what a consumer-group session (or a partition consumer) tells the goroutine
// that owns the instance. sarama runs Setup, one ConsumeClaim per partition and Cleanup in goroutines of its
// own; the role records ops from one goroutine only (one op in flight per process), so the
// handler turns everything into events on one channel. Their order on the channel is the order
// that matters: a session's Setup before any of its records, all of its records before its
// Cleanup (sarama calls Cleanup after every ConsumeClaim has returned, and ConsumeClaim hands
// over each record before it returns).
type groupEvent struct {
	kind groupEventKind
	sess sarama.ConsumerGroupSession
	msg  *sarama.ConsumerMessage
	// place, on a session's setup when the role keeps the positions, takes the offsets the
	// session's claims start at: Setup waits for them, since sarama starts a claim at its
	// offset when Setup returns and cannot move it later.
	place chan map[string]map[int32]int64
}

type groupEventKind int

const (
	evSetup groupEventKind = iota
	evRecord
	evCleanup
)

type groupHandler struct {
	events chan<- groupEvent
	// stop ends the handler's waits when nobody reads events any more.
	stop <-chan struct{}
	// storePositions: each session's claims start where the role says (ConsumerSpec).
	storePositions bool
}

func (h *groupHandler) emit(ctx context.Context, ev groupEvent) {
	select {
	case h.events <- ev:
	case <-ctx.Done():
	case <-h.stop:
	}
}

func (h *groupHandler) Setup(s sarama.ConsumerGroupSession) error {
	ev := groupEvent{kind: evSetup, sess: s}
	if h.storePositions {
		ev.place = make(chan map[string]map[int32]int64, 1)
	}
	h.emit(s.Context(), ev)
	if ev.place == nil {
		return nil
	}
	select {
	case at := <-ev.place:
		for t, parts := range s.Claims() {
			for _, p := range parts {
				if off, ok := at[t][p]; ok {
					// sarama moves a claim's start forward only by MarkOffset and back only
					// by ResetOffset; one of the two applies. Nothing is committed: auto-commit
					// is off.
					s.MarkOffset(t, p, off, "")
					s.ResetOffset(t, p, off, "")
				}
			}
		}
	case <-s.Context().Done():
	case <-h.stop:
	}
	return nil
}

func (h *groupHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	// The session's context is already done here; the owner still reads every event until
	// Consume has returned, so waiting on stop alone is enough.
	h.emit(context.Background(), groupEvent{kind: evCleanup, sess: s})
	return nil
}

func (h *groupHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			select {
			case h.events <- groupEvent{kind: evRecord, sess: s, msg: m}:
			case <-s.Context().Done():
				// The session ends: this record was never handed over, and the next
				// session starts from the committed offsets, so it is read again.
				return nil
			case <-h.stop:
				return nil
			}
		case <-s.Context().Done():
			return nil
		case <-h.stop:
			return nil
		}
	}
}

// sessionClaims is a group session's assignment.
func sessionClaims(s sarama.ConsumerGroupSession) kclient.Claims {
	return kclient.Claims{Generation: s.GenerationID(), Member: s.MemberID(), Partitions: s.Claims()}
}

// Isolation is sarama's isolation level for Kafka's.
func Isolation(i kafkaconf.Isolation) sarama.IsolationLevel {
	if i == kafkaconf.ReadCommitted {
		return sarama.ReadCommitted
	}
	return sarama.ReadUncommitted
}

// classicOnly refuses any group protocol but the classic one: sarama speaks no other.
func classicOnly(p kafkaconf.GroupProtocol) error {
	if p != "" && p != kafkaconf.GroupClassic {
		return &kclient.PermanentError{Err: fmt.Errorf("sarama's group members speak the classic group protocol only, not %s", p)}
	}
	return nil
}
