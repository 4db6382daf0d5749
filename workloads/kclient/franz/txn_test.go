package franz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// TestCommitOutcome: only an EndTransaction that certainly sent no EndTxn(commit) completes
// fail; everything after an attempted commit is unknown, never fail.
func TestCommitOutcome(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want history.Type
	}{
		{"committed", nil, history.OK},
		{"producer ID failed before the commit", kerr.OperationNotAttempted, history.Fail},
		{"producer ID failed, wrapped", fmt.Errorf("ending: %w", kerr.OperationNotAttempted), history.Fail},
		// The shape of franz-go's errRecreatedInTxn, refused before any request.
		{"topic recreated in the transaction", fmt.Errorf("the transaction produced to [t] before the topic was deleted and recreated: %w, %w",
			kerr.TransactionAbortable, kerr.UnknownTopicID), history.Fail},
		{"fenced: may answer a retried commit that was prepared", kerr.ProducerFenced, history.Info},
		{"invalid epoch", kerr.InvalidProducerEpoch, history.Info},
		{"transaction abortable from the broker", kerr.TransactionAbortable, history.Info},
		{"concurrent transactions until the deadline", kerr.ConcurrentTransactions, history.Info},
		{"unknown server error", kerr.UnknownServerError, history.Info},
		{"invalid txn state", kerr.InvalidTxnState, history.Info},
		{"connection lost", &net.OpError{Op: "read", Err: io.ErrUnexpectedEOF}, history.Info},
		{"deadline", context.DeadlineExceeded, history.Info},
		{"franz-go refuses to retry an unconfirmed commit", errors.New("cannot retry a commit whose outcome is unconfirmed"), history.Info},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, text := commitOutcome(c.err)
			require.Equal(t, c.want, got, text)
			switch got {
			case history.OK:
				require.Empty(t, text)
			case history.Fail:
				require.True(t, strings.HasPrefix(text, kclient.TxnNotSent), text)
			case history.Info:
				require.True(t, strings.HasPrefix(text, "commit: "), text)
			}
		})
	}
}

// TestLogLevels: franz-go's lines go to slog one level lower, and the processor's logger asks
// franz-go for its info lines even when slog shows none, since they announce EndTxn.
func TestLogLevels(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	require.Equal(t, kgo.LogLevelWarn, NewLog(quiet, nil).Level())
	require.Equal(t, kgo.LogLevelInfo, NewLog(quiet, func(bool) {}).Level())
	trace := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: kclient.WireLevel}))
	require.Equal(t, kgo.LogLevelDebug, NewLog(trace, func(bool) {}).Level())

	var b strings.Builder
	var seen []bool
	l := NewLog(slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})), func(c bool) { seen = append(seen, c) })
	l.Log(kgo.LogLevelInfo, "ending transaction", "transactional_id", "x", "commit", kgo.TryCommit, "producer_id", int64(7))
	l.Log(kgo.LogLevelInfo, "ending transaction", "commit", kgo.TryAbort)
	l.Log(kgo.LogLevelInfo, "beginning transaction", "commit", kgo.TryCommit)
	l.Log(kgo.LogLevelWarn, "something odd")
	require.Equal(t, []bool{true, false}, seen, "only EndTransaction's announcement counts")
	require.Contains(t, b.String(), `level=DEBUG msg="ending transaction" client=franz-go transactional_id=x commit=true`)
	require.Contains(t, b.String(), `level=WARN msg="something odd"`)
}
