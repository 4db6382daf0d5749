// Package harness starts real Apache Kafka 4.3 clusters (KRaft) in containers with every network
// link behind its own Toxiproxy proxy, controls nodes and links, answers admin questions, and
// removes everything it created. It knows nothing of workloads, histories or anomalies.
//
// Layout: networks "core" (every node as node-<id>, every proxy container) and "link-<id>"
// (node <id> and its own proxy container, which carries the aliases
// kafka-<j> for every member j). Node i reaches node j at kafka-j, which resolves to proxy-i for
// node i alone, so the proxy "i->j" in proxy-i is the directed link i->j and nothing else.
// Clients reach node j through proxy-client, whose listen ports are published to the host.
//
// Each link carries one or two kinds of traffic (Traffic), one proxy each, since each goes to its
// own listener of node j: client->j carries TrafficClient (the CLIENT listener); i->j between
// brokers carries TrafficReplication (the INTERNAL listener: followers' fetches, transaction
// markers); i->j into a controller carries TrafficController (the CONTROLLER listener: the KRaft
// quorum between controllers, and a broker's registration, heartbeats, ISR changes and forwarded
// admin requests). Between combined nodes (broker and controller in one process, the default) a
// link carries both: Cut, Partition and Isolate cut both, and CutTraffic, HealTraffic and
// PartitionTraffic cut one alone, e.g. replication without the quorum. A proxy into a stopped
// node refuses connections whatever the cuts (acceptsWhen: a link healed while its node is down
// refuses until Start). docs/harness.md says what each cut does and how Describe and
// DescribeFrom choose the brokers they ask.
package harness

import (
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/verity-kafka/verity/kafkaconf"
)

// Label is carried by every container, network and volume the harness creates; its value is the
// run id. Reap finds leftovers of killed runs by it.
const Label = "io.verity.run"

// OwnerLabel is carried beside Label: the host and process id of the process that started the
// run ("host/pid"), so that Reap can leave the runs of processes still running alone.
const OwnerLabel = "io.verity.owner"

// Ports inside the containers. Listen ports of the proxies are distinct per destination, because
// all kafka-* aliases of one caller land on the same proxy container.
const (
	clientPort     = 9092  // CLIENT listener of a broker (through proxy-client)
	controllerPort = 9093  // CONTROLLER listener of a controller
	internalPort   = 19092 // INTERNAL (replication) listener of a broker
	toxiAPIPort    = 8474

	internalProxyBase = 20000 // proxy-i listens on internalProxyBase+j for i->j replication
	controlProxyBase  = 30000 // proxy-i listens on controlProxyBase+j for i->j quorum traffic
	clientProxyBase   = 9000  // proxy-client listens on clientProxyBase+j for client->j
	metricsProxyBase  = 8700  // proxy-client listens on metricsProxyBase+j for node j's JMX agent
	jmxAgentPort      = 8778  // the JMX agent's HTTP port in a node

	controllerIDBase = 100 // dedicated controllers are 101, 102, 103
)

