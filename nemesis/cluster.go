package nemesis

import (
	"context"
	"slices"
	"strings"

	"github.com/IBM/sarama"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/lazyfs/control"
)

// Cluster is what the nemesis does to a cluster and asks of it: the subset of *harness.Cluster
// it uses, so that unit tests can run the faults against a fake.
type Cluster interface {
	Brokers() []int
	Controllers() []int
	Bootstrap() []string
	Links() []harness.Link
	// ServiceLinks are the clients' links to the side-effect services the cluster runs.
	ServiceLinks() []harness.Link
	NodeStates() map[int]harness.NodeState
	Cuts() map[harness.Link]harness.CutKind

	Kill(ctx context.Context, id int) error
	Stop(ctx context.Context, id int) error
	Start(ctx context.Context, id int) error
	Pause(ctx context.Context, id int) error
	Resume(ctx context.Context, id int) error
	WipeDisk(ctx context.Context, id int) error
	PowerCut(ctx context.Context, id int) error
	Dropped(id int) (harness.Drop, bool)
	PowerLoss() bool
	// SetDiskFaults and ClearDiskFaults set and end a node's disk faults (lazy filesystem);
	// the clear returns what they did.
	SetDiskFaults(ctx context.Context, id int, rules control.Faults) error
	ClearDiskFaults(ctx context.Context, id int) (control.FaultStatus, error)
	KillService(ctx context.Context, endpoint int) error
	StartService(ctx context.Context, endpoint int) error

	Cut(ctx context.Context, l harness.Link, kind harness.CutKind) error
	Heal(ctx context.Context, l harness.Link) error
	AddToxic(ctx context.Context, l harness.Link, t harness.Toxic) (string, error)
	RemoveToxic(ctx context.Context, l harness.Link, name string) error

	Restore(ctx context.Context) error
	WaitHealthy(ctx context.Context) error
	// ResetAdmin makes the next admin question connect anew (a stuck connection of the
	// shared admin client would otherwise keep WaitHealthy failing).
	ResetAdmin()
	RegisteredBrokers(ctx context.Context) ([]int32, error)
	Describe(ctx context.Context, topic string) ([]harness.PartitionState, error)
	DescribePartition(ctx context.Context, topic string, partition int32) (harness.PartitionState, error)
	NodeLog(ctx context.Context, id int) (string, error)
	// Images are the images the cluster runs (which toxics its Toxiproxy has).
	Images() harness.Images
	// SaramaConfig is a sarama configuration for the cluster's Kafka release.
	SaramaConfig(clientID string) *sarama.Config
	// SetFeatures brings feature levels to the values given (UpdateFeatures); Features reads
	// them.
	SetFeatures(ctx context.Context, want kafkaconf.FeatureLevels) error
	Features(ctx context.Context) (harness.FeatureState, error)
	// KafkaVersion is the oldest release a node runs, NodeVersion node id's; Upgrade moves a
	// node to a newer one.
	KafkaVersion() kafkaconf.KafkaVersion
	NodeVersion(id int) kafkaconf.KafkaVersion
	Upgrade(ctx context.Context, id int, v kafkaconf.KafkaVersion) error
	// StrayTxnProduce writes a transactional record without adding its partition to a
	// transaction first, as a broken client would, and returns its offset.
	StrayTxnProduce(ctx context.Context, topic string, partition int32, txnID, value string) (int64, error)
}

var _ Cluster = (*harness.Cluster)(nil)

// Recorder is where the nemesis writes its events: a *history.Writer, or the workloads'
// recorder (which has these two methods and more). The nemesis touches the history through
// nothing else.
type Recorder interface {
	Invoke(p history.Process, f string, v history.Payload) (history.Op, error)
	Complete(inv history.Op, t history.Type, v history.Payload, errText string) (history.Op, error)
}

var _ Recorder = (*history.Writer)(nil)

// Targets is the value of a nemesis event: the concrete nodes and links a fault hit. Its first
// four fields are history.Faults (same JSON names); the others are additions the format allows.
type Targets struct {
	Nodes []int          `json:"nodes,omitempty"`
	Links [][2]string    `json:"links,omitempty"`
	Toxic map[string]any `json:"toxic,omitempty"`
	Note  string         `json:"note,omitempty"`
	// Cut is how links were cut: "blackhole" (packets vanish, peers wait for timeouts) or
	// "refuse" (connections refused at once); topology.md asks that a run record which.
	Cut string `json:"cut,omitempty"`
	// Role says how the nodes were chosen ("leader of t-0 (epoch 4)", "active controller").
	Role string `json:"role,omitempty"`
	// Fault is the catalogue fault an elementary event belongs to, when its f differs (the
	// "kill" and "start" events of a rolling bounce, the "heal" of an isolation).
	Fault string `json:"fault,omitempty"`
	// Dropped is, on the start after a power cut, what each node's filesystem dropped.
	Dropped map[int]harness.Drop `json:"dropped,omitempty"`
	// Records are the records the fault wrote itself (stray-txn-produce), with their offsets.
	Records []history.Record `json:"records,omitempty"`
	// DiskRules are the rules a disk fault set; Disk is, on its heal, what they did on each
	// node.
	DiskRules []control.DiskFault         `json:"disk_rules,omitempty"`
	Disk      map[int]control.FaultStatus `json:"disk,omitempty"`
}

// Faults returns the history.Faults part of t.
func (t Targets) Faults() history.Faults {
	return history.Faults{Nodes: t.Nodes, Links: t.Links, Toxic: t.Toxic, Note: t.Note, Records: t.Records}
}

// linkPair is a link as the history names it: ["1","2"], or ["client","2"] for a client link.
func linkPair(l harness.Link) [2]string {
	from, to, _ := strings.Cut(l.String(), "->") // "client", a node id, or a service's name
	return [2]string{from, to}
}

func linkPairs(ls []harness.Link) [][2]string {
	out := make([][2]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, linkPair(l))
	}
	return out
}

// allNodes lists every node of c (brokers and dedicated controllers), ascending.
func allNodes(c Cluster) []int {
	ids := append(slices.Clone(c.Brokers()), c.Controllers()...)
	slices.Sort(ids)
	return slices.Compact(ids)
}

// nodeLinksBetween lists the node->node links of c that run between a and b, both ways. Client
// links are never included: a partition between nodes leaves clients reaching every broker.
func nodeLinksBetween(c Cluster, a, b []int) []harness.Link {
	var out []harness.Link
	for _, l := range c.Links() {
		if l.From == harness.ClientEndpoint || l.From == l.To {
			continue
		}
		if (slices.Contains(a, l.From) && slices.Contains(b, l.To)) || (slices.Contains(b, l.From) && slices.Contains(a, l.To)) {
			out = append(out, l)
		}
	}
	return out
}

func without(ids []int, drop ...int) []int {
	var out []int
	for _, id := range ids {
		if !slices.Contains(drop, id) {
			out = append(out, id)
		}
	}
	return out
}

func ints32(s []int32) []int {
	out := make([]int, len(s))
	for i, v := range s {
		out[i] = int(v)
	}
	return out
}
