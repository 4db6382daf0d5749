package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/verity-kafka/verity/kafkaconf"
)

// ErrUpgrade is wrapped by errors about an upgrade the harness refuses before touching a node.
var ErrUpgrade = errors.New("upgrade refused")

// NodeVersion is the Kafka release node id runs: the cluster's, or the one Upgrade moved it to.
func (c *Cluster) NodeVersion(id int) kafkaconf.KafkaVersion {
	c.versionMu.Lock()
	defer c.versionMu.Unlock()
	if v, ok := c.upgraded[id]; ok {
		return v
	}
	return c.spec.KafkaVersion
}

// KafkaVersion is the oldest Kafka release a node of the cluster runs: the one Verity's clients
// speak to, and the one a cluster shape is judged by, while an upgrade is half done.
func (c *Cluster) KafkaVersion() kafkaconf.KafkaVersion {
	c.versionMu.Lock()
	defer c.versionMu.Unlock()
	oldest := kafkaconf.KafkaVersion("")
	for _, m := range c.members {
		v, ok := c.upgraded[m.ID]
		if !ok {
			v = c.spec.KafkaVersion
		}
		if oldest == "" || v.Less(oldest) {
			oldest = v
		}
	}
	return oldest
}

// Upgrade moves node id to Kafka release v as an operator upgrades one node: a clean stop, then
// v's image started on the node's data volume with the same settings, listeners and links. It
// returns once the new process runs (WaitHealthy: once it has rejoined). The replaced
// container's log is kept as logs/node-<id>-<release>.log. Only a newer release is taken: the
// metadata a node wrote may be newer than an older release reads.
func (c *Cluster) Upgrade(ctx context.Context, id int, v kafkaconf.KafkaVersion) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	from := c.NodeVersion(id)
	if !from.Less(v) {
		return fmt.Errorf("%w: node %d runs Kafka %s; an upgrade goes to a newer release than %s", ErrUpgrade, id, from, v)
	}
	if env := os.Getenv("VERITY_KAFKA_IMAGE"); env != "" || c.spec.KafkaImage != "" {
		return fmt.Errorf("%w: the Kafka image is fixed (VERITY_KAFKA_IMAGE or Spec.KafkaImage), so there is no image of %s to move to; unset it", ErrUpgrade, v)
	}
	im, err := c.eng.chooseImages(ctx, Spec{KafkaVersion: v, ToxiproxyImage: c.images.Toxiproxy}, nil)
	if err != nil {
		return fmt.Errorf("upgrading node %d to %s: %w", id, v, err)
	}
	var m member
	for _, x := range c.members {
		if x.ID == id {
			m = x
		}
	}
	if c.nodeState(id) != NodeStopped {
		if err := c.Stop(ctx, id); err != nil {
			return fmt.Errorf("upgrading node %d: %w", id, err)
		}
	}
	if err := c.saveLog(ctx, fmt.Sprintf("node-%d-%s", id, from), n.container); err != nil {
		c.log.Warn("keeping the log of the replaced node", "node", id, "err", err)
	}
	if _, err := c.eng.ContainerRemove(ctx, n.container.GetContainerID(), client.ContainerRemoveOptions{Force: true}); err != nil {
		return fmt.Errorf("upgrading node %d: removing its %s container: %w", id, from, err)
	}
	ctr, err := c.runContainer(ctx, c.nodeRequest(m, n, im.Kafka, im.JMXAgent), true)
	if err != nil {
		err = c.explainStartError(fmt.Sprintf("upgrading node %d to %s", id, v), err)
		// The node must not be left without a container: back on its release, stopped, for
		// the heal to start.
		if rerr := c.recreate(context.WithoutCancel(ctx), m, n, from); rerr != nil {
			return fmt.Errorf("%w; putting back its %s container: %w", err, from, rerr)
		}
		return err
	}
	n.container = ctr
	c.versionMu.Lock()
	c.upgraded[id] = v
	c.versionMu.Unlock()
	c.setNodeState(id, NodeRunning)
	c.log.Info("node upgraded", "node", id, "from", from, "to", v, "image", im.Kafka)
	if err := c.setInbound(id, true); err != nil {
		return err
	}
	if c.spec.PowerLoss {
		return c.lazyFSStarted(ctx, n)
	}
	return nil
}

// recreate makes node n's container again on release v's image, not started.
func (c *Cluster) recreate(ctx context.Context, m member, n *Node, v kafkaconf.KafkaVersion) error {
	im, err := c.eng.chooseImages(ctx, Spec{KafkaVersion: v, ToxiproxyImage: c.images.Toxiproxy}, nil)
	if err != nil {
		return err
	}
	// A failed start may have left a container of the name behind.
	_, _ = c.eng.ContainerRemove(ctx, n.Name, client.ContainerRemoveOptions{Force: true})
	ctr, err := c.runContainer(ctx, c.nodeRequest(m, n, im.Kafka, im.JMXAgent), false)
	if err != nil {
		return err
	}
	n.container = ctr
	c.setNodeState(m.ID, NodeStopped)
	return nil
}

// saveLog writes a container's log into the cluster's log directory as name.log.
func (c *Cluster) saveLog(ctx context.Context, name string, ctr testcontainers.Container) error {
	if ctr == nil {
		return nil
	}
	dir := filepath.Join(c.spec.ArtifactDir, "logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the log directory: %w", err)
	}
	rc, err := ctr.Logs(ctx)
	if err != nil {
		return fmt.Errorf("reading the log of %s: %w", name, err)
	}
	defer rc.Close()
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return fmt.Errorf("saving the log of %s: %w", name, err)
	}
	_, err = io.Copy(f, rc)
	return errors.Join(err, f.Close())
}