// Spec says what cluster to start. The zero value (plus defaults) is a 3-node combined cluster.
type Spec struct {
	// Nodes is the number of brokers; default 3. In combined mode every broker is also a controller.
	Nodes int
	// DedicatedControllers runs three controller-only nodes (ids 101-103) beside the brokers.
	DedicatedControllers bool
	// BrokerConfig overrides server.properties on every node (dotted names, e.g.
	// "replica.lag.time.max.ms"). It is applied over the harness defaults (FastDefaults).
	BrokerConfig map[string]string
	// KafkaDefaults, when true, leaves out the harness's fast defaults and runs with Kafka's own
	// (only the settings a cluster of this size cannot do without are still set).
	KafkaDefaults bool
	// HeapMB is the JVM heap per node; default 384 (at most 512 keeps three nodes within 2 cores).
	HeapMB int
	// RunID names the run and labels every resource; default a random id.
	RunID string
	// ArtifactDir receives node logs on Close; default <tmp>/verity-<run id>.
	ArtifactDir string
	// KafkaVersion is the Kafka release the nodes run (kafkaconf.Releases); default
	// kafkaconf.DefaultKafkaVersion. It picks the image (KafkaImages) and caps the protocol
	// version of Verity's sarama clients (Cluster.SaramaConfig).
	KafkaVersion kafkaconf.KafkaVersion
	// Features are feature levels the cluster is brought to once it is ready, before Start
	// returns (UpdateFeatures, upgrading or safely downgrading each); the others keep the
	// levels the release finalizes on a new cluster.
	Features kafkaconf.FeatureLevels
	// Loggers set broker loggers' levels on every node over the image's logging.
	Loggers kafkaconf.Loggers
	// KafkaImage and ToxiproxyImage override the image choice (see ChooseImages).
	KafkaImage, ToxiproxyImage string
	// ReadyTimeout bounds Start's wait for a ready cluster; default 3 minutes.
	ReadyTimeout time.Duration
	// NoSignalCleanup disables the default handler that removes the cluster on SIGINT/SIGTERM
	// (for programs that handle signals themselves and call Close).
	NoSignalCleanup bool
	// Logger receives the harness's logs; default slog.Default().
	Logger *slog.Logger
	// PowerLoss runs every node on the lazy filesystem (see Cluster.PowerCut): a node can then
	// lose what it had not fsynced. Nodes need /dev/fuse and CAP_SYS_ADMIN.
	PowerLoss bool
	// KeepBootUnsynced leaves unsynced what the nodes wrote before the cluster was ready, their
	// storage format included, so that a power cut can take it too. By default the harness
	// syncs every node's filesystem once the cluster is ready, as a machine that has been up
	// for a while has written its page cache back.
	KeepBootUnsynced bool
	// LogDirs is how many log directories each node has (log.dirs); 0 or 1: one, the data
	// directory itself, which also holds the KRaft metadata log. With 2 or more, the data
	// directory holds dir0 … dirN-1 and the metadata log in a directory of its own, metadata
	// (metadata.log.dir): a broker whose one log directory fails goes on with the others
	// (KIP-112, KIP-858), and only a failed metadata directory stops it.
	LogDirs int
	// LazyFSBinary is a static verity-lazyfs binary on this host, mounted into the nodes for a
	// Kafka image that does not carry one (the official apache/kafka); default $VERITY_LAZYFS,
	// else the image's own (Verity's stand-in carries it).
	LazyFSBinary string
	// Postgres starts a PostgreSQL 15 server beside the cluster, reached through its own link
	// (Cluster.PostgresDSN, PostgresEndpoint; see services.go).
	Postgres bool
	// Ledger starts Verity's HTTP ledger (cmd/verity-ledger) beside the cluster, reached through
	// its own link (Cluster.LedgerURL, LedgerEndpoint).
	Ledger bool
	// PostgresImage and LedgerImage override the services' image choice (see ChooseImages); each
	// needs its service asked for.
	PostgresImage, LedgerImage string
}

// FastDefaults are the harness's departures from Kafka's defaults that keep runs short on a small
// machine. Each appears in Deviations and so in every report.
func FastDefaults() map[string]string {
	return map[string]string{
		// Followers leave the ISR after 10 s instead of 30 s, so ISR faults show within a test.
		"replica.lag.time.max.ms": "10000",
		// Consumer groups start at once instead of waiting 3 s for more members.
		"group.initial.rebalance.delay.ms": "0",
	}
}

// TopologyKeys are the settings the harness sets to build the cluster: they are not behaviour,
// never count as deviations, and cannot be overridden.
func TopologyKeys() []string {
	return []string{"node.id", "process.roles", "listeners", "advertised.listeners", "listener.security.protocol.map",
		"inter.broker.listener.name", "controller.listener.names", "controller.quorum.voters", "log.dirs", "metadata.log.dir"}
}

// MaxLogDirs bounds Spec.LogDirs.
const MaxLogDirs = 8

// LogDirPaths are the nodes' log directories and their metadata log directory ("" when the
// metadata log sits in the first log directory, Kafka's default), under the data directory.
func LogDirPaths(logDirs int) (dirs []string, metadata string) {
	if logDirs < 2 {
		return []string{dataDir}, ""
	}
	for i := range logDirs {
		dirs = append(dirs, fmt.Sprintf("%s/dir%d", dataDir, i))
	}
	return dirs, dataDir + "/metadata"
}

func (s Spec) withDefaults() Spec {
	if s.Nodes <= 0 {
		s.Nodes = 3
	}
	if s.HeapMB <= 0 {
		s.HeapMB = 384
	}
	if s.RunID == "" {
		s.RunID = NewRunID()
	}
	if s.ReadyTimeout <= 0 {
		s.ReadyTimeout = 3 * time.Minute
	}
	s.KafkaVersion = s.KafkaVersion.Or()
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	if s.PowerLoss && s.LazyFSBinary == "" {
		s.LazyFSBinary = os.Getenv("VERITY_LAZYFS")
	}
	return s
}

