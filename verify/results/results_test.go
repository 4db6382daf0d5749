package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
)

func sample() *Results {
	p := int32(0)
	return &Results{
		Version: Version, Verdict: Fail, Scenario: "lab", Seed: 42, Config: history.Config{Scenario: "lab"},
		Deviations: []string{"replica.lag.time.max.ms=10000"},
		Anomalies: map[guarantee.Anomaly]Anomaly{guarantee.LostWrite: {Count: 3, Why: "acks=all …", Judgement: guarantee.Forbidden, Forbidden: 3,
			Examples: []Example{{Value: "3-17", Ops: []int64{120, 4410}, Topic: "t", Partition: &p, Judgement: guarantee.Forbidden}}}},
		Stats: Stats{
			Ops:              map[string]Outcomes{"send": {OK: 5, Fail: 1, Info: 2}, "final-read": {OK: 3}},
			UnknownSends:     2,
			UnknownLaterSeen: 1,
			UnavailableMs:    12.5,
			LatencyMs:        Percentiles{P50: 1, P99: 2},
			Nemesis:          map[string]int64{"kill": 2},
		},
		Timings: Timings{CheckS: 0.5},
	}
}

// The field names are the contract of docs/results.md.
func TestWireNames(t *testing.T) {
	b, err := json.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"verity_results", "verdict", "scenario", "seed", "config", "deviations", "anomalies", "stats", "timings"} {
		if _, ok := m[k]; !ok {
			t.Errorf("results.json lacks %q", k)
		}
	}
	lw := m["anomalies"].(map[string]any)["lost-write"].(map[string]any)
	for _, k := range []string{"count", "judgement", "why", "examples"} {
		if _, ok := lw[k]; !ok {
			t.Errorf("an anomaly lacks %q", k)
		}
	}
	if lw["judgement"] != "forbidden" || m["verity_results"] != 2.0 {
		t.Errorf("judgement %v, version %v", lw["judgement"], m["verity_results"])
	}
	if _, ok := lw["permitted"]; ok {
		t.Error("an anomaly has two judgement fields")
	}
	ex := lw["examples"].([]any)[0].(map[string]any)
	if ex["value"] != "3-17" || len(ex["ops"].([]any)) != 2 {
		t.Errorf("example %v", ex)
	}
	st := m["stats"].(map[string]any)
	for _, k := range []string{"send", "txn", "poll", "unknown_later_seen", "unavailable_ms", "latency_ms"} {
		if _, ok := st[k]; !ok {
			t.Errorf("stats lack %q", k)
		}
	}
	if st["send"].(map[string]any)["info"] != 2.0 {
		t.Errorf("stats.send %v", st["send"])
	}
	tm := m["timings"].(map[string]any)
	for _, k := range []string{"cluster_ready_s", "run_s", "check_s"} {
		if _, ok := tm[k]; !ok {
			t.Errorf("timings lack %q", k)
		}
	}
}

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	r := sample()
	path, err := Write(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, FileName) {
		t.Errorf("path %s", path)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("stat %v %v", st, err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	// txn and poll are always written, with zero counts.
	r.Stats.Ops["txn"], r.Stats.Ops["poll"] = Outcomes{}, Outcomes{}
	if !reflect.DeepEqual(got.Stats, r.Stats) {
		t.Errorf("stats round trip:\n got %+v\nwant %+v", got.Stats, r.Stats)
	}
	if got.Verdict != Fail || got.Anomalies["lost-write"].Count != 3 {
		t.Errorf("round trip %+v", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if _, err := Write(filepath.Join(dir, "missing"), r); err == nil {
		t.Error("writing into a missing directory must fail")
	}
}

func TestStatsRejectsClashingOpName(t *testing.T) {
	s := Stats{Ops: map[string]Outcomes{"latency_ms": {}}}
	if _, err := json.Marshal(s); err == nil {
		t.Error("an op named like a stats field must not silently overwrite it")
	}
}

// A results.json of version 1 (a "permitted" flag beside or instead of "judgement") reads into
// this version's single judgement.
func TestReadVersion1(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	v1 := `{"verity_results":1,"verdict":"pass","scenario":"s","seed":1,"config":{"scenario":"s"},"deviations":[],
"anomalies":{"lost-write":{"count":0,"permitted":false,"why":"w"},"duplicate":{"count":2,"permitted":true,"why":"d","judgement":"permitted"},
"reorder":{"count":0,"permitted":true,"why":"r"}},"stats":{},"timings":{"cluster_ready_s":0,"run_s":0,"check_s":0}}`
	if err := os.WriteFile(path, []byte(v1), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != Version || r.Anomalies[guarantee.LostWrite].Judgement != guarantee.Forbidden ||
		r.Anomalies[guarantee.Duplicate].Judgement != guarantee.Permitted || r.Anomalies[guarantee.Reorder].Judgement != guarantee.Permitted {
		t.Errorf("read %+v", r.Anomalies)
	}
	if err := os.WriteFile(path, []byte(`{"verity_results":9}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil {
		t.Error("a version from the future was read")
	}
}

func TestErrorClass(t *testing.T) {
	for text, want := range map[string]string{
		"kafka server: NOT_ENOUGH_REPLICAS: Messages are rejected since there are fewer in-sync replicas than required.": "NOT_ENOUGH_REPLICAS",
		"context deadline exceeded (kafka server: REQUEST_TIMED_OUT)":                                                    "REQUEST_TIMED_OUT",
		"kafka: client has run out of available brokers to talk to: dial tcp 127.0.0.1:1: connect: connection refused":   "connection refused",
		"context deadline exceeded": "timeout",
		"EOF":                       "connection lost",
		"aborted":                   "aborted",
		"circuit breaker is open":   "circuit breaker open",
		"kafka: error adding partitions: kafka server: Messages are rejected since there are fewer in-sync replicas than required (NOT_ENOUGH_REPLICAS)": "NOT_ENOUGH_REPLICAS",
		"produce failed: kafka server: The request timed out.": "timeout",
		"":                        "none given",
		"something else entirely": "other",
	} {
		if got := ErrorClass(text); got != want {
			t.Errorf("ErrorClass(%q) = %q, want %q", text, got, want)
		}
	}
}
