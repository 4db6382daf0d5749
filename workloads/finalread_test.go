package workloads

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

// logWithTransactions is partition t-0 as a broker returns it: a plain record, an aborted
// transaction (two records, then its abort marker), a committed one (a record, its commit marker),
// another plain record. HW = LSO = 7.
func logWithTransactions() *sarama.FetchResponse {
	r := &sarama.FetchResponse{Version: 12}
	r.AddRecordBatch("t", 0, nil, sarama.StringEncoder("1-1"), 0, -1, false)
	r.AddRecordBatch("t", 0, nil, sarama.StringEncoder("2-1"), 1, 7, true)
	r.AddRecordBatch("t", 0, nil, sarama.StringEncoder("2-2"), 2, 7, true)
	r.AddControlRecord("t", 0, 3, 7, sarama.ControlRecordAbort)
	r.AddRecordBatch("t", 0, sarama.StringEncoder("k"), sarama.StringEncoder("2-3"), 4, 8, true)
	r.AddControlRecord("t", 0, 5, 8, sarama.ControlRecordCommit)
	r.AddRecordBatch("t", 0, nil, sarama.StringEncoder("1-2"), 6, -1, false)
	blk := r.GetBlock("t", 0)
	blk.HighWaterMarkOffset, blk.LastStableOffset, blk.LogStartOffset = 7, 7, 0
	blk.AbortedTransactions = []*sarama.AbortedTransaction{{ProducerID: 7, FirstOffset: 1}}
	return r
}

// mockCluster is one broker leading partition t-0, whose fetches fetch answers.
func mockCluster(t *testing.T, fetch sarama.MockResponse) *sarama.MockBroker {
	b := sarama.NewMockBroker(t, 1)
	t.Cleanup(b.Close)
	b.SetHandlerByMap(map[string]sarama.MockResponse{
		"ApiVersionsRequest": sarama.NewMockApiVersionsResponse(t).SetApiKeys([]sarama.ApiVersionsResponseKey{
			{ApiKey: 1, MinVersion: 0, MaxVersion: 12}, // Fetch
			{ApiKey: 2, MinVersion: 0, MaxVersion: 6},  // ListOffsets
			{ApiKey: 3, MinVersion: 0, MaxVersion: 12}, // Metadata
		}),
		"MetadataRequest": sarama.NewMockMetadataResponse(t).SetBroker(b.Addr(), 1).SetLeader("t", 0, 1),
		"OffsetRequest": sarama.NewMockOffsetResponse(t).SetOffset("t", 0, sarama.OffsetOldest, 0).
			SetOffset("t", 0, sarama.OffsetNewest, 7),
		"FetchRequest": fetch,
	})
	return b
}

func finalReads(t *testing.T, buf *bytes.Buffer) map[string][]history.FinalRead {
	out := map[string][]history.FinalRead{}
	for _, o := range readOps(t, buf) {
		if o.Type == history.Invoke {
			continue
		}
		require.Equal(t, history.FFinalRead, o.F)
		fr := *o.Value.FinalRead
		if !fr.Incomplete {
			require.Equal(t, history.OK, o.Type)
		}
		out[fr.Isolation] = append(out[fr.Isolation], fr)
	}
	return out
}

func values(chunks []history.FinalRead) map[int64]string {
	got := map[int64]string{}
	for _, ch := range chunks {
		for _, r := range ch.Records {
			got[*r.Offset] = r.Value
		}
	}
	return got
}

func TestFinalReadShowsWhatEachIsolationLevelShows(t *testing.T) {
	b := mockCluster(t, sarama.NewMockWrapper(logWithTransactions()))
	for _, chunk := range []int{2000, 2, 1} {
		var buf bytes.Buffer
		w, err := history.NewWriter(&buf, history.Header{Seed: 1})
		require.NoError(t, err)
		env := Env{Brokers: []string{b.Addr()}, Recorder: w, Sarama: harness.SaramaConfig}
		st, err := FinalRead(context.Background(), env, 9, FinalReadConfig{Topics: []string{"t"}, ChunkRecords: chunk, Workers: 1,
			Deadline: 20 * time.Second})
		require.NoError(t, err)
		require.True(t, st.AllComplete())
		require.Equal(t, 2, st.Scans)
		frs := finalReads(t, &buf)
		require.Equal(t, map[int64]string{0: "1-1", 1: "2-1", 2: "2-2", 4: "2-3", 6: "1-2"}, values(frs[history.ReadUncommitted]),
			"read_uncommitted shows the aborted transaction's records too")
		require.Equal(t, map[int64]string{0: "1-1", 4: "2-3", 6: "1-2"}, values(frs[history.ReadCommitted]),
			"read_committed hides the aborted transaction")
		for iso, chunks := range frs {
			require.Equal(t, int64(0), chunks[0].From, iso)
			require.Equal(t, int64(7), chunks[len(chunks)-1].End, "%s: the scan reaches the end", iso)
			for i, ch := range chunks {
				require.LessOrEqual(t, len(ch.Records), chunk)
				if i > 0 {
					require.Equal(t, chunks[i-1].End, ch.From, "%s: consecutive ranges", iso)
				}
			}
		}
		if chunk == 1 {
			require.Len(t, frs[history.ReadCommitted], 3, "one record per op")
		}
	}
}

func TestFinalReadRecordsAnIncompleteScan(t *testing.T) {
	refuse := &sarama.FetchResponse{Version: 12}
	refuse.AddError("t", 0, sarama.ErrNotLeaderForPartition)
	b := mockCluster(t, sarama.NewMockWrapper(refuse))
	var buf bytes.Buffer
	w, err := history.NewWriter(&buf, history.Header{Seed: 1})
	require.NoError(t, err)
	env := Env{Brokers: []string{b.Addr()}, Recorder: w, Sarama: harness.SaramaConfig}
	st, err := FinalRead(context.Background(), env, 9, FinalReadConfig{Topics: []string{"t"}, Isolations: []kafkaconf.Isolation{kafkaconf.ReadUncommitted},
		Deadline: 2 * time.Second})
	require.NoError(t, err, "an unfinished scan is recorded, not an error")
	require.False(t, st.AllComplete())
	require.Equal(t, 1, st.Incomplete)
	ops := readOps(t, &buf)
	require.Len(t, ops, 2)
	require.Equal(t, history.Info, ops[1].Type)
	require.True(t, ops[1].Value.FinalRead.Incomplete)
	require.Contains(t, ops[1].Error, "NOT_LEADER_OR_FOLLOWER")
}