func (s Spec) validate() error {
	if s.Nodes > 50 {
		return fmt.Errorf("spec: Nodes=%d: at most 50 brokers", s.Nodes)
	}
	if s.LogDirs < 0 || s.LogDirs > MaxLogDirs {
		return fmt.Errorf("spec: LogDirs=%d: want 0 to %d log directories per node", s.LogDirs, MaxLogDirs)
	}
	if s.HeapMB > 512 {
		return fmt.Errorf("spec: HeapMB=%d: keep node heaps at 512 MiB or less, or %d nodes will not fit this machine", s.HeapMB, s.Nodes)
	}
	if s.LazyFSBinary != "" {
		if !s.PowerLoss {
			return fmt.Errorf("spec: LazyFSBinary=%q is only used with PowerLoss", s.LazyFSBinary)
		}
		if st, err := os.Stat(s.LazyFSBinary); err != nil || !st.Mode().IsRegular() || !filepath.IsAbs(s.LazyFSBinary) {
			return fmt.Errorf("spec: LazyFSBinary (or $VERITY_LAZYFS) %q must be an absolute path to a verity-lazyfs binary; build one with `CGO_ENABLED=0 go build -o /abs/path/verity-lazyfs ./cmd/verity-lazyfs`", s.LazyFSBinary)
		}
	}
	if _, err := kafkaconf.ParseKafkaVersion(string(s.KafkaVersion.Or())); err != nil {
		return fmt.Errorf("spec: KafkaVersion: %w", err)
	}
	for f := range s.Features {
		if _, err := kafkaconf.ParseFeature(string(f)); err != nil {
			return fmt.Errorf("spec: Features: %w", err)
		}
	}
	if err := s.Loggers.Validate(); err != nil {
		return fmt.Errorf("spec: Loggers: %w", err)
	}
	if s.PostgresImage != "" && !s.Postgres {
		return fmt.Errorf("spec: PostgresImage=%q is only used with Postgres", s.PostgresImage)
	}
	if s.LedgerImage != "" && !s.Ledger {
		return fmt.Errorf("spec: LedgerImage=%q is only used with Ledger", s.LedgerImage)
	}
	for k := range s.BrokerConfig {
		if slices.Contains(TopologyKeys(), k) {
			return fmt.Errorf("spec: BrokerConfig[%q]: the harness sets %s to build its topology; it cannot be overridden", k, k)
		}
		if k == "" || strings.ContainsAny(k, " =\n") {
			return fmt.Errorf("spec: BrokerConfig key %q is not a property name", k)
		}
	}
	return nil
}

// Role of a member of the cluster.
type Role string

const (
	RoleCombined   Role = "broker,controller"
	RoleBroker     Role = "broker"
	RoleController Role = "controller"
)

