package sarama

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/kclient"
)

func TestSendTableIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range SendTable() {
		require.NotEmpty(t, r.Name)
		require.False(t, seen[r.Name], "row %s appears twice", r.Name)
		seen[r.Name] = true
		require.NotEmpty(t, r.Why, r.Name)
		require.True(t, (r.Err == nil) != (r.Match == nil), "%s: exactly one of Err and Match", r.Name)
		require.Contains(t, []history.Type{history.Fail, history.Info}, r.Once, r.Name)
		if r.OnceAcksAll != "" {
			require.Contains(t, []history.Type{history.Fail, history.Info}, r.OnceAcksAll, r.Name)
		}
		if r.Deterministic {
			require.Equal(t, history.Fail, r.Once, "%s: a deterministic error that may have written the record makes no sense", r.Name)
		}
	}
}

// The broker answers are written by code: each code is the error sarama names so.
func TestBrokerAnswersNameSaramasErrors(t *testing.T) {
	for _, a := range kclient.BrokerAnswers() {
		require.Equal(t, a.Name, ErrorName(sarama.KError(a.Code)), "code %d", a.Code)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassifySend(t *testing.T) {
	once := SendContext{Once: true}
	retried := SendContext{Once: false}
	onceAll := SendContext{Once: true, AcksAll: true}
	cases := []struct {
		name string
		err  error
		sc   SendContext
		want history.Type
	}{
		{"acknowledged", nil, retried, history.OK},
		// Certainly not written: refused before the append, on the only attempt.
		{"not enough replicas, one attempt", sarama.ErrNotEnoughReplicas, onceAll, history.Fail},
		{"not enough replicas, wrapped", fmt.Errorf("producing: %w", sarama.ErrNotEnoughReplicas), onceAll, history.Fail},
		// After retries an earlier attempt may have been appended.
		{"not enough replicas after retries", sarama.ErrNotEnoughReplicas, SendContext{AcksAll: true}, history.Info},
		{"after append", sarama.ErrNotEnoughReplicasAfterAppend, onceAll, history.Info},
		{"broker request timeout", sarama.ErrRequestTimedOut, onceAll, history.Info},
		{"not leader, acks=1", sarama.ErrNotLeaderForPartition, once, history.Fail},
		{"not leader after the send went out, acks=all", sarama.ErrNotLeaderForPartition, onceAll, history.Info},
		{"leader not available", sarama.ErrLeaderNotAvailable, once, history.Fail},
		{"message too large even after retries", sarama.ErrMessageSizeTooLarge, retried, history.Fail},
		{"invalid record", sarama.ErrInvalidRecord, retried, history.Fail},
		{"client-side configuration error", sarama.ConfigurationError("Attempt to produce message larger than configured Producer.MaxMessageBytes"), retried, history.Fail},
		{"transaction not ready", sarama.ErrTransactionNotReady, retried, history.Fail},
		{"fenced, one attempt", sarama.ErrProducerFenced, onceAll, history.Fail},
		{"fenced after retries", sarama.ErrProducerFenced, SendContext{AcksAll: true}, history.Info},
		{"out of order sequence, one attempt", sarama.ErrOutOfOrderSequenceNumber, onceAll, history.Fail},
		{"storage error", sarama.ErrKafkaStorageError, onceAll, history.Info},
		{"connection reset", &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, once, history.Info},
		{"eof", io.EOF, once, history.Info},
		{"timeout", timeoutErr{}, once, history.Info},
		{"deadline", context.DeadlineExceeded, once, history.Info},
		{"out of brokers", sarama.ErrOutOfBrokers, once, history.Info},
		{"shutting down", sarama.ErrShuttingDown, once, history.Info},
		{"unknown error", errors.New("something new"), once, history.Info},
		{"unlisted broker error", sarama.ErrUnknown, once, history.Info},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := ClassifySend(c.err, c.sc)
			assert.Equal(t, c.want, o.Type, "rule %q: %s", o.Rule, o.Why)
			if c.err != nil {
				assert.NotEmpty(t, o.Why)
			}
		})
	}
}
