package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	"github.com/verity-kafka/verity/lazyfs/control"
)

// A node started with Spec.PowerLoss runs Kafka on the lazy filesystem (cmd/verity-lazyfs,
// package lazyfs): its data directory is a FUSE mount over a store in the node's data volume, in
// which only what Kafka fsynced is durable. PowerCut marks the store and SIGKILLs the node; the
// filesystem drops every write that was not durable when the node starts again, before Kafka
// does, as a power cut would have. A node killed without the mark keeps everything it wrote, as
// a crashed process on a live machine does.
const (
	lazyFSBinary = "/usr/local/bin/verity-lazyfs"
	lazyFSStore  = "/var/lib/verity-lazyfs"
	// lazyFSUser is the Kafka image's own user; the filesystem runs as root and Kafka as this.
	lazyFSUser = "appuser"
)

// Drop is what a node's power cut lost: the files and bytes written that no fsync (of the file,
// or of its directory for a name) had made durable.
type Drop struct {
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
}

// lazyFSContainer changes a node's container request so that its data directory is the lazy
// filesystem: the data volume holds the store, the data directory is an empty mount point, and
// the container runs verity-lazyfs as root (FUSE needs /dev/fuse and CAP_SYS_ADMIN), which
// mounts and then runs the image's own command as the image's user.
func (s Spec) lazyFSContainer(req *testcontainers.ContainerRequest, volume string) {
	req.User = "root"
	req.Entrypoint = []string{lazyFSBinary, "run", "-mount", dataDir, "-store", lazyFSStore, "-user", lazyFSUser, "--"}
	req.Cmd = []string{"/etc/kafka/docker/run"}
	req.HostConfigModifier = func(hc *container.HostConfig) {
		hc.Binds = append(hc.Binds, volume+":"+lazyFSStore)
		if s.LazyFSBinary != "" {
			hc.Binds = append(hc.Binds, s.LazyFSBinary+":"+lazyFSBinary+":ro")
		}
		hc.Tmpfs = map[string]string{dataDir: "", "/etc/kafka/secrets": "", "/mnt/shared/config": ""}
		hc.CapAdd = append(hc.CapAdd, "SYS_ADMIN")
		hc.Devices = append(hc.Devices, container.DeviceMapping{PathOnHost: "/dev/fuse", PathInContainer: "/dev/fuse", CgroupPermissions: "rwm"})
		hc.SecurityOpt = append(hc.SecurityOpt, "apparmor=unconfined")
	}
}

// PowerCut is a power failure of node id: every write of its that no fsync made durable is
// lost. The node is SIGKILLed; it loses the writes when it is started again (Start), which
// records what was dropped (Dropped). The cluster must have been started with Spec.PowerLoss.
func (c *Cluster) PowerCut(ctx context.Context, id int) error {
	if !c.spec.PowerLoss {
		return fmt.Errorf("cutting the power of node %d: the cluster runs without the lazy filesystem; start it with Spec.PowerLoss (scenario: power_loss: true)", id)
	}
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if st := c.nodeState(id); st == NodeStopped {
		return fmt.Errorf("cutting the power of node %d: it is stopped; a power cut hits a running node", id)
	} else if st == NodePaused {
		if err := c.Resume(ctx, id); err != nil {
			return fmt.Errorf("cutting the power of node %d: resuming it first: %w", id, err)
		}
	}
	if out, err := c.execRoot(ctx, n, lazyFSBinary, "cut", "-store", lazyFSStore); err != nil {
		return fmt.Errorf("cutting the power of node %d: marking its store: %w (%s)", id, err, out)
	}
	c.mu.Lock()
	c.cutPending[id] = true
	delete(c.drops, id)
	c.mu.Unlock()
	if err := c.Kill(ctx, id); err != nil {
		return fmt.Errorf("cutting the power of node %d: %w", id, err)
	}
	return nil
}

// PowerLoss tells whether the nodes run on the lazy filesystem (Spec.PowerLoss).
func (c *Cluster) PowerLoss() bool { return c.spec.PowerLoss }

// Dropped is what node id's last power cut lost, once the node has started again after it.
func (c *Cluster) Dropped(id int) (Drop, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.drops[id]
	return d, ok
}

// lazyFSStarted waits, after a start, until node n's filesystem is mounted and has finished its
// preparation (dropped what a power cut lost, or made durable what a kill kept). After a power
// cut it remembers the figures of the drop; the store's mark is removed only after they are
// written, so its absence means they are this start's.
func (c *Cluster) lazyFSStarted(ctx context.Context, n *Node) error {
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	probe := fmt.Sprintf("test -e %s/%s && echo cutting; grep -q ' %s fuse' /proc/mounts && echo mounted; exit 0",
		lazyFSStore, control.CutMark, dataDir)
	var last string
	err := poll(wctx, 100*time.Millisecond, func() (bool, error) {
		out, err := c.execRoot(wctx, n, "/bin/sh", "-c", probe)
		last = out
		return err == nil && out == "mounted\n", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for node %d's lazy filesystem (last answer %q): %w", n.ID, last, err)
	}
	c.mu.Lock()
	cut := c.cutPending[n.ID]
	delete(c.cutPending, n.ID)
	c.mu.Unlock()
	if !cut {
		return nil
	}
	out, err := c.execRoot(ctx, n, "cat", lazyFSStore+"/"+control.DropFile)
	if err != nil {
		return fmt.Errorf("reading node %d's drop figures: %w (%s)", n.ID, err, out)
	}
	var rec control.Drop
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		return fmt.Errorf("reading node %d's drop figures %q: %w", n.ID, out, err)
	}
	d := Drop{Files: rec.Files, Bytes: rec.Bytes}
	c.mu.Lock()
	c.drops[n.ID] = d
	c.mu.Unlock()
	c.log.Info("power cut: writes dropped", "node", n.ID, "files", d.Files, "bytes", d.Bytes)
	return nil
}

// Sync makes durable everything node id's filesystem holds, as the kernel's writeback would on
// a machine left running (sync(2)); a power cut then loses only what is written after it.
func (c *Cluster) Sync(ctx context.Context, id int) error {
	if !c.spec.PowerLoss {
		return fmt.Errorf("syncing node %d: the cluster runs without the lazy filesystem; start it with Spec.PowerLoss", id)
	}
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if out, err := c.execRoot(ctx, n, lazyFSBinary, "sync", "-store", lazyFSStore); err != nil {
		return fmt.Errorf("syncing node %d: %w (%s)", id, err, out)
	}
	return nil
}

// syncAll syncs every node, all at once: it sits between a ready cluster and its first use.
func (c *Cluster) syncAll(ctx context.Context) error {
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() { errs[i] = c.Sync(ctx, m.ID) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// execRoot runs cmd as root in node n's container and returns its output; a non-zero exit is
// an error.
func (c *Cluster) execRoot(ctx context.Context, n *Node, cmd ...string) (string, error) {
	code, r, err := n.container.Exec(ctx, cmd, tcexec.Multiplexed(), tcexec.WithUser("root"))
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return string(b), errors.New("exit code " + fmt.Sprint(code))
	}
	return string(b), nil
}