// ControllerIDs lists the ids of the cluster's KRaft voters (the combined nodes, or the dedicated
// controllers), ascending, as Cluster.Controllers will.
func (s Spec) ControllerIDs() []int {
	var ids []int
	for _, m := range s.members() {
		if m.isController() {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// member is one Kafka node of the layout.
type member struct {
	ID   int
	Role Role
}

func (m member) isBroker() bool     { return m.Role != RoleController }
func (m member) isController() bool { return m.Role != RoleBroker }

// members lists the cluster's nodes: brokers 1..N (combined unless dedicated controllers are
// asked for), then controllers 101..103.
func (s Spec) members() []member {
	var ms []member
	role := RoleCombined
	if s.DedicatedControllers {
		role = RoleBroker
	}
	for i := 1; i <= s.Nodes; i++ {
		ms = append(ms, member{ID: i, Role: role})
	}
	if s.DedicatedControllers {
		for i := 1; i <= 3; i++ {
			ms = append(ms, member{ID: controllerIDBase + i, Role: RoleController})
		}
	}
	return ms
}

// brokerConfig is the full set of behaviour settings given to every node: the settings a cluster
// of this size needs, the fast defaults unless KafkaDefaults, then the user's overrides.
func (s Spec) brokerConfig() map[string]string {
	cfg := map[string]string{}
	if s.Nodes < 3 {
		// Kafka's internal topics default to RF 3 and cannot be created on fewer brokers.
		rf := strconv.Itoa(s.Nodes)
		cfg["offsets.topic.replication.factor"] = rf
		cfg["transaction.state.log.replication.factor"] = rf
		cfg["share.coordinator.state.topic.replication.factor"] = rf
		minISR := strconv.Itoa(min(2, s.Nodes))
		if s.Nodes == 1 {
			minISR = "1"
		}
		cfg["transaction.state.log.min.isr"] = minISR
		cfg["share.coordinator.state.topic.min.isr"] = minISR
	}
	if !s.KafkaDefaults {
		maps.Copy(cfg, FastDefaults())
	}
	maps.Copy(cfg, s.BrokerConfig)
	return cfg
}

// Deviations lists, sorted, every broker setting of the cluster that departs from Kafka 4.3's
// default ("name=value"). Reports print it so that a reader knows what was not stock Kafka.
func (s Spec) Deviations() []string {
	s = s.withDefaults()
	defaults := kafkaconf.BrokerDefaults()
	var out []string
	for k, v := range s.brokerConfig() {
		if def, ok := defaults[k]; ok && def == v {
			continue
		}
		out = append(out, k+"="+v)
	}
	out = append(out, fmt.Sprintf("heap=-Xmx%dm (Kafka's start script: 1G)", s.HeapMB))
	slices.Sort(out)
	return out
}

// envName turns a property name into the KAFKA_* variable that the official image's
// KafkaDockerWrapper turns back into it: "." -> "_", "_" -> "__", "-" -> "___", upper case.
func envName(prop string) string {
	var b strings.Builder
	b.WriteString("KAFKA_")
	for _, r := range prop {
		switch r {
		case '.':
			b.WriteByte('_')
		case '_':
			b.WriteString("__")
		case '-':
			b.WriteString("___")
		default:
			b.WriteString(strings.ToUpper(string(r)))
		}
	}
	return b.String()
}

// propName is the inverse of envName, with the wrapper's rules (used by tests to check them).
func propName(env string) string {
	k := strings.ToLower(strings.TrimPrefix(env, "KAFKA_"))
	k = strings.ReplaceAll(k, "_", ".")
	k = strings.ReplaceAll(k, "...", "-")
	return strings.ReplaceAll(k, "..", "_")
}

// nodeEnv is the environment of member m's container.
func (s Spec) nodeEnv(m member, host string, clientHostPort map[int]int) map[string]string {
	var voters []string
	for _, c := range s.members() {
		if c.isController() {
			voters = append(voters, fmt.Sprintf("%d@kafka-%d:%d", c.ID, c.ID, controlProxyBase+c.ID))
		}
	}
	props := map[string]string{
		"node.id":                        strconv.Itoa(m.ID),
		"process.roles":                  string(m.Role),
		"controller.quorum.voters":       strings.Join(voters, ","),
		"controller.listener.names":      "CONTROLLER",
		"listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
	}
	dirs, metadata := LogDirPaths(s.LogDirs)
	props["log.dirs"] = strings.Join(dirs, ",")
	if metadata != "" {
		props["metadata.log.dir"] = metadata
	}
	var listeners []string
	if m.isBroker() {
		listeners = append(listeners, fmt.Sprintf("CLIENT://0.0.0.0:%d", clientPort), fmt.Sprintf("INTERNAL://0.0.0.0:%d", internalPort))
		props["inter.broker.listener.name"] = "INTERNAL"
		props["advertised.listeners"] = fmt.Sprintf("CLIENT://%s,INTERNAL://kafka-%d:%d",
			net.JoinHostPort(host, strconv.Itoa(clientHostPort[m.ID])), m.ID, internalProxyBase+m.ID)
	}
	if m.isController() {
		listeners = append(listeners, fmt.Sprintf("CONTROLLER://0.0.0.0:%d", controllerPort))
	}
	props["listeners"] = strings.Join(listeners, ",")
	maps.Copy(props, s.brokerConfig())

	env := map[string]string{
		"CLUSTER_ID":      clusterID(s.RunID),
		"KAFKA_HEAP_OPTS": fmt.Sprintf("-Xms%dm -Xmx%dm", min(128, s.HeapMB), s.HeapMB),
	}
	for k, v := range props {
		env[envName(k)] = v
	}
	if len(s.Loggers) > 0 {
		// Read by the image's KafkaDockerWrapper, which writes it into the logging
		// configuration rather than server.properties.
		env["KAFKA_LOG4J_LOGGERS"] = s.Loggers.String()
	}
	return env
}

const dataDir = "/var/lib/kafka/data"
