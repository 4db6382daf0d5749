package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// stopTimeout bounds a graceful stop: Kafka's controlled shutdown moves leadership away first,
// which takes a few seconds; after this the engine sends SIGKILL.
const stopTimeout = 60 * time.Second

func (c *Cluster) node(id int) (*Node, error) {
	n := c.nodes[id]
	if n == nil || n.container == nil {
		return nil, fmt.Errorf("no node %d in this cluster (nodes: brokers %v, controllers %v)", id, c.Brokers(), c.Controllers())
	}
	return n, nil
}

// Kill sends SIGKILL to node id's broker process (a crash: nothing is flushed) and returns once
// the container has stopped. Its data stays for Start.
func (c *Cluster) Kill(ctx context.Context, id int) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if c.nodeState(id) == NodePaused {
		// A frozen process cannot take a signal until it is thawed.
		if _, err := c.eng.ContainerUnpause(ctx, n.container.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
			return fmt.Errorf("killing node %d: unpausing it first: %w", id, err)
		}
	}
	// The proxies refuse first, while the upstream still answers: once the container is gone a
	// dial can hang inside the proxy's accept loop, and disabling that proxy then hangs too.
	// Connections drop at the kill either way.
	c.setKilled(id, true)
	if err := c.setInbound(id, false); err != nil {
		return fmt.Errorf("killing node %d: %w", id, err)
	}
	if _, err := c.eng.ContainerKill(ctx, n.container.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		c.setKilled(id, false)
		return fmt.Errorf("killing node %d: %w", id, errors.Join(err, c.setInbound(id, true)))
	}
	c.setNodeState(id, NodeStopped)
	return c.waitContainer(ctx, n, false)
}

// Stop sends SIGTERM (a clean shutdown) and waits until the node has stopped. The links into it
// keep accepting: the broker closes its listeners itself and its controlled shutdown needs its
// peers, and a proxy disabled once its container is gone can hang (see Kill); a connection
// through one waits for the node's start.
//
// When ctx ends first, the engine goes on stopping the node (and kills it at the timeout), so
// a node the harness took for running would go down later and nothing would start it again
// (seen: a stop under a controller outage outlived its run, and the heal left the broker down).
// The stop is finished as a kill instead, so that the node is down, known to be, and the next
// Start or Restore brings it back.
func (c *Cluster) Stop(ctx context.Context, id int) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	secs := int(stopTimeout.Seconds())
	if _, err := c.eng.ContainerStop(ctx, n.container.GetContainerID(), client.ContainerStopOptions{Timeout: &secs}); err != nil {
		if ctx.Err() == nil {
			return fmt.Errorf("stopping node %d: %w", id, err)
		}
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if kerr := c.Kill(kctx, id); kerr != nil {
			// The clean stop may have finished in the meantime: then the kill finds nothing
			// running, and the node is down all the same.
			if in, ierr := c.eng.ContainerInspect(kctx, n.container.GetContainerID(), client.ContainerInspectOptions{}); ierr == nil &&
				in.Container.State != nil && !in.Container.State.Running {
				c.setNodeState(id, NodeStopped)
				return fmt.Errorf("stopping node %d: %w (it stopped meanwhile)", id, err)
			}
			return fmt.Errorf("stopping node %d: %w; killing it instead: %w", id, err, kerr)
		}
		return fmt.Errorf("stopping node %d: %w (killed it instead)", id, err)
	}
	c.setNodeState(id, NodeStopped)
	return nil
}

// Start starts a stopped or killed node with the data it had, and returns once its process runs
// (not once it has rejoined: see WaitHealthy and WaitPartition).
func (c *Cluster) Start(ctx context.Context, id int) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if err := c.startContainer(ctx, n.container.GetContainerID()); err != nil {
		return fmt.Errorf("starting node %d: %w", id, err)
	}
	c.setNodeState(id, NodeRunning)
	c.setKilled(id, false)
	if err := c.setInbound(id, true); err != nil {
		return err
	}
	if err := c.waitContainer(ctx, n, true); err != nil {
		return err
	}
	if c.spec.PowerLoss {
		return c.lazyFSStarted(ctx, n)
	}
	return nil
}

