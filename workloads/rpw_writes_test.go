package workloads

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// scriptedMember is a kclient.Member that returns scripted polls (a nil one, or one past the
// script, waits its time out) and remembers what the role asked of it.
type scriptedMember struct {
	spec    kclient.MemberSpec
	polls   [][]kclient.Event
	calls   []string
	offsets [][]history.Record // each AddOffsets call's records
	next    int64              // the next offset a sent record gets
}

func (m *scriptedMember) Poll(ctx context.Context, _ int, until time.Time) ([]kclient.Event, error) {
	var p []kclient.Event
	if len(m.polls) > 0 {
		p, m.polls = m.polls[0], m.polls[1:]
	}
	if p == nil { // nothing to return: the poll waits its time out
		d := time.Until(until)
		if until.IsZero() {
			d = 10 * time.Millisecond
		}
		_ = kit.Sleep(ctx, d)
	}
	return p, nil
}

func (m *scriptedMember) Begin() error { m.calls = append(m.calls, "begin"); return nil }

func (m *scriptedMember) Send(recs []history.Record, _ time.Time) error {
	m.calls = append(m.calls, "send")
	for i := range recs {
		recs[i] = recs[i].At(100 + m.next)
		m.next++
	}
	return nil
}

func (m *scriptedMember) AddOffsets(in []history.Record) error {
	m.calls = append(m.calls, "add-offsets")
	m.offsets = append(m.offsets, in)
	return nil
}

func (m *scriptedMember) Commit() (history.Type, string) {
	m.calls = append(m.calls, "commit")
	return history.OK, ""
}

func (m *scriptedMember) Abort() error          { m.calls = append(m.calls, "abort"); return nil }
func (m *scriptedMember) Ready() (bool, string) { return true, "" }
func (m *scriptedMember) Close()                {}

func (m *scriptedMember) Rewind(history.Type) error {
	m.calls = append(m.calls, "rewind")
	return nil
}

// memberClient is a client whose one member is m; the role asks it nothing else but partitions.
type memberClient struct {
	kclient.Client
	m *scriptedMember
}

func (c memberClient) Name() kafkaconf.ClientName { return kafkaconf.FranzGo }
func (c memberClient) Partitions(_ context.Context, _ string, topics []string) (map[string][]int32, error) {
	out := map[string][]int32{}
	for _, t := range topics {
		out[t] = []int32{0, 1, 2}
	}
	return out, nil
}
func (c memberClient) OpenMember(_ context.Context, s kclient.MemberSpec) (kclient.Member, error) {
	c.m.spec = s
	return c.m, nil
}

// A processor with writes: each transaction sends its new records, polls once more inside it,
// puts both polls' offsets into it (none when it read nothing) and is recorded as a txn op whose
// completion holds everything it read, at its member's isolation, and when its end was asked
// for; a rebalance inside a transaction aborts it and rewinds.
func TestProcessorWritesReadsInsideItsTransactions(t *testing.T) {
	r1 := history.Record{Topic: "t", Partition: 0, Value: "7-1"}.At(3)
	r2 := history.Record{Topic: "t", Partition: 1, Value: "8-1"}.At(5)
	m := &scriptedMember{polls: [][]kclient.Event{
		{{Kind: kclient.EventRecord, Record: r1}}, // the first transaction's batch
		{{Kind: kclient.EventRecord, Record: r2}}, // its poll inside
		nil, // the second: nothing read before, nothing inside
		nil,
		{{Kind: kclient.EventAssigned, Claims: kclient.Claims{Generation: 2, Partitions: map[string][]int32{"t": {0}}}}}, // the third's inside poll
	}}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := history.Create(path, history.Header{Seed: 1})
	require.NoError(t, err)
	env := Env{Brokers: []string{"unused:9092"}, Recorder: w, Seed: 1, Client: kafkaconf.FranzGo, Program: memberClient{m: m}, Log: slog.New(slog.DiscardHandler)}
	cfg := ProcessorConfig{Input: "t", Output: "t", Writes: 2, BatchRecords: 1, BatchWait: 20 * time.Millisecond, MaxSteps: 3,
		Isolation: kafkaconf.ReadUncommitted}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	st, err := RunProcessor(ctx, env, 4, cfg)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Equal(t, int64(2), st.Committed)
	require.Equal(t, int64(1), st.Failed)
	require.Equal(t, kafkaconf.ReadUncommitted, m.spec.ReadIsolation(), "the member reads at the processor's isolation")
	require.Equal(t, [][]history.Record{{r1, r2}}, m.offsets, "both polls' offsets, and none for a transaction that read nothing")
	require.Equal(t, []string{"begin", "send", "add-offsets", "commit", "begin", "send", "commit", "begin", "send", "abort", "rewind"}, m.calls)

	ops := readOpsFile(t, path)
	// The process's ops follow one another: the assignment the third transaction's poll met is
	// recorded after that transaction's completion, not inside it.
	open := false
	var fs []string
	for _, op := range ops {
		require.Equal(t, open, op.Type != history.Invoke, "op %d (%s %s) of a process whose op is open: %v", op.Index, op.Type, op.F, open)
		open = op.Type == history.Invoke
		if op.Type == history.Invoke {
			fs = append(fs, op.F)
		}
	}
	require.Equal(t, []string{history.FTxn, history.FTxn, history.FTxn, history.FAssign}, fs)
	var txns []history.Op
	for _, op := range ops {
		if op.F == history.FTxn && op.Type != history.Invoke {
			txns = append(txns, op)
		}
		if op.F == history.FTxn && op.Type == history.Invoke {
			require.Nil(t, op.Value.Txn.Reads, "an invoke says nothing of reads: they come inside the transaction")
		}
	}
	require.Len(t, txns, 3)
	first := txns[0].Value.Txn
	require.Equal(t, history.OK, txns[0].Type)
	require.Equal(t, []history.Record{r1, r2}, first.Reads)
	require.Equal(t, history.ReadUncommitted, first.Isolation)
	require.Len(t, first.Records, 2)
	require.NotZero(t, first.EndT, "a committed transaction says when its commit was asked for")
	require.LessOrEqual(t, first.EndT, txns[0].Time)
	require.Empty(t, txns[1].Value.Txn.Reads)
	require.Equal(t, history.Fail, txns[2].Type)
	require.Contains(t, txns[2].Error, "rebalanced inside the transaction")
}

func readOpsFile(t *testing.T, path string) []history.Op {
	t.Helper()
	r, err := history.Open(path)
	require.NoError(t, err)
	defer r.Close()
	var ops []history.Op
	var op history.Op
	for r.Next(&op) == nil {
		ops = append(ops, op.Clone())
	}
	return ops
}
