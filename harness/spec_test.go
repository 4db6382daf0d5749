package harness

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/verity-kafka/verity/kafkaconf"
)

func TestEnvNameRoundTrip(t *testing.T) {
	for _, prop := range []string{
		"replica.lag.time.max.ms", "node.id", "listener.security.protocol.map",
		"log.dirs", "some_prop.with_underscore", "a-b.c", "transaction.state.log.min.isr",
	} {
		env := envName(prop)
		if !strings.HasPrefix(env, "KAFKA_") || env != strings.ToUpper(env) {
			t.Errorf("envName(%q) = %q, want an upper-case KAFKA_ variable", prop, env)
		}
		if back := propName(env); back != prop {
			t.Errorf("propName(envName(%q)) = %q (via %s)", prop, back, env)
		}
	}
}

func TestDeviations(t *testing.T) {
	cases := []struct {
		name      string
		spec      Spec
		want, not []string
	}{
		{"fast defaults", Spec{}, []string{"replica.lag.time.max.ms=10000", "group.initial.rebalance.delay.ms=0"}, []string{"offsets.topic.replication.factor=3"}},
		{"kafka defaults", Spec{KafkaDefaults: true}, nil, []string{"replica.lag.time.max.ms=10000"}},
		{"override equal to kafka's default is no deviation", Spec{BrokerConfig: map[string]string{"replica.lag.time.max.ms": "30000"}}, nil, []string{"replica.lag.time.max.ms=30000", "replica.lag.time.max.ms=10000"}},
		{"user override", Spec{BrokerConfig: map[string]string{"unclean.leader.election.enable": "true"}}, []string{"unclean.leader.election.enable=true"}, nil},
		{"one node needs RF 1 internal topics", Spec{Nodes: 1}, []string{"offsets.topic.replication.factor=1", "transaction.state.log.min.isr=1"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.spec.Deviations()
			for _, w := range tc.want {
				if !slices.Contains(d, w) {
					t.Errorf("Deviations() = %v, missing %s", d, w)
				}
			}
			for _, n := range tc.not {
				if slices.Contains(d, n) {
					t.Errorf("Deviations() = %v, must not list %s", d, n)
				}
			}
			if !slices.IsSorted(d) {
				t.Errorf("Deviations() not sorted: %v", d)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	bad := []Spec{
		{Nodes: 3, HeapMB: 1024},
		{Nodes: 3, HeapMB: 384, BrokerConfig: map[string]string{"listeners": "x"}},
		{Nodes: 3, HeapMB: 384, BrokerConfig: map[string]string{"a b": "x"}},
		{Nodes: 99, HeapMB: 384},
		{Nodes: 3, HeapMB: 384, KafkaVersion: "4.3.0"},
		{Nodes: 3, HeapMB: 384, Features: kafkaconf.FeatureLevels{kafkaconf.FeatureMetadata: 20}},
		{Nodes: 3, HeapMB: 384, LogDirs: MaxLogDirs + 1},
		{Nodes: 3, HeapMB: 384, BrokerConfig: map[string]string{"metadata.log.dir": "/x"}},
	}
	for _, s := range bad {
		if err := s.validate(); err == nil {
			t.Errorf("validate(%+v) = nil, want an error", s)
		}
	}
	if err := (Spec{}).withDefaults().validate(); err != nil {
		t.Errorf("default spec: %v", err)
	}
	if v := (Spec{}).withDefaults().KafkaVersion; v != kafkaconf.DefaultKafkaVersion {
		t.Errorf("default release %q", v)
	}
}

func TestSaramaVersionNeverAboveTheRelease(t *testing.T) {
	for _, r := range kafkaconf.Releases() {
		got := saramaVersion(r.Version)
		rv, err := sarama.ParseKafkaVersion(string(r.Version))
		if err != nil {
			t.Fatal(err)
		}
		if !rv.IsAtLeast(got) || !sarama.MaxVersion.IsAtLeast(got) {
			t.Errorf("Kafka %s: sarama speaks %s", r.Version, got)
		}
		if sarama.MaxVersion.IsAtLeast(rv) && got != rv {
			t.Errorf("Kafka %s: sarama speaks %s, not the release's own", r.Version, got)
		}
	}
}

func TestNodeEnvCombined(t *testing.T) {
	s := Spec{RunID: "r1"}.withDefaults()
	ms := s.members()
	if len(ms) != 3 {
		t.Fatalf("members = %v", ms)
	}
	env := s.nodeEnv(ms[1], "127.0.0.1", map[int]int{1: 40001, 2: 40002, 3: 40003})
	want := map[string]string{
		"KAFKA_NODE_ID":                  "2",
		"KAFKA_PROCESS_ROLES":            "broker,controller",
		"KAFKA_CONTROLLER_QUORUM_VOTERS": "1@kafka-1:30001,2@kafka-2:30002,3@kafka-3:30003",
		"KAFKA_ADVERTISED_LISTENERS":     "CLIENT://127.0.0.1:40002,INTERNAL://kafka-2:20002",
		"KAFKA_REPLICA_LAG_TIME_MAX_MS":  "10000",
		"CLUSTER_ID":                     clusterID("r1"),
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if remote := s.nodeEnv(ms[1], "192.0.2.7", map[int]int{2: 40002}); remote["KAFKA_ADVERTISED_LISTENERS"] != "CLIENT://192.0.2.7:40002,INTERNAL://kafka-2:20002" {
		t.Errorf("on a remote engine the client listener is advertised at the engine's host: %q", remote["KAFKA_ADVERTISED_LISTENERS"])
	}
	if _, ok := env["KAFKA_LOG4J_LOGGERS"]; ok {
		t.Errorf("KAFKA_LOG4J_LOGGERS set without loggers: %q", env["KAFKA_LOG4J_LOGGERS"])
	}
	if env["KAFKA_LOG_DIRS"] != dataDir || env["KAFKA_METADATA_LOG_DIR"] != "" {
		t.Errorf("one log directory: log.dirs %q, metadata.log.dir %q; want the data directory, and the metadata log in it",
			env["KAFKA_LOG_DIRS"], env["KAFKA_METADATA_LOG_DIR"])
	}
	jbod := s
	jbod.LogDirs = 2
	if e := jbod.nodeEnv(ms[1], "127.0.0.1", nil); e["KAFKA_LOG_DIRS"] != dataDir+"/dir0,"+dataDir+"/dir1" || e["KAFKA_METADATA_LOG_DIR"] != dataDir+"/metadata" {
		t.Errorf("two log directories: log.dirs %q, metadata.log.dir %q", e["KAFKA_LOG_DIRS"], e["KAFKA_METADATA_LOG_DIR"])
	}
	s.Loggers = kafkaconf.Loggers{"kafka.server.share": "DEBUG", "kafka.coordinator": "TRACE"}
	if got := s.nodeEnv(ms[1], "127.0.0.1", nil)["KAFKA_LOG4J_LOGGERS"]; got != "kafka.coordinator=TRACE,kafka.server.share=DEBUG" {
		t.Errorf("KAFKA_LOG4J_LOGGERS = %q", got)
	}
	if len(clusterID("r1")) != 22 || clusterID("r1") == clusterID("r2") {
		t.Errorf("clusterID: %q %q", clusterID("r1"), clusterID("r2"))
	}
}

func TestNodeEnvDedicated(t *testing.T) {
	s := Spec{DedicatedControllers: true, Nodes: 2}.withDefaults()
	ms := s.members()
	if len(ms) != 5 || ms[4].ID != 103 || ms[4].Role != RoleController || ms[0].Role != RoleBroker {
		t.Fatalf("members = %v", ms)
	}
	ctl := s.nodeEnv(ms[4], "127.0.0.1", nil)
	if _, ok := ctl["KAFKA_ADVERTISED_LISTENERS"]; ok {
		t.Errorf("a controller must not advertise listeners (the official image refuses it)")
	}
	if ctl["KAFKA_CONTROLLER_QUORUM_VOTERS"] != "101@kafka-101:30101,102@kafka-102:30102,103@kafka-103:30103" {
		t.Errorf("voters = %q", ctl["KAFKA_CONTROLLER_QUORUM_VOTERS"])
	}
}

func TestEngineHost(t *testing.T) {
	for _, tc := range []struct {
		dockerHost, override string
		host                 string
		remote               bool
	}{
		{"", "", "127.0.0.1", false},
		{"unix:///var/run/docker.sock", "", "127.0.0.1", false},
		{"tcp://127.0.0.1:2375", "", "127.0.0.1", false},
		{"tcp://docker:2376", "", "docker", true},
		{"tcp://192.0.2.9:2375", "", "192.0.2.9", true},
		{"ssh://ci@build-7.example:22", "", "build-7.example", true},
		{"tcp://docker:2375", "10.1.2.3", "10.1.2.3", true},
		{"tcp://docker:2375", "localhost", "localhost", false},
	} {
		t.Setenv("DOCKER_HOST", tc.dockerHost)
		t.Setenv("TESTCONTAINERS_HOST_OVERRIDE", tc.override)
		host, remote, err := EngineHost()
		if err != nil || host != tc.host || remote != tc.remote {
			t.Errorf("DOCKER_HOST=%q override %q: %q remote %t (%v), want %q remote %t", tc.dockerHost, tc.override, host, remote, err, tc.host, tc.remote)
		}
	}
	t.Setenv("DOCKER_HOST", "tcp://:2375")
	t.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "")
	if _, _, err := EngineHost(); err == nil {
		t.Error("a tcp:// DOCKER_HOST without a host is refused")
	}
}

// TestPortClash: the engine's refusals to publish on a taken host port are told apart from its
// other errors, both for what to try again and for the advice given.
func TestPortClash(t *testing.T) {
	clash := errors.New("start container: container start: Error response from daemon: driver failed programming external connectivity on endpoint verity-69e6067f-node-2 (b7cc): Error starting userland proxy: listen tcp4 0.0.0.0:32848: bind: address already in use")
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{clash, true},
		{fmt.Errorf("starting node 1: %w", errors.New("Bind for 127.0.0.1:9092 failed: port is already allocated")), true},
		{nil, false},
		{errors.New("No such image: verity/kafka:4.3.1"), false},
	} {
		if got := portClash(tc.err); got != tc.want {
			t.Errorf("portClash(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if got := (&Cluster{}).explainStartError("starting node 2", clash).Error(); !strings.Contains(got, "a host port is already in use") {
		t.Errorf("explainStartError says %q", got)
	}
}

// TestRetryPortClash: a port clash is tried again, with the failed attempt cleared first, up to
// portClashAttempts in all; any other error, or a failure to clear, ends the retries at once.
func TestRetryPortClash(t *testing.T) {
	c := &Cluster{log: slog.New(slog.DiscardHandler)}
	clash := errors.New("listen tcp4 0.0.0.0:32848: bind: address already in use")
	attempts, resets := 0, 0
	reset := func() error { resets++; return nil }
	clashTwice := func() error {
		if attempts++; attempts <= 2 {
			return clash
		}
		return nil
	}
	if err := c.retryPortClash("x", clashTwice, reset); err != nil || attempts != 3 || resets != 2 {
		t.Errorf("clash twice then start: err %v after %d attempts, %d resets; want nil after 3, 2", err, attempts, resets)
	}
	attempts, resets = 0, 0
	always := func() error { attempts++; return clash }
	if err := c.retryPortClash("x", always, reset); !portClash(err) || attempts != portClashAttempts || resets != portClashAttempts-1 {
		t.Errorf("always a clash: err %v after %d attempts, %d resets; want the clash after %d", err, attempts, resets, portClashAttempts)
	}
	attempts = 0
	other := func() error { attempts++; return errors.New("No such image") }
	if err := c.retryPortClash("x", other, nil); err == nil || attempts != 1 {
		t.Errorf("another error: err %v after %d attempts; want it after 1", err, attempts)
	}
	attempts = 0
	if err := c.retryPortClash("x", always, func() error { return errors.New("removal refused") }); err == nil ||
		!strings.Contains(err.Error(), "removal refused") || attempts != 1 {
		t.Errorf("a reset that fails: err %v after %d attempts; want both errors after 1", err, attempts)
	}
}