// setKilled records whether node id is killed and not started since: the links into it refuse
// then (acceptsWhen).
func (c *Cluster) setKilled(id int, killed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.killed[id] = killed
}

// setInbound applies the rule of acceptsWhen to the proxies of every link into node id, up
// being whether the node is (about to be) up: on a kill they refuse, on a start they accept
// again unless their traffic is cut to refuse.
//
// A killed node's proxies must refuse: Toxiproxy dials the upstream inside its accept loop,
// without a timeout, and a dial to a container that is gone can hang until the container is
// back; meanwhile every new connection to that proxy completes its handshake in the kernel's
// backlog and then nothing answers. Clients would see a black hole where a crashed process on
// a live host refuses at once, and the run would measure the clients' handling of the wrong
// fault. A clean stop keeps its proxies (see Stop).
func (c *Cluster) setInbound(id int, up bool) error {
	var errs []error
	for _, l := range c.Links() {
		if l.To != id {
			continue
		}
		errs = append(errs, c.eachProxy(l, "", "switching the proxies of", func(lt LinkTraffic, p *toxiproxy.Proxy) error {
			return c.applyRule(lt, p, up)
		}))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node %d: %w", id, err)
	}
	return nil
}

// Restart stops node id cleanly (SIGTERM) and starts it again; hard kills it (SIGKILL) instead.
func (c *Cluster) Restart(ctx context.Context, id int, hard bool) error {
	stop := c.Stop
	if hard {
		stop = c.Kill
	}
	if err := stop(ctx, id); err != nil {
		return err
	}
	return c.Start(ctx, id)
}

// Pause freezes every process of node id (cgroup freezer): connections stay open, nothing answers.
func (c *Cluster) Pause(ctx context.Context, id int) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	// A pause right after a resume can find the container still frozen: the engine answers
	// an unpause before its freezer has thawed (seen in make test: "is already paused" on a
	// pause 10 ms after the heal). The node is paused then, as asked.
	//
	// On a loaded machine the kernel's freezer can fail to freeze every process of the container
	// before runc gives up ("unable to freeze", seen in a loaded make test); runc thaws the
	// cgroup again then, so the pause is asked again, a few times, a moment apart.
	for attempt := 1; ; attempt++ {
		_, err := c.eng.ContainerPause(ctx, n.container.GetContainerID(), client.ContainerPauseOptions{})
		if err == nil || strings.Contains(err.Error(), "is already paused") {
			break
		}
		if !strings.Contains(err.Error(), "unable to freeze") || attempt == freezeAttempts {
			return fmt.Errorf("pausing node %d: %w", id, err)
		}
		c.log.Warn("the engine could not freeze the node; pausing it again", "node", id, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("pausing node %d: %w (after: %w)", id, ctx.Err(), err)
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
	c.mu.Lock()
	n.pausedAt = time.Now()
	c.mu.Unlock()
	c.setNodeState(id, NodePaused)
	return nil
}

// freezeAttempts bounds how often Pause asks again after the engine failed to freeze a node.
const freezeAttempts = 5

// pauseSettle is how long after a pause the engine may still learn of it. Docker marks a
// container paused when the pause call returns and again when containerd's "paused" event
// reaches it, asynchronously; an unpause that lands between the two is undone by the late
// event, and the engine then takes a running container for paused and refuses both pause and
// unpause ("cannot resume a running process", seen in make test with a resume 10 ms after a
// pause). The engine offers no signal that the event was handled, so a resume waits out this
// margin instead; real pauses last seconds, and only tests resume sooner.
const pauseSettle = 300 * time.Millisecond

// Resume thaws a paused node.
func (c *Cluster) Resume(ctx context.Context, id int) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	wait := pauseSettle - time.Since(n.pausedAt)
	c.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("resuming node %d: %w", id, ctx.Err())
		case <-t.C:
		}
	}
	if _, err := c.eng.ContainerUnpause(ctx, n.container.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("resuming node %d: %w", id, err)
	}
	c.setNodeState(id, NodeRunning)
	return nil
}

