package franz

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// Log forwards a franz-go client's log to slog, one level lower (franz-go's info lines come per
// transaction and per group session: detail for Verity; its debug lines, every request written
// with its version, go to slog at kclient.WireLevel). onEnd, when set, is told each time franz-go
// is about to send EndTxn, and whether it commits: the processor's way to know whether a
// GroupTransactSession.End that did not commit had sent the commit.
type Log struct {
	log   *slog.Logger
	level kgo.LogLevel
	onEnd func(commit bool)
}

// NewLog is a franz-go logger writing to log.
func NewLog(log *slog.Logger, onEnd func(commit bool)) *Log {
	ctx := context.Background()
	level := kgo.LogLevelWarn
	switch {
	case log.Enabled(ctx, kclient.WireLevel):
		level = kgo.LogLevelDebug
	case onEnd != nil || log.Enabled(ctx, slog.LevelDebug):
		level = kgo.LogLevelInfo
	}
	return &Log{log: log.With("client", "franz-go"), level: level, onEnd: onEnd}
}

func (l *Log) Level() kgo.LogLevel { return l.level }

func (l *Log) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	// EndTransaction logs this, with the commit flag, right before it sends EndTxn.
	if l.onEnd != nil && msg == "ending transaction" {
		for i := 0; i+1 < len(keyvals); i += 2 {
			if c, ok := keyvals[i+1].(kgo.TransactionEndTry); ok && keyvals[i] == "commit" {
				l.onEnd(bool(c))
			}
		}
	}
	sl := kclient.WireLevel
	switch level {
	case kgo.LogLevelError, kgo.LogLevelWarn:
		sl = slog.LevelWarn
	case kgo.LogLevelInfo:
		sl = slog.LevelDebug
	}
	l.log.Log(context.Background(), sl, msg, keyvals...)
}
