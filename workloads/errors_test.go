package workloads

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

func TestErrorTextNamesKafkaErrors(t *testing.T) {
	got := ErrorText(sarama.ErrNotEnoughReplicas)
	require.True(t, strings.HasPrefix(got, "kafka server: NOT_ENOUGH_REPLICAS: "), got)
	require.Contains(t, ErrorText(fmt.Errorf("commit: %w", sarama.ErrProducerFenced)), "PRODUCER_FENCED")
	require.Contains(t, ErrorText(sarama.ErrConcurrentTransactions), "CONCURRENT_TRANSACTIONS")
	require.Equal(t, "boom", ErrorText(errors.New("boom")))
	require.Empty(t, ErrorText(nil))
}