// WipeDisk is permanent disk loss: node id is killed, everything in its data directory is
// deleted, and it is started again, empty (it formats its storage anew with the cluster's id and
// must refill from the leaders).
func (c *Cluster) WipeDisk(ctx context.Context, id int) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if c.nodeState(id) != NodeStopped {
		if err := c.Kill(ctx, id); err != nil {
			return fmt.Errorf("wiping node %d: %w", id, err)
		}
	}
	if err := c.wipeVolume(ctx, n); err != nil {
		return fmt.Errorf("wiping node %d: %w", id, err)
	}
	return c.Start(ctx, id)
}

// wipeVolume empties a node's data volume with a short-lived container of the Kafka image (the
// node's own container is stopped and cannot run anything).
func (c *Cluster) wipeVolume(ctx context.Context, n *Node) error {
	created, err := c.eng.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: n.Name + "-wipe",
		Config: &container.Config{
			Image:      c.images.Kafka,
			User:       "root",
			Entrypoint: []string{"/bin/sh", "-c", "find /data -mindepth 1 -delete && ls -A /data | wc -l"},
			Labels:     c.runLabels(),
		},
		// tmpfs over the image's declared volumes, as on the nodes: no anonymous volume.
		HostConfig: &container.HostConfig{Binds: []string{n.Volume + ":/data"},
			Tmpfs: map[string]string{dataDir: "", "/etc/kafka/secrets": "", "/mnt/shared/config": ""}},
	})
	if err != nil {
		return fmt.Errorf("creating the wipe container: %w", err)
	}
	id := created.ID
	defer func() {
		_, _ = c.eng.ContainerRemove(context.WithoutCancel(ctx), id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	}()
	if _, err := c.eng.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("starting the wipe container: %w", err)
	}
	w := c.eng.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case r := <-w.Result:
		if r.StatusCode != 0 {
			return fmt.Errorf("the wipe container exited with %d", r.StatusCode)
		}
	case err := <-w.Error:
		return fmt.Errorf("waiting for the wipe container: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// waitContainer polls the engine until node n's container is (not) running.
func (c *Cluster) waitContainer(ctx context.Context, n *Node, running bool) error {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := poll(wctx, 50*time.Millisecond, func() (bool, error) {
		st, err := n.container.State(wctx)
		if err != nil {
			return false, err
		}
		return st.Running == running, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for node %d to be %s: %w", n.ID, map[bool]string{true: "running", false: "stopped"}[running], err)
	}
	return nil
}

// Restore undoes every fault: heals every link, resumes paused nodes and starts stopped ones
// (stopped services too, waiting until they answer). It does not wait for the cluster to be
// healthy again (WaitHealthy does).
func (c *Cluster) Restore(ctx context.Context) error {
	// Nodes first: HealAll leaves the links into a killed node refusing (acceptsWhen), and the
	// starts bring them back.
	err := c.noteExited(ctx)
	for id, s := range c.NodeStates() {
		switch s {
		case NodePaused:
			err = errors.Join(err, c.Resume(ctx, id))
		case NodeStopped:
			err = errors.Join(err, c.Start(ctx, id))
		}
	}
	err = errors.Join(err, c.restoreServices(ctx), c.HealAll(ctx))
	if err != nil {
		return fmt.Errorf("restoring the cluster: %w", err)
	}
	return nil
}

// noteExited marks stopped the nodes the harness believes running whose containers have exited
// on their own (a broker halts when a disk fault fails its only log directory), so that Restore
// starts them again.
func (c *Cluster) noteExited(ctx context.Context) error {
	var err error
	for id, s := range c.NodeStates() {
		n, nerr := c.node(id)
		if s != NodeRunning || nerr != nil || n.container == nil {
			continue
		}
		code, exited, serr := exitedOnItsOwn(ctx, n)
		if serr != nil {
			err = errors.Join(err, serr)
			continue
		}
		if exited {
			c.log.Warn("node exited on its own; starting it again", "node", id, "exit_code", code)
			c.setNodeState(id, NodeStopped)
		}
	}
	return err
}

// NodeLog returns what node id has printed so far (its broker log).
func (c *Cluster) NodeLog(ctx context.Context, id int) (string, error) {
	n, err := c.node(id)
	if err != nil {
		return "", err
	}
	rc, err := n.container.Logs(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the log of node %d: %w", id, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return "", fmt.Errorf("reading the log of node %d: %w", id, err)
	}
	return string(b), nil
}
