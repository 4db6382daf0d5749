package franz

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/verity-kafka/verity/history"
)

func TestAckOutcome(t *testing.T) {
	refused := fmt.Errorf("ack: %w", kerr.InvalidRecordState)
	for _, tc := range []struct {
		name     string
		answers  []error
		flushErr error
		relayed  bool
		want     history.Type
	}{
		{"ok", []error{nil}, nil, false, history.OK},
		{"ok in two requests", []error{nil, nil}, nil, false, history.OK},
		{"refused", []error{refused}, nil, false, history.Fail},
		{"session gone", []error{kerr.ShareSessionNotFound}, nil, false, history.Fail},
		{"not the leader", []error{kerr.NotLeaderForPartition}, nil, false, history.Fail},
		{"refused after a lost answer", []error{refused}, nil, true, history.Info},
		{"part refused, part ok", []error{nil, refused}, nil, false, history.Info},
		{"timed out", []error{kerr.RequestTimedOut}, nil, false, history.Info},
		{"persisting failed", []error{kerr.UnknownServerError}, nil, false, history.Info},
		{"connection lost", []error{errors.New("read tcp: connection reset by peer")}, nil, false, history.Info},
		{"no answer", nil, context.DeadlineExceeded, false, history.Info},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, text := AckOutcome(tc.answers, tc.flushErr, tc.relayed)
			require.Equal(t, tc.want, got, text)
			require.Equal(t, got == history.OK, text == "", "an error text unless ok: %q", text)
		})
	}
}
