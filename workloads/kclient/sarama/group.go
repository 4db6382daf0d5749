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
}

func (h *groupHandler) emit(ctx context.Context, ev groupEvent) {
	select {
	case h.events <- ev:
	case <-ctx.Done():
	case <-h.stop:
	}
}

func (h *groupHandler) Setup(s sarama.ConsumerGroupSession) error {
	h.emit(s.Context(), groupEvent{kind: evSetup, sess: s})
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
