// Package guarantee holds what Kafka 4.3 documents, as one table from the circumstances of a
// finding (the settings of the producer that wrote the record concerned, of its topic, the
// faults that took effect, the reader's isolation) to the anomalies they permit or forbid, each
// row with the reason that results.json quotes (Rules). The settings are package kafkaconf's;
// the table is docs/guarantees.md in code. It imports nothing of Verity's but kafkaconf, so the
// scenarios, the checker, the report and the CLI all read the same table.
package guarantee

import "strings"

// Fault kinds that change what the table permits. Names in nemesis events are normalised by
// FaultKind.
const (
	FaultDiskLoss        = "disk-loss"
	FaultPowerLoss       = "power-loss"
	FaultUncleanElection = "unclean-election"
)

// FaultKind maps the spellings a nemesis may use onto the kinds the table knows; any other
// name is returned lower-cased as it is.
func FaultKind(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.ReplaceAll(n, "_", "-")
	switch n {
	case "disk-loss", "wipe", "wipe-disk", "wipe-data", "lose-disk", "disk-wipe", "lose-data":
		return FaultDiskLoss
	case "power-loss", "power-cut", "power-failure":
		return FaultPowerLoss
	case "unclean-election", "unclean-leader-election", "unclean":
		return FaultUncleanElection
	}
	return n
}

// Faults is what the run did to the partition a finding concerns, as far as the table cares:
// the faults that took effect on its replicas.
type Faults struct {
	// Kinds are the normalised fault kinds that took effect, sorted.
	Kinds []string
	// DiskLossNodes counts distinct replicas whose disk was lost; -1 when a disk loss is
	// known but not on how many nodes, which the table treats as one.
	DiskLossNodes int
	// PowerLossNodes is the most replicas that lost their power in one event (a power cut on
	// nodes that are down together): what they had not fsynced was lost on all of them at once.
	// -1 when a power loss is known but not on which nodes, which the table treats as one.
	PowerLossNodes  int
	UncleanElection bool
	// Controllers is the size of the KRaft quorum (the header's controllers); 0 when not known.
	Controllers int
	// ControllerPowerLoss is the most controllers that lost their power in one event, and
	// ControllerDiskLoss the distinct controllers whose disk was lost; -1 when such a fault is
	// known but not on which nodes.
	ControllerPowerLoss int
	ControllerDiskLoss  int
}

// quorumLoss reports whether n controllers (a count of a power or disk loss) are half of the
// quorum or more: enough that no majority kept its copy of what was committed. False when the
// quorum or n is not known (controllersUnknown decides those).
func (f Faults) quorumLoss(n int) bool {
	return n > 0 && f.Controllers > 0 && 2*n >= f.Controllers
}

// controllersUnknown reports whether a power or disk loss may have hit controllers that the
// history does not let one count: the header names no controllers, or a loss names no nodes.
func (f Faults) controllersUnknown() bool {
	hit := f.ControllerPowerLoss != 0 || f.ControllerDiskLoss != 0
	return hit && (f.Controllers == 0 || f.ControllerPowerLoss < 0 || f.ControllerDiskLoss < 0)
}

// PowerLoss reports whether any replica lost its power.
func (f Faults) PowerLoss() bool { return f.PowerLossNodes != 0 }

func (f Faults) powerNodes() int {
	if f.PowerLossNodes < 0 {
		return 1
	}
	return f.PowerLossNodes
}

// DiskLoss reports whether any disk was lost.
func (f Faults) DiskLoss() bool { return f.DiskLossNodes != 0 }

func (f Faults) diskNodes() int {
	if f.DiskLossNodes < 0 {
		return 1
	}
	return f.DiskLossNodes
}
