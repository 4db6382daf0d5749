package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/kafkaconf"
)

// TestRunUsageErrors: bad input to run, matrix, suite and list ends with exit 2 and one line that
// says what to do, before any cluster is started.
func TestRunUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\ntopology:\n  nodes: many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	torn := filepath.Join(t.TempDir(), "torn.yaml")
	if err := os.WriteFile(torn, []byte("name: x\n  topology: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown scenario", []string{"run", "--scenario", "defualt"}, `no built-in scenario "defualt"`},
		{"missing file", []string{"run", "--file", "/nonexistent.yaml"}, "nonexistent.yaml"},
		{"wrong type in YAML", []string{"run", "--file", bad}, "topology.nodes"},
		{"malformed YAML", []string{"run", "--file", torn}, "torn.yaml"},
		{"both scenario and file", []string{"run", "--scenario", "default", "--file", bad}, "not both"},
		{"bad acks", []string{"run", "--acks", "2"}, "--acks"},
		{"impossible combination", []string{"run", "--rf", "1"}, "min"},
		{"bad fault", []string{"run", "--fault", "meteor"}, "meteor"},
		{"bad rf", []string{"run", "--rf", "three"}, "--rf"},
		{"argument", []string{"run", "extra"}, "no arguments"},
		{"client lacks a capability", []string{"run", "-s", "idempotent-inflight5-ack-loss", "--client", "sarama"},
			"requires[0]: idempotent-in-flight-5: the scenario needs it and client sarama lacks it"},
		{"unknown client", []string{"run", "--client", "librdkafka"}, "want one of sarama, franz-go"},
		{"matrix without axes", []string{"matrix"}, "no axis given"},
		{"matrix unknown client", []string{"matrix", "--client", "sarama,kafkajs"}, "kafkajs"},
		{"matrix bad axis value", []string{"matrix", "--acks", "1,7"}, "acks"},
		{"matrix unknown fault", []string{"matrix", "--fault", "meteor"}, "meteor"},
		{"matrix zero runs", []string{"matrix", "--acks", "1", "--runs", "0"}, "--runs"},
		{"list unknown", []string{"list", "--yaml", "--scenario", "nope"}, "nope"},
		{"suite unknown scenario and tag", []string{"suite", "-s", "default,defualt", "--tag", "nightly"},
			`no built-in scenario matches "defualt" (did you mean default?); no tag "nightly"; built-ins: default,`},
		{"suite setting no scenario takes", []string{"suite", "-s", "default", "--sink", "naive"}, "--sink=naive: no scenario of the suite takes it"},
		{"suite zero runs", []string{"suite", "-s", "default", "--runs", "0"}, "--runs"},
		{"suite bad shard", []string{"suite", "--shard", "4/3"}, "want K/N"},
		{"suite argument", []string{"suite", "default"}, "name scenarios with -s"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(c.args...)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want %d (stderr %q)", c.name, code, exitUsage, stderr)
		}
		if !strings.Contains(stderr, c.stderr) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%s: stderr %q: want one line containing %q", c.name, stderr, c.stderr)
		}
	}
}

// TestRunNoEngine: with no Docker engine, run fails at once with exit 2 and says how to start one.
func TestRunNoEngine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
	out := t.TempDir()
	code, _, stderr := runCLI("run", "--quiet", "--out", out)
	if code != exitUsage || !strings.Contains(stderr, "make engine") {
		t.Errorf("exit %d, stderr %q: want 2 and how to start an engine", code, stderr)
	}
}

func TestList(t *testing.T) {
	code, stdout, _ := runCLI("list")
	if code != exitPass {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"default", "acks1-leader-loss", "lost-write likely", "FAULT", "ack-loss",
		"CLIENT", "[franz-go] Idempotent async producers"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("list does not show %q", want)
		}
	}
	for _, c := range kafkaconf.Clients() {
		if !regexp.MustCompile(`(?m)^` + string(c.Name) + ` .*` + string(c.TxnProtocols[0]) + `.*` + string(c.Capabilities[0])).MatchString(stdout) {
			t.Errorf("list does not show client %s with its protocols and capabilities", c.Name)
		}
	}
	for _, r := range kafkaconf.Releases() {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(string(r.Version)) + ` +\S`).MatchString(stdout) {
			t.Errorf("list does not show Kafka %s with what sets it apart", r.Version)
		}
	}
	for _, f := range kafkaconf.SettableFeatures() {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(string(f.Name)) + ` +--` + f.Flag + ` +\S`).MatchString(stdout) {
			t.Errorf("list does not show feature %s with its knob --%s", f.Name, f.Flag)
		}
	}
	for _, args := range [][]string{{"list", "--yaml", "--scenario", "acks1-leader-loss"}, {"list", "--yaml", "acks1-leader-loss"}} {
		code, stdout, _ = runCLI(args...)
		if code != exitPass || !strings.Contains(stdout, "name: acks1-leader-loss") || !strings.Contains(stdout, "min_insync_replicas: 2") {
			t.Errorf("%v: exit %d, %q", args, code, stdout)
		}
	}
	if code, stdout, _ = runCLI("list", "--yaml"); code != exitPass || !strings.Contains(stdout, "name: default") {
		t.Errorf("list --yaml: exit %d, %q", code, stdout)
	}
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"list", "acks1-leader-loss"}, "only goes with --yaml"},
		{[]string{"list", "--yaml", "a", "b"}, "one scenario name"},
		{[]string{"list", "--yaml", "--scenario", "default", "acks1-leader-loss"}, "give one"},
		{[]string{"list", "--yaml", "nope"}, `no built-in scenario "nope"`},
	} {
		if code, _, stderr := runCLI(c.args...); code != exitUsage || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, stderr)
		}
	}
}

// verity list shows each built-in's tags, and the tags.
func TestListShowsTags(t *testing.T) {
	code, stdout, _ := runCLI("list")
	if code != exitPass {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"TAGS", "TAG ", "regression,transactions", "power-loss  "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("verity list does not show %q", want)
		}
	}
}
