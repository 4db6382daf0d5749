package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/verity-kafka/verity/kafkaconf"
)

// Cluster is a running Kafka cluster. Its methods are safe for concurrent use.
type Cluster struct {
	engineInfo EngineInfo
	spec       Spec
	log        *slog.Logger
	eng        *engine
	images     Images
	members    []member
	labels     map[string]string

	core  *testcontainers.DockerNetwork
	links map[int]*testcontainers.DockerNetwork

	svc serviceSet // the side-effect services (services.go)

	clientProxy *proxyBox         // proxy-client: client->node links
	nodeProxies map[int]*proxyBox // proxy-i: links from node i
	nodes       map[int]*Node
	bootstrap   []string // host addresses of the client proxies

	clientHostPorts map[int]int    // broker id -> host port of client->id
	metricsAddrs    map[int]string // node id -> host address of its JMX agent (through proxy-client)
	metricsHTTP     *http.Client

	adminOnce sync.Once
	admin     *adminClient
	adminErr  error
	describer *kgo.Client // DescribeTopicPartitions (admin.go); under mu

	mu    sync.Mutex
	state map[int]NodeState
	cuts  map[LinkTraffic]CutKind // every traffic of every link cut, and how
	// killed: nodes killed and not started since, whose inbound links refuse (see Kill).
	killed map[int]bool
	// cutPending: nodes whose power was cut and that have not started since; drops: what
	// the last power cut of a node lost (both for Spec.PowerLoss clusters).
	cutPending map[int]bool
	drops      map[int]Drop

	// upgraded: the release of each node Upgrade moved off the spec's, under its own lock:
	// KafkaVersion is asked for by SaramaConfig, which the admin client calls under mu.
	versionMu sync.Mutex
	upgraded  map[int]kafkaconf.KafkaVersion

	closeOnce  sync.Once
	closeErr   error
	stopSignal func()

	// ReadyIn is how long Start took from its call to a ready cluster.
	ReadyIn time.Duration
}

// Node is one Kafka process in its container.
type Node struct {
	ID        int
	Role      Role
	Name      string // container name
	Volume    string // data volume name
	container testcontainers.Container
	pausedAt  time.Time // when Pause last returned (Resume waits out pauseSettle after it); under Cluster.mu
}

// NodeState is what the harness last did to a node.
type NodeState string

const (
	NodeRunning NodeState = "running"
	NodeStopped NodeState = "stopped" // killed or stopped; data kept
	NodePaused  NodeState = "paused"
)

type proxyBox struct {
	name      string
	container testcontainers.Container
	api       *toxiproxy.Client
	apiAddr   string
}

// Start brings up a cluster as spec says and returns when it is ready: every broker registered
// and a probe topic with RF = number of brokers has its full ISR. On any error everything already
// started is removed, and the error says what to do.
func Start(ctx context.Context, spec Spec) (_ *Cluster, err error) {
	began := time.Now()
	spec = spec.withDefaults()
	if err := spec.validate(); err != nil {
		return nil, err
	}
	log := spec.Logger.With("run", spec.RunID)
	if spec.ArtifactDir == "" {
		spec.ArtifactDir = filepath.Join(os.TempDir(), "verity-"+spec.RunID)
	}
	eng, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	images, err := eng.chooseImages(ctx, spec, log)
	if err != nil {
		_ = eng.Close()
		return nil, err
	}
	c := &Cluster{
		spec: spec, log: log, eng: eng, images: images, members: spec.members(), engineInfo: eng.info(ctx),
		labels:      map[string]string{Label: spec.RunID, OwnerLabel: thisOwner()},
		links:       map[int]*testcontainers.DockerNetwork{},
		nodeProxies: map[int]*proxyBox{},
		nodes:       map[int]*Node{},
		state:       map[int]NodeState{},
		cuts:        map[LinkTraffic]CutKind{},
		killed:      map[int]bool{},
		cutPending:  map[int]bool{},
		drops:       map[int]Drop{},
		upgraded:    map[int]kafkaconf.KafkaVersion{},
		svc:         newServiceSet(),
	}
	if !spec.NoSignalCleanup {
		c.cleanupOnSignal()
	}
	defer func() {
		if err != nil {
			// Remove whatever was started, with a context that the caller's cancellation
			// (Ctrl-C, a deadline) does not also cut short.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			if cerr := c.Close(cctx); cerr != nil {
				log.Error("cleaning up after a failed start", "err", cerr)
			}
		}
	}()

	log.Info("starting cluster", "nodes", spec.Nodes, "dedicated_controllers", spec.DedicatedControllers,
		"kafka", spec.KafkaVersion, "kafka_image", images.Kafka, "features", spec.Features.String(), "deviations", spec.Deviations())
	if err := c.createNetworks(ctx); err != nil {
		return nil, err
	}
	if err := c.startProxies(ctx); err != nil {
		return nil, err
	}
	if err := c.startNodesAndServices(ctx); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, spec.ReadyTimeout)
	defer cancel()
	if err := c.waitReady(rctx); err != nil {
		return nil, err
	}
	if err := c.waitServices(rctx); err != nil {
		return nil, err
	}
	if err := c.SetFeatures(rctx, spec.Features); err != nil {
		return nil, err
	}
	if spec.PowerLoss && !spec.KeepBootUnsynced {
		if err := c.syncAll(ctx); err != nil {
			return nil, err
		}
	}
	c.ReadyIn = time.Since(began)
	log.Info("cluster ready", "in", c.ReadyIn.Round(time.Millisecond), "bootstrap", c.bootstrap)
	return c, nil
}

