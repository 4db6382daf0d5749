package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// scriptedConsumer is a kclient.Consumer that returns scripted polls and remembers what it was
// told.
type scriptedConsumer struct {
	polls    [][]kclient.Event
	recorded [][]int64 // the offsets of each non-empty Recorded call
	sought   []map[string]map[int32]int64
	closed   bool
	// drained, when set, is called by the first poll that finds the script done.
	drained func()
}

func (s *scriptedConsumer) Poll(ctx context.Context, wait time.Duration, max int) []kclient.Event {
	if len(s.polls) == 0 {
		if s.drained != nil {
			s.drained()
			s.drained = nil
		}
		_ = kit.Sleep(ctx, wait) // a poll that finds nothing waits its time out
		return nil
	}
	p := s.polls[0]
	s.polls = s.polls[1:]
	return p
}

func (s *scriptedConsumer) Recorded(recs []kclient.Event) {
	if len(recs) == 0 {
		return
	}
	var offs []int64
	for _, ev := range recs {
		offs = append(offs, *ev.Record.Offset)
	}
	s.recorded = append(s.recorded, offs)
}

func (s *scriptedConsumer) Seek(_ context.Context, at map[string]map[int32]int64) error {
	s.sought = append(s.sought, at)
	return nil
}

func (s *scriptedConsumer) Close() { s.closed = true }

// funcOpener is a client whose topics have parts and whose consumers come from open.
type funcOpener struct {
	parts map[string][]int32
	open  func(kclient.ConsumerSpec) kclient.Consumer
}

func (o funcOpener) Partitions(_ context.Context, _ string, topics []string) (map[string][]int32, error) {
	out := map[string][]int32{}
	for _, t := range topics {
		out[t] = o.parts[t]
	}
	return out, nil
}

func (o funcOpener) OpenConsumer(_ context.Context, s kclient.ConsumerSpec) (kclient.Consumer, error) {
	return o.open(s), nil
}

func scriptedOpener(s *scriptedConsumer, parts map[string][]int32) funcOpener {
	return funcOpener{parts: parts, open: func(kclient.ConsumerSpec) kclient.Consumer { return s }}
}

func recEvent(topic string, partition int32, offset int64, value string) kclient.Event {
	return kclient.Event{Kind: kclient.EventRecord, Record: history.Record{Topic: topic, Partition: partition, Value: value}.At(offset), Epoch: 3}
}

// writeSends records process 0's acknowledged sends of values 0-1..0-n at offsets 0..n-1 of t-0.
func writeSends(t *testing.T, w *history.Writer, n int) []history.Record {
	t.Helper()
	var recs []history.Record
	for i := range n {
		r := history.Record{Topic: "t", Partition: 0, Value: fmt.Sprintf("0-%d", i+1)}
		inv, err := w.Invoke(history.Client(0), history.FSend, history.Payload{Send: &r})
		require.NoError(t, err)
		done := r.At(int64(i))
		_, err = w.Complete(inv, history.OK, history.Payload{Send: &done}, "")
		require.NoError(t, err)
		recs = append(recs, done)
	}
	return recs
}

func writeFinalRead(t *testing.T, w *history.Writer, p int, recs []history.Record) {
	t.Helper()
	fr := &history.FinalRead{Topic: "t", Partition: 0, Isolation: history.ReadUncommitted, From: 0, End: int64(len(recs)), Records: recs}
	inv, err := w.Invoke(history.Client(p), history.FFinalRead, history.Payload{FinalRead: fr})
	require.NoError(t, err)
	_, err = w.Complete(inv, history.OK, history.Payload{FinalRead: fr}, "")
	require.NoError(t, err)
}

func pollFindings(t *testing.T, res *results.Results) (nonmonotonic, skips int) {
	t.Helper()
	return res.Anomalies[guarantee.NonmonotonicPoll].Count, res.Anomalies[guarantee.PollSkip].Count
}

