package harness

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/verity-kafka/verity/lazyfs/control"
)

// faultsFile is where a node's disk-fault rules are copied before `verity-lazyfs fault -set`
// reads them: in the store, beside the daemon's own control files.
const faultsFile = lazyFSStore + "/disk-faults-set.json"

// SetDiskFaults makes node id's lazy filesystem fail or slow the calls rules name (EIO, ENOSPC,
// delays; docs/power-loss.md, Disk faults), replacing any rules in force; the daemon has taken
// them when it returns. The node must run on the lazy filesystem (Spec.PowerLoss) and be
// running: a restart of its daemon ends the rules.
func (c *Cluster) SetDiskFaults(ctx context.Context, id int, rules control.Faults) error {
	n, err := c.lazyNode(id, "setting disk faults on")
	if err != nil {
		return err
	}
	if err := rules.Validate(); err != nil {
		return fmt.Errorf("setting disk faults on node %d: %w", id, err)
	}
	b, err := json.Marshal(rules)
	if err != nil {
		return fmt.Errorf("setting disk faults on node %d: %w", id, err)
	}
	if err := n.container.CopyToContainer(ctx, b, faultsFile, 0o600); err != nil {
		return fmt.Errorf("setting disk faults on node %d: copying the rules in: %w", id, err)
	}
	if out, err := c.execRoot(ctx, n, lazyFSBinary, "fault", "-store", lazyFSStore, "-set", faultsFile); err != nil {
		return fmt.Errorf("setting disk faults on node %d: %w (%s)", id, err, out)
	}
	c.log.Info("disk faults set", "node", id, "rules", string(b))
	return nil
}

// ClearDiskFaults ends the disk faults of node id and returns what they did. A node whose
// daemon restarted since they were set (a power cut, a kill) has none left to clear: its
// status is then the last one, marked cleared by the restart. A node whose broker the faults
// stopped (its container exited) is marked stopped, to be started.
func (c *Cluster) ClearDiskFaults(ctx context.Context, id int) (control.FaultStatus, error) {
	n, err := c.lazyNode(id, "clearing the disk faults of")
	if err != nil {
		return control.FaultStatus{}, err
	}
	st, err := n.container.State(ctx)
	if err != nil {
		return control.FaultStatus{}, fmt.Errorf("clearing the disk faults of node %d: inspecting it: %w", id, err)
	}
	switch {
	case st.Paused:
		return control.FaultStatus{}, fmt.Errorf("clearing the disk faults of node %d: it is paused, and its filesystem keeps them until it runs and they are cleared", id)
	case st.Running:
		if out, err := c.execRoot(ctx, n, lazyFSBinary, "fault", "-store", lazyFSStore, "-clear"); err != nil {
			return control.FaultStatus{}, fmt.Errorf("clearing the disk faults of node %d: %w (%s)", id, err, out)
		}
	case c.nodeState(id) == NodeRunning:
		// Kafka halted, and its daemon with it: a broker stops when its only log directory
		// fails. The node is stopped now, for whoever heals to start it.
		c.log.Warn("node stopped by its disk fault", "node", id, "exit_code", st.ExitCode)
		c.setNodeState(id, NodeStopped)
	}
	return c.DiskFaultStatus(ctx, id)
}

// DiskFaultStatus reads what node id's disk faults did: each rule's hits, its first hit and the
// first paths it hit. It reads the daemon's status file from the container, running or not: a
// broker that a disk fault stopped has taken its daemon with it.
func (c *Cluster) DiskFaultStatus(ctx context.Context, id int) (control.FaultStatus, error) {
	n, err := c.lazyNode(id, "reading the disk faults of")
	if err != nil {
		return control.FaultStatus{}, err
	}
	st := control.FaultStatus{Rules: []control.RuleStatus{}}
	r, err := n.container.CopyFileFromContainer(ctx, lazyFSStore+"/"+control.FaultStatusFile)
	if err != nil {
		if isGone(err) {
			return st, nil
		}
		return st, fmt.Errorf("reading the disk faults of node %d: %w", id, err)
	}
	defer r.Close()
	if err := json.NewDecoder(r).Decode(&st); err != nil {
		return st, fmt.Errorf("reading the disk faults of node %d: %w", id, err)
	}
	return st, nil
}

// lazyNode is node id when the cluster runs on the lazy filesystem; doing names the action for
// the error.
func (c *Cluster) lazyNode(id int, doing string) (*Node, error) {
	if !c.spec.PowerLoss {
		return nil, fmt.Errorf("%s node %d: the cluster runs without the lazy filesystem; start it with Spec.PowerLoss (scenario: power_loss: true)", doing, id)
	}
	return c.node(id)
}
