package runner_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/runner"
	"github.com/verity-kafka/verity/runner/runtest"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
	"github.com/verity-kafka/verity/verify/results/schematest"
)

func TestMain(m *testing.M) { os.Exit(harnesstest.Main(m)) }

// TestRunDefault runs the default scenario (shortened) end to end on a real cluster: the leader
// of p0 is killed, and acks=all, min ISR 2, idempotence must lose nothing.
func TestRunDefault(t *testing.T) {
	s := scenarios.Default()
	s.Duration = scenarios.Duration(30 * time.Second)
	s.Faults.Timeline[0].At, s.Faults.Timeline[0].For = scenarios.Duration(10*time.Second), scenarios.Duration(10*time.Second)
	dir := t.TempDir()
	o := runtest.Run(t, s, runtest.Options{Out: dir})
	if o.Verdict() != results.Pass {
		t.Fatalf("verdict %s", o.Verdict())
	}
	for _, f := range []string{"history.jsonl", "results.json", "report.html", "junit.xml", "scenario.yaml", "logs/node-1.log", "logs/proxy-client.log"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("artifact %s: %v", f, err)
		}
	}
	// scenario.yaml is the scenario as it ran: it loads back to the same settings.
	again, err := scenarios.Load(filepath.Join(dir, "scenario.yaml"))
	if err != nil || again.Seed != s.Seed || again.Duration != s.Duration || again.Faults.Timeline[0].At != s.Faults.Timeline[0].At {
		t.Errorf("scenario.yaml: %v; loaded %+v", err, again)
	}
	var r results.Results
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("results.json: %v", err)
	}
	if r.Seed != s.Seed || r.Scenario != "default" || !strings.Contains(strings.Join(r.Faults, ","), "kill") {
		t.Errorf("results: seed %d scenario %q faults %v: want the run's seed, name and the kill", r.Seed, r.Scenario, r.Faults)
	}
	// results.json and the header are contracts: what the run wrote matches their schemas, and
	// says what ran.
	schematest.Valid(t, schematest.Results, b)
	hist, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	schematest.Valid(t, schematest.HistoryHeader, hist[:bytes.IndexByte(hist, '\n')])
	if r.Run == nil || r.Run.ID == "" || r.Run.KafkaImage == "" || !strings.HasPrefix(r.Run.KafkaImageID, "sha256:") ||
		r.Run.Host.Cores < 1 || r.Run.Host.MemoryBytes <= 0 || r.Run.Started == "" {
		t.Errorf("results.json's run %+v: want the run id, the images with their ids, the host", r.Run)
	}
	// The broker metrics were sampled on every node through the run. (Whether the kill's
	// under-replicated stretch is long enough to judge depends on when the controller fences
	// the node; the check is tested on fixed data in package metrics and verify.)
	if bm := r.BrokerMetrics; bm == nil || bm.Samples < 3*25 || len(bm.Alerts.Findings) != 0 {
		t.Errorf("broker metrics %+v: want samples of 3 nodes over the run, and no alert found silent", bm)
	}
	if st, err := os.Stat(filepath.Join(dir, "metrics.jsonl")); err != nil || st.Size() == 0 {
		t.Errorf("metrics.jsonl: %v", err)
	}
	if r.Stats.Ops["send"].OK == 0 || len(r.Stats.Partitions) != 3 {
		t.Errorf("stats %+v: want acknowledged sends and final reads of 3 partitions", r.Stats)
	}
	// Liveness: every client of the run (3 producers, 1 consumer) has a recovery from the kill,
	// and each progressed again before the workload ended.
	if l := r.Liveness; l == nil || len(l.Faults) == 0 {
		t.Errorf("liveness %+v: want the kill's recovery", l)
	} else {
		kinds := map[results.ClientKind]int{}
		for _, c := range l.Faults[0].Clients {
			kinds[c.Kind]++
			if !c.Recovered {
				t.Errorf("%s did not progress again after the kill before the workload ended: %+v", c.Client, c.Recovery)
			}
		}
		if kinds[results.KindProducer] != 3 || kinds[results.KindConsumer] != 1 {
			t.Errorf("the kill's recovery names clients %v: want 3 producers and 1 consumer (%+v)", kinds, l.Faults[0].Clients)
		}
		if l.Verdict != results.LivenessNotStated || r.Outcome() != results.OutcomePass {
			t.Errorf("no bound stated: liveness %s, outcome %s", l.Verdict, r.Outcome())
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !strings.Contains(string(page), "kill [") || strings.Count(string(page), "<img") < 3 {
		t.Error("report.html lacks the kill in its fault table or its plots")
	}
	if !strings.Contains(string(page), `id="recovery"`) || !strings.Contains(string(page), `id="plot-progress"`) {
		t.Error("report.html lacks the liveness section's recovery table or progress plot")
	}
	// The run judges by the settings it used and says nothing it did not: RF 3 and min ISR 2
	// in every reason, nothing assumed, in results.json, junit.xml and the report alike.
	if len(r.Assumed) != 0 {
		t.Errorf("assumed %q: the run's header states every setting", r.Assumed)
	}
	junit, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
	for name, text := range map[string]string{"results.json": string(b), "junit.xml": string(junit), "report.html": string(page)} {
		if !strings.Contains(text, "min.insync.replicas=2") || strings.Contains(text, "min.insync.replicas=1") ||
			strings.Contains(text, "replication.factor=1") {
			t.Errorf("%s explains the verdict with settings the run did not use", name)
		}
	}
	// The header the run wrote is the one predicted for the scenario before it ran.
	rs, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	predicted, err := runner.Header(rs)
	if err != nil {
		t.Fatal(err)
	}
	hr, err := history.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	written := hr.Header().Config
	hr.Close()
	// The kafka entry: the release and the scenario's levels as predicted, and the levels the
	// cluster finalized beside them, which only the cluster knows.
	if written.Kafka == nil || written.Kafka.Version != predicted.Kafka.Version ||
		written.Kafka.Features.Level(kafkaconf.FeatureMetadata) == 0 {
		t.Errorf("the header's kafka entry %+v: want release %s and the cluster's finalized levels", written.Kafka, predicted.Kafka.Version)
	} else {
		for f, l := range predicted.Kafka.Features {
			if written.Kafka.Features[f] != l {
				t.Errorf("the header says %s=%d, the scenario set %d", f, written.Kafka.Features[f], l)
			}
		}
	}
	predicted.Kafka, written.Kafka = nil, nil
	if !reflect.DeepEqual(predicted, written) {
		pj, _ := json.Marshal(predicted)
		wj, _ := json.Marshal(written)
		t.Errorf("the header written differs from the one predicted:\nwritten   %s\npredicted %s", wj, pj)
	}
}

// TestPositiveControls: each of them fires an anomaly the checker must find (permitted for the
// scenario's settings, so the verdict stays pass); a checker that never finds it fails the test.
// They share one cluster, each with names of its own.
func TestPositiveControls(t *testing.T) {
	c := harnesstest.Start(t, harness.Spec{Nodes: 3})

	// Non-idempotent producers with retries while the leader's acknowledgements are lost
	// append retried records twice.
	t.Run("duplicates", func(t *testing.T) {
		s, err := scenarios.Builtin("plain-ack-loss")
		if err != nil {
			t.Fatal(err)
		}
		// One ack-loss window of the two, to keep the test short.
		s.Duration = scenarios.Duration(25 * time.Second)
		s.Faults.Timeline = s.Faults.Timeline[:1]
		o := runtest.Run(t, s, runtest.Options{Out: t.TempDir(), Cluster: c})
		dup := o.Results.Anomalies[guarantee.Duplicate]
		t.Logf("duplicates: %d (%s); verdict %s", dup.Count, dup.Judgement, o.Verdict())
		if dup.Count == 0 {
			t.Fatal("no duplicate found: the positive control did not fire")
		}
		if dup.Judgement != guarantee.Permitted || len(dup.Examples) == 0 || len(dup.Examples[0].Ops) < 2 {
			t.Errorf("duplicate %+v: want permitted, with the ops that prove it", dup)
		}
	})

	// acks=1 producers lose acknowledged writes when the leader dies while its followers lag;
	// the checker finds them with the ops that prove it (an acknowledgement, then a final read
	// without the record), judged permitted for acks=1.
	t.Run("lost writes", func(t *testing.T) {
		s, err := scenarios.Builtin("acks1-leader-loss")
		if err != nil {
			t.Fatal(err)
		}
		// The built-in's sequence, shortened: followers' fetches slowed by 1 s from 5 s, the
		// leader SIGKILLed 10 s later, started again after 10 s.
		s.Duration = scenarios.Duration(35 * time.Second)
		s.Faults.Timeline[0].At, s.Faults.Timeline[0].For = scenarios.Duration(5*time.Second), scenarios.Duration(25*time.Second)
		s.Faults.Timeline[1].At, s.Faults.Timeline[1].For = scenarios.Duration(15*time.Second), scenarios.Duration(10*time.Second)
		o := runtest.Run(t, s, runtest.Options{Out: t.TempDir(), Cluster: c})
		lost := o.Results.Anomalies[guarantee.LostWrite]
		t.Logf("lost writes: %d (%s); verdict %s", lost.Count, lost.Judgement, o.Verdict())
		if lost.Count == 0 {
			t.Fatal("no lost write found: the positive control did not fire")
		}
		if lost.Judgement != guarantee.Permitted || !strings.Contains(lost.Why, "acks=1") {
			t.Errorf("lost-write judged %s (%s): want permitted for acks=1", lost.Judgement, lost.Why)
		}
		ex := lost.Examples[0]
		if len(ex.Ops) < 3 || ex.Topic == "" || ex.Partition == nil || len(ex.Offsets) == 0 || !strings.Contains(ex.Note, "absent from the final read") {
			t.Errorf("example %+v: want the send, its acknowledgement and the final read that lacks it", ex)
		}
		if !strings.HasPrefix(ex.Topic, scenarios.DefaultTopic+"-t") {
			t.Errorf("topic %s: a run on a shared cluster writes topics of its own", ex.Topic)
		}
	})
}

// TestSinkUnderServiceFaults runs sink-naive shortened, on a real PostgreSQL: its members crash
// between side effect and commit (a positive control: duplicates, permitted), its database
// link is cut and the database is killed and started again; no input below the committed
// position may lack its effect, and both service faults must have taken effect.
func TestSinkUnderServiceFaults(t *testing.T) {
	s, err := scenarios.Builtin("sink-naive")
	if err != nil {
		t.Fatal(err)
	}
	s.Duration = scenarios.Duration(30 * time.Second)
	s.Faults.Timeline = []scenarios.Step{
		{At: scenarios.Duration(8 * time.Second), For: scenarios.Duration(4 * time.Second), Fault: scenarios.Fault{Name: scenarios.FaultSinkCut}},
		{At: scenarios.Duration(16 * time.Second), For: scenarios.Duration(4 * time.Second), Fault: scenarios.Fault{Name: scenarios.FaultServiceKill}},
	}
	dir := t.TempDir()
	o := runtest.Run(t, s, runtest.Options{Out: dir})
	r := o.Results
	dup, miss := r.Anomalies[guarantee.EffectDuplicate], r.Anomalies[guarantee.EffectMissing]
	t.Logf("verdict %s; effect-duplicate %d (%s); effect-missing %d; faults %v", o.Verdict(), dup.Count, dup.Judgement, miss.Count, r.Faults)
	if o.Verdict() != results.Pass || dup.Count == 0 || dup.Forbidden != 0 || miss.Count != 0 {
		t.Errorf("want pass with permitted duplicates and nothing missing: %s, %+v, %+v", o.Verdict(), dup, miss)
	}
	for _, f := range []string{"sink-cut", "service-kill"} {
		if !slices.Contains(r.Faults, f) {
			t.Errorf("fault %s did not take effect: %v", f, r.Faults)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "postgres.log")); err != nil {
		t.Errorf("the database's log: %v", err)
	}
}