// TestConsumerRecordsDataLoss: a client that reports a truncation under the position and then
// reads from the reset offset gets a data-loss op between the polls, with the reported offsets;
// the assign-mode position a restart resumes from is the reset one; and the checker, which
// would call the move back a nonmonotonic-poll without the op, finds nothing.
func TestConsumerRecordsDataLoss(t *testing.T) {
	for _, withOp := range []bool{true, false} {
		t.Run(fmt.Sprintf("data-loss op %v", withOp), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.jsonl")
			w, err := history.Create(path, history.Header{Seed: 1})
			require.NoError(t, err)
			sent := writeSends(t, w, 5)
			first := make([]kclient.Event, 0, 5)
			for _, r := range sent {
				first = append(first, recEvent("t", 0, *r.Offset, r.Value))
			}
			// The client could not locate the divergence and reset to the oldest offset: it
			// reads 0..4 again after the notice, in the same poll as the last records before.
			second := []kclient.Event{recEvent("t", 0, 4, "0-5")}
			if withOp {
				second = append(second, kclient.Event{Kind: kclient.EventDataLoss, Loss: kclient.Loss{Topic: "t", Partition: 0,
					Offset: 5, Epoch: 3, ResetTo: 0, ResetEpoch: 4}})
			}
			second = append(second, first[:4]...)
			s := &scriptedConsumer{polls: [][]kclient.Event{first[:4], second}}
			env, err := Env{Brokers: []string{"unused:9092"}, Recorder: w, Seed: 1}.withDefaults()
			require.NoError(t, err)
			cfg, err := ConsumerConfig{Topics: []string{"t"}, Mode: Assign, MaxPolls: 3}.resolved(1)
			require.NoError(t, err)
			st, err := runConsumer(t.Context(), env, 1, cfg, scriptedOpener(s, map[string][]int32{"t": {0}}))
			require.NoError(t, err)
			writeFinalRead(t, w, 2, sent)
			require.NoError(t, w.Close())
			require.True(t, s.closed)
			require.Equal(t, int64(3), st.Polls)
			require.Equal(t, int64(9), st.Records)

			v := readBack(t, path)
			var fs []string
			var loss map[string]any
			for _, o := range v.ops {
				if o.Process.ID != 1 || o.Type != history.OK {
					continue
				}
				switch o.F {
				case history.FPoll:
					fs = append(fs, fmt.Sprintf("poll%d", len(o.Value.Poll.Records)))
				case history.FDataLoss:
					require.NoError(t, json.Unmarshal(o.Value.Raw, &loss))
					fs = append(fs, o.F)
				default:
					fs = append(fs, o.F)
				}
			}
			// Every record the client handed over is recorded before it is told, and each
			// Recorded call is exactly one poll's records.
			if withOp {
				require.Equal(t, []string{"assign", "poll4", "poll1", "data-loss", "poll4"}, fs)
				require.Equal(t, map[string]any{"topic": "t", "partition": 0.0, "offset": 5.0, "epoch": 3.0,
					"reset_to": 0.0, "reset_epoch": 4.0}, loss)
				require.Equal(t, [][]int64{{0, 1, 2, 3}, {4}, {0, 1, 2, 3}}, s.recorded)
				require.Equal(t, int64(1), st.DataLosses)
			} else {
				require.Equal(t, []string{"assign", "poll4", "poll5", "poll0"}, fs)
			}

			res, err := verify.CheckFile(t.Context(), path, verify.Options{})
			require.NoError(t, err)
			nonmono, skips := pollFindings(t, res)
			require.Zero(t, skips)
			if withOp {
				require.Zero(t, nonmono, "the data-loss op starts the consumer's positions afresh")
			} else {
				require.Positive(t, nonmono, "control: without the op, moving back is a nonmonotonic-poll")
			}
		})
	}
}

