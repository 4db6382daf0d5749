package workloads

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify/results"
)

// TestAppendStream: a driver's ops, sync and async completions out of order among them, land in
// the runner's history between the runner's own ops with every async completion naming its
// invoke by the runner's numbers.
func TestAppendStream(t *testing.T) {
	var stream bytes.Buffer
	dw, err := history.NewWriter(&stream, history.Header{Seed: 7})
	require.NoError(t, err)
	send := func(v string) history.Payload { return history.Payload{Send: &history.Record{Topic: "t", Value: v}} }
	a1, err := dw.Invoke(history.Client(1), history.FSend, send("a1"))
	require.NoError(t, err)
	s2, err := dw.Invoke(history.Client(2), history.FSend, send("s2"))
	require.NoError(t, err)
	a2, err := dw.Invoke(history.Client(1), history.FSend, send("a2"))
	require.NoError(t, err)
	_, err = dw.CompleteAsync(a2, history.OK, send("a2"), "")
	require.NoError(t, err)
	_, err = dw.Complete(s2, history.Info, send("s2"), "timed out")
	require.NoError(t, err)
	_, err = dw.CompleteAsync(a1, history.Fail, send("a1"), "refused")
	require.NoError(t, err)
	require.NoError(t, dw.Close())

	var out bytes.Buffer
	w, err := history.NewWriter(&out, history.Header{Seed: 7})
	require.NoError(t, err)
	_, err = w.Invoke(history.NemesisP(), history.FStart, history.Payload{}) // the runner's own op first
	require.NoError(t, err)
	var shown []int64 // what Spec.Until would be shown: each op as the runner's history numbers it
	require.NoError(t, appendStream(&stream, w, func(op history.Op) { shown = append(shown, op.Index) }))
	require.NoError(t, w.Close())
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, shown, "every streamed op, renumbered after the runner's own")

	r, err := history.NewReader(&out)
	require.NoError(t, err)
	values := map[int64]string{}
	var op history.Op
	var ops int
	for r.Next(&op) == nil {
		ops++
		if op.Value.Send == nil {
			continue
		}
		if op.Type == history.Invoke {
			values[op.Index] = op.Value.Send.Value
			continue
		}
		if op.Of != nil {
			require.Equal(t, values[*op.Of], op.Value.Send.Value, "op %d completes invoke %d", op.Index, *op.Of)
		}
	}
	require.Equal(t, 7, ops)
	require.Len(t, values, 3)

	var bad bytes.Buffer
	_, err = history.NewWriter(&bad, history.Header{Seed: 7})
	require.NoError(t, err)
	bad.WriteString(`{"i":10,"t":1,"p":1,"type":"ok","f":"send","of":9,"value":{"topic":"t","partition":0,"offset":0,"value":"x"}}` + "\n")
	w2, err := history.NewWriter(&bytes.Buffer{}, history.Header{})
	require.NoError(t, err)
	require.ErrorContains(t, appendStream(&bad, w2, nil), "completes op 9, which is no open invoke")
}

// TestDriverJobJSON: every field of a spec the driver needs survives the job's encoding.
func TestDriverJobJSON(t *testing.T) {
	spec := Spec{Name: "s", Seed: 3, Client: kafkaconf.FranzGo, ClientVersion: "v1.21.5", TxnProtocol: kafkaconf.TxnProtocolV1,
		Duration: 90 * time.Second, Topics: []harness.TopicSpec{{Name: "t", Partitions: 3, RF: 3, MinISR: 2, Unclean: new(false)}},
		Producers: []ProducerSpec{{Instances: 2, ProducerConfig: ProducerConfig{Topics: []string{"t"}, Async: true, Window: 5,
			Rate: 100, DeliveryTimeout: 6 * time.Second, Delivery: kafkaconf.Delivery{Acks: new(kafkaconf.AcksAll)}}}},
		Transactional: []TxnConfig{{TxnClientConfig: TxnClientConfig{Timeout: 20 * time.Second, Retries: 4}, TxnID: "x", Topics: []string{"t"}, AbortProbability: 0.2}},
		Processors:    []ProcessorConfig{{Input: "t", Output: "u", Group: "g"}},
		Consumers:     []ConsumerConfig{{Topics: []string{"t"}, Group: "c", Isolation: kafkaconf.ReadCommitted}},
	}
	job := driverJob{Spec: spec, Brokers: []string{"b:1"}, KafkaVersion: "4.3.1", LogLevel: slog.LevelDebug}
	b, err := json.Marshal(job)
	require.NoError(t, err)
	var back driverJob
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, job, back)
}

