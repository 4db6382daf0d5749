package workloads

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/verity-kafka/verity/kafkaconf"
)

// franzTxnProtocol asks the cluster which transaction protocol franz-go will speak: KIP-890's
// (v2) when the cluster has finalised transaction.version 2 and the run's cap allows it, else
// the one before (franz-go opts in on the same condition).
func franzTxnProtocol(ctx context.Context, env Env) (kafkaconf.TxnProtocol, error) {
	if env.TxnProtocol == kafkaconf.TxnProtocolV1 {
		return kafkaconf.TxnProtocolV1, nil
	}
	cl, err := kgo.NewClient(env.Franz(clientID(0, "features"))...)
	if err != nil {
		return "", fmt.Errorf("asking the cluster's transaction.version: %w", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "verity", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", fmt.Errorf("asking the cluster's transaction.version: %w", err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" && f.MaxVersionLevel >= 2 {
			return kafkaconf.TxnProtocolV2, nil
		}
	}
	return kafkaconf.TxnProtocolV1, nil
}

// franzTxnCap are the options that keep a franz-go client to transaction protocol v1 when the
// run caps it so: EndTxn at v4 (v5 is KIP-890's), so that franz-go does not opt in.
func franzTxnCap(p kafkaconf.TxnProtocol) []kgo.Opt {
	if p != kafkaconf.TxnProtocolV1 {
		return nil
	}
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	return []kgo.Opt{kgo.MaxVersions(v)}
}

// franzPartitions asks the cluster, through cl, for the partitions of each topic, in order. A
// broker that has not yet learned of a topic created a moment ago says it does not exist, so
// retriable answers are asked again until ctx ends or a minute passes; an error Kafka does not
// retry (an invalid topic name, an authorization failure) ends the wait at once.
func franzPartitions(ctx context.Context, cl *kgo.Client, topics []string) (map[string][]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	var parts map[string][]int32
	var fatal error
	err := waitUntil(ctx, time.Now().Add(time.Minute), 250*time.Millisecond, func() (bool, error) {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false, err
		}
		parts = map[string][]int32{}
		for _, t := range resp.Topics {
			if t.Topic == nil {
				continue
			}
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				if !kerr.IsRetriable(err) {
					fatal = fmt.Errorf("topic %s: %w", *t.Topic, err)
					return true, nil
				}
				return false, fmt.Errorf("topic %s: %w", *t.Topic, err)
			}
			ps := make([]int32, 0, len(t.Partitions))
			for _, p := range t.Partitions {
				ps = append(ps, p.Partition)
			}
			slices.Sort(ps)
			parts[*t.Topic] = ps
		}
		for _, t := range topics {
			if len(parts[t]) == 0 {
				return false, fmt.Errorf("topic %s: no partitions known yet", t)
			}
		}
		return true, nil
	})
	switch {
	case fatal != nil:
		return nil, fmt.Errorf("partitions of %v: %w", topics, fatal)
	case err != nil:
		return nil, fmt.Errorf("partitions of %v: %w", topics, err)
	}
	return parts, nil
}

// franzPartitionCounts is franzPartitions as counts, for the producers, which pick partitions
// by number.
func franzPartitionCounts(ctx context.Context, cl *kgo.Client, topics []string) (map[string]int32, error) {
	parts, err := franzPartitions(ctx, cl, topics)
	if err != nil {
		return nil, err
	}
	counts := make(map[string]int32, len(parts))
	for t, ps := range parts {
		counts[t] = int32(len(ps))
	}
	return counts, nil
}

// franzLog forwards a franz-go client's log to slog, one level lower (franz-go's info lines come
// per transaction and per group session: detail for Verity; its debug lines, every request
// written with its version, go to slog at WireLevel). onEnd, when set, is told each time
// franz-go is about to send EndTxn, and whether it commits: the processor's way to know whether a
// GroupTransactSession.End that did not commit had sent the commit (see franzMember.commit).
type franzLog struct {
	log   *slog.Logger
	level kgo.LogLevel
	onEnd func(commit bool)
}

// WireLevel is the slog level of the clients' wire-level lines (franz-go's debug lines), below
// slog's debug: verity run --debug shows them.
const WireLevel = slog.LevelDebug - 4

func newFranzLog(log *slog.Logger, onEnd func(commit bool)) *franzLog {
	ctx := context.Background()
	level := kgo.LogLevelWarn
	switch {
	case log.Enabled(ctx, WireLevel):
		level = kgo.LogLevelDebug
	case onEnd != nil || log.Enabled(ctx, slog.LevelDebug):
		level = kgo.LogLevelInfo
	}
	return &franzLog{log: log.With("client", "franz-go"), level: level, onEnd: onEnd}
}

func (l *franzLog) Level() kgo.LogLevel { return l.level }

func (l *franzLog) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	// EndTransaction logs this, with the commit flag, right before it sends EndTxn.
	if l.onEnd != nil && msg == "ending transaction" {
		for i := 0; i+1 < len(keyvals); i += 2 {
			if c, ok := keyvals[i+1].(kgo.TransactionEndTry); ok && keyvals[i] == "commit" {
				l.onEnd(bool(c))
			}
		}
	}
	sl := WireLevel
	switch level {
	case kgo.LogLevelError, kgo.LogLevelWarn:
		sl = slog.LevelWarn
	case kgo.LogLevelInfo:
		sl = slog.LevelDebug
	}
	l.log.Log(context.Background(), sl, msg, keyvals...)
}