// TestConsumerRemembersResetPosition: in assign mode a new instance resumes where the client said
// it reset to after a truncation, with that epoch, not where the records before it ended.
func TestConsumerRemembersResetPosition(t *testing.T) {
	w, err := history.Create(filepath.Join(t.TempDir(), "history.jsonl"), history.Header{Seed: 1})
	require.NoError(t, err)
	defer w.Close()
	polls := [][]kclient.Event{
		{recEvent("t", 0, 7, "0-8"), recEvent("t", 1, 2, "0-9")},
		{{Kind: kclient.EventDataLoss, Loss: kclient.Loss{Topic: "t", Partition: 0, Offset: 8, Epoch: 3, ResetTo: 5, ResetEpoch: 4}}},
		nil,
	}
	var starts []map[string]map[int32]kclient.Position
	open := funcOpener{parts: map[string][]int32{"t": {0, 1}}, open: func(s kclient.ConsumerSpec) kclient.Consumer {
		from := map[string]map[int32]kclient.Position{}
		for t, ps := range s.Assign {
			from[t] = maps.Clone(ps)
		}
		starts = append(starts, from)
		return &scriptedConsumer{polls: [][]kclient.Event{polls[len(starts)-1]}}
	}}
	env, err := Env{Brokers: []string{"unused:9092"}, Recorder: w, Seed: 1}.withDefaults()
	require.NoError(t, err)
	cfg, err := ConsumerConfig{Topics: []string{"t"}, Mode: Assign}.resolved(1)
	require.NoError(t, err)
	run := &consumerRun{env: env, cfg: cfg, p: 1, proc: history.Client(1), log: env.Log, cl: open,
		next: map[string]map[int32]kclient.Position{}}
	// Three instances of one poll each, as restarts would run them.
	for i := range polls {
		run.cfg.MaxPolls = i + 1
		require.NoError(t, run.instance(t.Context(), time.Time{}))
	}
	require.Len(t, starts, 3)
	require.Equal(t, map[string]map[int32]kclient.Position{"t": {0: {Offset: -1, Epoch: -1}, 1: {Offset: -1, Epoch: -1}}}, starts[0], "the first instance starts each partition at the start")
	require.Equal(t, map[string]map[int32]kclient.Position{"t": {0: {Offset: 8, Epoch: 3}, 1: {Offset: 3, Epoch: 3}}}, starts[1])
	require.Equal(t, map[string]map[int32]kclient.Position{"t": {0: {Offset: 5, Epoch: 4}, 1: {Offset: 3, Epoch: 3}}}, starts[2])
}

// TestConsumerRebalanceBetweenPolls: a rebalance the client reports ahead of a poll's records is
// recorded as an assign op with the claims before them; the records before it are recorded (and
// told to the client) before it.
func TestConsumerRebalanceBetweenPolls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := history.Create(path, history.Header{Seed: 1})
	require.NoError(t, err)
	s := &scriptedConsumer{polls: [][]kclient.Event{
		{recEvent("t", 0, 0, "0-1"), recEvent("t", 0, 1, "0-2")},
		{{Kind: kclient.EventAssigned, Claims: kclient.Claims{Generation: 7, Member: "m-1", Partitions: map[string][]int32{"t": {2, 0}}}},
			recEvent("t", 0, 0, "0-1")},
	}}
	env, err := Env{Brokers: []string{"unused:9092"}, Recorder: w, Seed: 1}.withDefaults()
	require.NoError(t, err)
	cfg, err := ConsumerConfig{Topics: []string{"t"}, Group: "g", Isolation: kafkaconf.ReadCommitted, MaxPolls: 3}.resolved(1)
	require.NoError(t, err)
	st, err := runConsumer(t.Context(), env, 1, cfg, scriptedOpener(s, nil))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Equal(t, int64(1), st.Rebalances)
	require.Equal(t, [][]int64{{0, 1}, {0}}, s.recorded)

	v := readBack(t, path)
	var seq []string
	for _, o := range v.ops {
		if o.Type != history.OK {
			continue
		}
		switch o.F {
		case history.FPoll:
			require.Equal(t, "g", o.Value.Poll.Group)
			require.Equal(t, history.ReadCommitted, o.Value.Poll.Isolation)
			seq = append(seq, fmt.Sprintf("poll%d", len(o.Value.Poll.Records)))
		case history.FAssign:
			var a map[string]any
			require.NoError(t, json.Unmarshal(o.Value.Raw, &a))
			require.Equal(t, map[string]any{"group": "g", "generation": 7.0, "member": "m-1",
				"partitions": map[string]any{"t": []any{0.0, 2.0}}, "topics": []any{"t"},
				"isolation": "read_committed", "rebalance": true}, a)
			seq = append(seq, "rebalance")
		default:
			seq = append(seq, o.F)
		}
	}
	require.Equal(t, []string{"subscribe", "poll2", "poll0", "rebalance", "poll1"}, seq)
}

// An empty assignment names no topics, as [] (not null).
func TestClaimsPayloadOfNothing(t *testing.T) {
	require.Equal(t, []string{}, claimsPayload(kclient.Claims{Partitions: map[string][]int32{}}, "g", "read_committed")["topics"])
}