// RunID is the id that labels every resource of the cluster.
func (c *Cluster) RunID() string { return c.spec.RunID }

// Spec is the spec the cluster was started with, defaults filled in; its KafkaVersion is the
// oldest release a node runs now (KafkaVersion), which Upgrade moves.
func (c *Cluster) Spec() Spec {
	s := c.spec
	s.KafkaVersion = c.KafkaVersion()
	return s
}

// Images are the images the cluster runs.
func (c *Cluster) Images() Images { return c.images }

// Engine is what the Docker engine said, at Start, of the machine the nodes run on.
func (c *Cluster) Engine() EngineInfo { return c.engineInfo }

// Bootstrap is the list of client addresses (host:port on this machine), one per broker.
func (c *Cluster) Bootstrap() []string { return append([]string(nil), c.bootstrap...) }

// Brokers lists the broker ids, ascending.
func (c *Cluster) Brokers() []int {
	var ids []int
	for _, m := range c.members {
		if m.isBroker() {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// Controllers lists the controller ids (the combined nodes, or the dedicated controllers).
func (c *Cluster) Controllers() []int {
	var ids []int
	for _, m := range c.members {
		if m.isController() {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// Node returns the node with id, or nil.
func (c *Cluster) Node(id int) *Node { return c.nodes[id] }

// Deviations lists the cluster's departures from Kafka's defaults.
func (c *Cluster) Deviations() []string { return c.spec.Deviations() }

// ArtifactDir is where Close saves node logs.
func (c *Cluster) ArtifactDir() string { return c.spec.ArtifactDir }

func (c *Cluster) createNetworks(ctx context.Context) error {
	nw, err := tcnetwork.New(ctx, tcnetwork.WithLabels(c.runLabels()))
	if err != nil {
		return fmt.Errorf("creating the core network: %w", err)
	}
	c.core = nw
	for _, m := range c.members {
		nw, err := tcnetwork.New(ctx, tcnetwork.WithLabels(c.runLabels()))
		if err != nil {
			return fmt.Errorf("creating the link network of node %d: %w", m.ID, err)
		}
		c.links[m.ID] = nw
	}
	return nil
}

func (c *Cluster) containerName(what string) string { return "verity-" + c.spec.RunID + "-" + what }

// startProxies starts proxy-client and one proxy container per member, in parallel, then creates
// their proxies. proxy-client comes first in effect: the host ports it publishes are what the
// brokers advertise to clients, so they must be known before any node starts.
func (c *Cluster) startProxies(ctx context.Context) error {
	type result struct {
		id  int // 0 = client
		box *proxyBox
		err error
	}
	ch := make(chan result)
	starts := 0
	start := func(id int, req testcontainers.ContainerRequest) {
		starts++
		go func() {
			box, err := c.startProxy(ctx, req)
			ch <- result{id, box, err}
		}()
	}
	var exposed []string
	for _, m := range c.members {
		if m.isBroker() {
			exposed = append(exposed, fmt.Sprintf("%d/tcp", clientProxyBase+m.ID))
		}
		if c.images.JMXAgent != "" {
			exposed = append(exposed, fmt.Sprintf("%d/tcp", metricsProxyBase+m.ID))
		}
	}
	exposed = append(exposed, c.serviceExposed()...)
	start(0, testcontainers.ContainerRequest{
		Name:           c.containerName("proxy-client"),
		Networks:       []string{c.core.Name},
		NetworkAliases: map[string][]string{c.core.Name: {"proxy-client"}},
		ExposedPorts:   exposed,
	})
	for _, m := range c.members {
		var aliases []string
		for _, j := range c.members {
			aliases = append(aliases, fmt.Sprintf("kafka-%d", j.ID))
		}
		link := c.links[m.ID].Name
		start(m.ID, testcontainers.ContainerRequest{
			Name:           c.containerName(fmt.Sprintf("proxy-%d", m.ID)),
			Networks:       []string{c.core.Name, link},
			NetworkAliases: map[string][]string{c.core.Name: {fmt.Sprintf("proxy-%d", m.ID)}, link: aliases},
		})
	}
	var errs []error
	for range starts {
		r := <-ch
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		if r.id == 0 {
			c.clientProxy = r.box
		} else {
			c.nodeProxies[r.id] = r.box
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	// The client proxies: host port of 9000+j -> node-j:9092.
	hostPorts := map[int]int{}
	var clientProxies []toxiproxy.Proxy
	for _, m := range c.members {
		if !m.isBroker() {
			continue
		}
		p, err := c.clientProxy.container.MappedPort(ctx, fmt.Sprintf("%d/tcp", clientProxyBase+m.ID))
		if err != nil {
			return fmt.Errorf("reading the host port for client->%d: %w", m.ID, err)
		}
		hostPorts[m.ID] = int(p.Num())
		c.bootstrap = append(c.bootstrap, net.JoinHostPort(c.eng.host, strconv.Itoa(int(p.Num()))))
		clientProxies = append(clientProxies, toxiproxy.Proxy{
			Name: proxyName(ClientEndpoint, m.ID, "client"), Enabled: true,
			Listen:   fmt.Sprintf("0.0.0.0:%d", clientProxyBase+m.ID),
			Upstream: fmt.Sprintf("node-%d:%d", m.ID, clientPort),
		})
	}
	metricsProxies, err := c.metricsProxies(ctx)
	if err != nil {
		return err
	}
	serviceProxies, err := c.serviceProxies(ctx)
	if err != nil {
		return err
	}
	if _, err := c.clientProxy.api.Populate(slices.Concat(clientProxies, metricsProxies, serviceProxies)); err != nil {
		return fmt.Errorf("creating the client proxies: %w", err)
	}
	c.clientHostPorts = hostPorts

	// proxy-i: i->j for every member j (self-links too: a combined node reaches its own quorum
	// address through its own proxy).
	for _, from := range c.members {
		var ps []toxiproxy.Proxy
		for _, to := range c.members {
			if to.isBroker() && from.isBroker() {
				ps = append(ps, toxiproxy.Proxy{
					Name: proxyName(from.ID, to.ID, "internal"), Enabled: true,
					Listen:   fmt.Sprintf("0.0.0.0:%d", internalProxyBase+to.ID),
					Upstream: fmt.Sprintf("node-%d:%d", to.ID, internalPort),
				})
			}
			if to.isController() {
				ps = append(ps, toxiproxy.Proxy{
					Name: proxyName(from.ID, to.ID, "controller"), Enabled: true,
					Listen:   fmt.Sprintf("0.0.0.0:%d", controlProxyBase+to.ID),
					Upstream: fmt.Sprintf("node-%d:%d", to.ID, controllerPort),
				})
			}
		}
		if _, err := c.nodeProxies[from.ID].api.Populate(ps); err != nil {
			return fmt.Errorf("creating the proxies of node %d: %w", from.ID, err)
		}
	}
	return nil
}

func (c *Cluster) startProxy(ctx context.Context, req testcontainers.ContainerRequest) (*proxyBox, error) {
	req.Image = c.images.Toxiproxy
	req.Labels = c.runLabels()
	req.WaitingFor = wait.ForHTTP("/version").WithPort(fmt.Sprintf("%d/tcp", toxiAPIPort)).
		WithForcedIPv4LocalHost().WithStartupTimeout(time.Minute)
	c.publish(&req, fmt.Sprintf("%d/tcp", toxiAPIPort))
	ctr, err := c.runContainer(ctx, req, true)
	if err != nil {
		return nil, c.explainStartError("starting "+req.Name, err)
	}
	p, err := ctr.MappedPort(ctx, fmt.Sprintf("%d/tcp", toxiAPIPort))
	if err != nil {
		return nil, fmt.Errorf("reading the Toxiproxy API port of %s: %w", req.Name, err)
	}
	addr := net.JoinHostPort(c.eng.host, strconv.Itoa(int(p.Num())))
	return &proxyBox{name: req.Name, container: ctr, api: toxiproxy.NewClient(addr), apiAddr: addr}, nil
}

func (c *Cluster) startNodes(ctx context.Context) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, m := range c.members {
		node := &Node{ID: m.ID, Role: m.Role, Name: c.containerName(fmt.Sprintf("node-%d", m.ID)),
			Volume: c.containerName(fmt.Sprintf("node-%d-data", m.ID))}
		if _, err := c.eng.VolumeCreate(ctx, client.VolumeCreateOptions{Name: node.Volume, Labels: c.runLabels()}); err != nil {
			return fmt.Errorf("creating the data volume of node %d: %w", m.ID, err)
		}
		c.nodes[m.ID] = node
		wg.Go(func() {
			ctr, err := c.runContainer(ctx, c.nodeRequest(m, node, c.images.Kafka, c.images.JMXAgent), true)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, c.explainStartError(fmt.Sprintf("starting node %d", m.ID), err))
				return
			}
			node.container = ctr
			c.state[m.ID] = NodeRunning
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// nodeRequest is the container of member m (node n) running image, whose JMX agent is at
// jmxAgent ("": none).
func (c *Cluster) nodeRequest(m member, n *Node, image, jmxAgent string) testcontainers.ContainerRequest {
	env := c.spec.nodeEnv(m, c.eng.host, c.clientHostPorts)
	if jmxAgent != "" {
		env["KAFKA_OPTS"] = jmxAgentOpts(jmxAgent)
	}
	req := testcontainers.ContainerRequest{
		Image:          image,
		Name:           n.Name,
		Labels:         c.runLabels(),
		Env:            env,
		Networks:       []string{c.core.Name, c.links[m.ID].Name},
		NetworkAliases: map[string][]string{c.core.Name: {fmt.Sprintf("node-%d", m.ID)}},
		HostConfigModifier: func(hc *container.HostConfig) {
			// Named, labelled volume for the data (kept across stop/start, wiped by
			// WipeDisk); tmpfs over the image's other volumes so that no anonymous,
			// unlabelled volume is ever created.
			hc.Binds = append(hc.Binds, n.Volume+":"+dataDir)
			hc.Tmpfs = map[string]string{"/etc/kafka/secrets": "", "/mnt/shared/config": ""}
		},
	}
	if c.spec.PowerLoss {
		c.spec.lazyFSContainer(&req, n.Volume)
	}
	c.publish(&req, fmt.Sprintf("%d/tcp", clientPort))
	return req
}

// explainStartError adds what to do to the engine's errors that have a known cause.
func (c *Cluster) explainStartError(what string, err error) error {
	msg := err.Error()
	switch {
	case portClash(err):
		return fmt.Errorf("%s: a host port is already in use (%w); stop whatever holds it or run `make clean` to remove leftover Verity containers", what, err)
	case strings.Contains(msg, "No such image") || strings.Contains(msg, "pull access denied") || strings.Contains(msg, "manifest unknown"):
		return fmt.Errorf("%s: %w: %v; run `make images`", what, ErrImage, err)
	case strings.Contains(msg, "Cannot connect to the Docker daemon") || strings.Contains(msg, "connection refused"):
		return fmt.Errorf("%s: %w (%v); start it with `make engine`", what, ErrEngine, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// waitReady polls until every broker is registered and a probe topic with RF = brokers has its
// full ISR, or ctx ends. A node container that exits meanwhile ends the wait at once.
func (c *Cluster) waitReady(ctx context.Context) error {
	brokers := c.Brokers()
	const probe = "__verity_probe"
	last := "no answer from any broker yet"
	err := poll(ctx, 500*time.Millisecond, func() (bool, error) {
		if err := c.checkNodesAlive(ctx); err != nil {
			return false, err
		}
		a, err := c.adminClient()
		if err != nil {
			last = err.Error()
			return false, nil
		}
		registered, err := a.registeredBrokers()
		if err != nil || len(registered) < len(brokers) {
			last = fmt.Sprintf("%d of %d brokers registered (%v)", len(registered), len(brokers), err)
			return false, nil
		}
		if err := a.createTopic(TopicSpec{Name: probe, Partitions: 1, RF: len(brokers)}); err != nil {
			last = "creating the probe topic: " + err.Error()
			return false, nil
		}
		parts, err := c.describe(ctx, probe)
		if err != nil || len(parts) == 0 {
			last = fmt.Sprintf("describing the probe topic: %v", err)
			return false, nil
		}
		for _, p := range parts {
			if len(p.ISR) < len(brokers) {
				last = fmt.Sprintf("probe topic ISR %v of %d", p.ISR, len(brokers))
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("cluster not ready within %s (last: %s); node logs will be in %s; the machine may be overloaded: raise Spec.ReadyTimeout or run fewer things at once",
				c.spec.ReadyTimeout, last, filepath.Join(c.spec.ArtifactDir, "logs"))
		}
		return fmt.Errorf("waiting for the cluster to be ready: %w", err)
	}
	return nil
}

// checkNodesAlive fails when a node the harness believes running has exited on its own.
func (c *Cluster) checkNodesAlive(ctx context.Context) error {
	for _, n := range c.nodes {
		if c.nodeState(n.ID) != NodeRunning || n.container == nil {
			continue
		}
		code, exited, err := exitedOnItsOwn(ctx, n)
		if err != nil {
			return err
		}
		if exited {
			return fmt.Errorf("node %d exited (code %d) before the cluster was ready; last log lines:\n%s",
				n.ID, code, c.tailLog(ctx, n.container, 15))
		}
	}
	return nil
}

// exitedOnItsOwn says whether node n's container has stopped (not paused), and its exit code;
// the caller knows whether the harness stopped it.
func exitedOnItsOwn(ctx context.Context, n *Node) (code int, exited bool, err error) {
	st, err := n.container.State(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("inspecting node %d: %w", n.ID, err)
	}
	return st.ExitCode, !st.Running && !st.Paused, nil
}

func (c *Cluster) tailLog(ctx context.Context, ctr testcontainers.Container, lines int) string {
	rc, err := ctr.Logs(ctx)
	if err != nil {
		return "(log unavailable: " + err.Error() + ")"
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

func (c *Cluster) nodeState(id int) NodeState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state[id]
}

func (c *Cluster) setNodeState(id int, s NodeState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state[id] = s
}

// NodeStates is a copy of what the harness last did to each node.
func (c *Cluster) NodeStates() map[int]NodeState {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[int]NodeState, len(c.state))
	for k, v := range c.state {
		out[k] = v
	}
	return out
}

// Close saves every node's and proxy's log into ArtifactDir/logs, then removes every container,
// network and volume of the run. It is idempotent, and safe to call after a failed or
// interrupted Start.
func (c *Cluster) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		if c.stopSignal != nil {
			c.stopSignal()
		}
		// Removal must happen even when the caller's context is already cancelled (Ctrl-C).
		ctx = context.WithoutCancel(ctx)
		c.mu.Lock()
		if c.admin != nil {
			c.admin.close()
		}
		if c.describer != nil {
			c.describer.Close()
		}
		c.mu.Unlock()
		var errs []error
		if err := c.saveLogs(ctx); err != nil {
			errs = append(errs, err)
		}
		// All: the owner is this process, alive by definition.
		runs, err := reap(ctx, c.eng, ReapOptions{Run: c.spec.RunID, All: true})
		if err != nil {
			errs = append(errs, err)
		}
		var rm Removed
		for _, r := range runs {
			rm.Add(r.Removed)
		}
		c.log.Info("cluster removed", "containers", rm.Containers, "networks", rm.Networks, "volumes", rm.Volumes,
			"logs", filepath.Join(c.spec.ArtifactDir, "logs"))
		errs = append(errs, c.eng.Close())
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

func (c *Cluster) saveLogs(ctx context.Context) error {
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, c.saveLog(ctx, fmt.Sprintf("node-%d", n.ID), n.container))
	}
	if c.clientProxy != nil {
		errs = append(errs, c.saveLog(ctx, "proxy-client", c.clientProxy.container))
	}
	for id, p := range c.nodeProxies {
		errs = append(errs, c.saveLog(ctx, "proxy-"+strconv.Itoa(id), p.container))
	}
	for name, ctr := range c.serviceLogs() {
		errs = append(errs, c.saveLog(ctx, name, ctr))
	}
	return errors.Join(errs...)
}

// cleanupOnSignal removes the cluster when the process gets SIGINT or SIGTERM, then lets the
// signal do what it would have done (the handler unregisters itself and re-raises it).
func (c *Cluster) cleanupOnSignal() {
	ch := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var once sync.Once
	c.stopSignal = func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
	go func() {
		select {
		case sig := <-ch:
			c.log.Warn("signal received: removing the cluster", "signal", sig)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			_ = c.Close(ctx)
			cancel()
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				_ = p.Signal(sig)
			}
		case <-done:
		}
	}()
}

// poll calls cond every interval until it returns true or an error, or ctx ends.
func poll(ctx context.Context, interval time.Duration, cond func() (bool, error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// tcLogger sends testcontainers' chatter to slog at debug level.
type tcLogger struct{ log *slog.Logger }

func (l tcLogger) Printf(format string, v ...any) {
	l.log.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)), "from", "testcontainers")
}

// runLabels is a fresh copy of the run's labels for one request: testcontainers adds its own
// labels into the map it is given, so requests made in parallel must not share one.
func (c *Cluster) runLabels() map[string]string { return maps.Clone(c.labels) }