// TestParseDriverVersion: a driver is built only for a module version.
func TestDriverRefusesBadVersions(t *testing.T) {
	c, _ := kafkaconf.LookupClient(kafkaconf.Sarama)
	for _, v := range []string{"1.61.0", "v1.61", "latest", "v1.61.0;rm"} {
		_, err := BuildDriver(t.Context(), c, v, slog.New(slog.DiscardHandler))
		require.ErrorContains(t, err, "want a module version such as v1.61.0", v)
	}
}

// testDriven runs sarama at another version than the linked one: the workloads run in a driver
// built for it, their ops stream into the run's history beside the runner's own (the final read
// here), the header names the version, and the run is judged as any other.
func testDriven(t *testing.T, c *harness.Cluster, log *slog.Logger) {
	ctx := withTimeout(t, 8*time.Minute)
	const version = "v1.61.0"
	sc, _ := kafkaconf.LookupClient(kafkaconf.Sarama)
	require.NotEqual(t, version, sc.Version(), "the test needs a version other than the linked one")
	// The driver runs until each workload has done what the checks below count on, seen in the
	// ops it streams; 4 minutes is a deadline a loaded machine cannot miss.
	need := map[string]int{"send ok p0": 1, "send ok p1": 1, "txn ok": 1, "poll records": 1}
	spec := Spec{Name: "driven", Seed: 20261202, Client: kafkaconf.Sarama, ClientVersion: version, Duration: 4 * time.Minute,
		Until: countedUntil(0, need, func(op history.Op, add func(string, int)) {
			switch {
			case op.F == history.FSend && op.Type == history.OK:
				add(fmt.Sprintf("send ok p%v", op.Process), 1)
			case op.F == history.FTxn && op.Type == history.OK:
				add("txn ok", 1)
			case op.F == history.FPoll && op.Type == history.OK && op.Value.Poll != nil:
				add("poll records", len(op.Value.Poll.Records))
			}
		}),
		Topics: []harness.TopicSpec{topic("dv-data", 3), topic("dv-txn", 2), topic("dv-txn-b", 2)},
		Producers: []ProducerSpec{
			{ProducerConfig: ProducerConfig{Topics: []string{"dv-data"}, Rate: 50}},
			{ProducerConfig: ProducerConfig{Topics: []string{"dv-data"}, Async: true, Window: 20, Rate: 200}},
		},
		Transactional: []TxnConfig{{Topics: []string{"dv-txn", "dv-txn-b"}, TxnID: "dv-txn", AbortProbability: 0.3}},
		Consumers:     []ConsumerConfig{{Topics: []string{"dv-data"}, Mode: Assign, Isolation: kafkaconf.ReadCommitted}},
		Log:           log,
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	res, err := Run(ctx, c, path, spec)
	require.NoError(t, err)
	require.True(t, res.FinalRead.AllComplete(), "final read: %+v", res.FinalRead)
	require.Len(t, res.Producers, 2, "the driver's stats come back")
	for _, s := range res.Producers {
		require.Positive(t, s.OK, "producer %d acknowledged nothing", s.Process)
	}
	require.Len(t, res.Transactional, 1)
	require.Positive(t, res.Transactional[0].Committed)
	require.Len(t, res.Consumers, 1)
	require.Positive(t, res.Consumers[0].Records)

	h := readHeader(t, path)
	require.Equal(t, version, h.Config.Client.Version, "the header names the driven version")
	v := readBack(t, path)
	require.Positive(t, v.counts[history.FSend+"/"+string(history.OK)], "the driver's sends are in the history")
	require.Positive(t, v.counts[history.FTxn+"/"+string(history.OK)], "the driver's transactions are in the history")
	require.Positive(t, v.counts[history.FPoll+"/"+string(history.OK)], "the driver's polls are in the history")
	out := fpVerify(t, ctx, path)
	require.Equal(t, results.Pass, out.Verdict)
}
