package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Side-effect services: beside the Kafka cluster the harness can run a PostgreSQL server
// (Spec.Postgres) and Verity's HTTP ledger (Spec.Ledger, cmd/verity-ledger), the systems that
// sink workloads write what they consume to. Each runs in its own container on the core network
// (aliases "postgres" and "ledger") and clients reach it through its own proxy in proxy-client,
// "client-postgres" and "client-ledger", whose listen ports are published to the host
// (PostgresDSN, LedgerURL). That proxy is the link client->service: Link{From: ClientEndpoint,
// To: PostgresEndpoint} (or LedgerEndpoint) is cut, slowed or made lossy like any link, with
// Cut, Heal, AddToxic and the rest. Service links are not among Links, so faults that pick
// node links never touch them; ServiceLinks lists them.
//
// The harness's own readiness probes go through a second proxy per service,
// "health-postgres" and "health-ledger", which no link and no fault touches (as the metrics
// proxies): a service restarted while its client link is cut can still be seen to answer.
//
// Services carry the run's labels and are removed with everything else (Close, a failed
// Start, the signal handler, Reap); Close saves their logs as logs/postgres.log and
// logs/ledger.log. PostgreSQL keeps its data in a named, labelled volume across restarts; the
// ledger keeps everything in memory and loses it when its process dies.

// Endpoints of the side-effect services, for the To of a client->service Link. They are
// negative so that they can never be a node id or ClientEndpoint.
const (
	PostgresEndpoint = -2
	LedgerEndpoint   = -3
)

// PostgreSQL's superuser, password and database, all "verity"; PostgresDSN carries them.
const (
	PostgresUser     = "verity"
	PostgresPassword = "verity"
	PostgresDB       = "verity"
)

const (
	postgresDataDir = "/var/lib/postgresql/data" // PGDATA of the official image and the stand-in
	ledgerHealth    = "/healthz"
)

// serviceDef is one kind of side-effect service.
type serviceDef struct {
	endpoint   int
	name       string // network alias, container and log name suffix, proxy name suffix
	port       int    // its port in its container
	proxyPort  int    // proxy-client's listen port for client->service
	healthPort int    // proxy-client's listen port for the harness's probes
}

var (
	postgresDef = serviceDef{endpoint: PostgresEndpoint, name: "postgres", port: 5432, proxyPort: 5400, healthPort: 5401}
	ledgerDef   = serviceDef{endpoint: LedgerEndpoint, name: "ledger", port: 8080, proxyPort: 8600, healthPort: 8601}
)

// serviceDefOf returns the service at endpoint, whether or not the cluster runs it.
func serviceDefOf(endpoint int) (serviceDef, bool) {
	switch endpoint {
	case PostgresEndpoint:
		return postgresDef, true
	case LedgerEndpoint:
		return ledgerDef, true
	}
	return serviceDef{}, false
}

// isService reports whether endpoint is a side-effect service's.
func isService(endpoint int) bool {
	_, ok := serviceDefOf(endpoint)
	return ok
}

// endpointName names an endpoint of a link: "client", "postgres", "ledger", or the node id.
func endpointName(id int) string {
	if id == ClientEndpoint {
		return "client"
	}
	if d, ok := serviceDefOf(id); ok {
		return d.name
	}
	return strconv.Itoa(id)
}

// services lists the services the spec asks for, in a fixed order.
func (s Spec) services() []serviceDef {
	var ds []serviceDef
	if s.Postgres {
		ds = append(ds, postgresDef)
	}
	if s.Ledger {
		ds = append(ds, ledgerDef)
	}
	return ds
}

// Service is one side-effect service's container.
type Service struct {
	Endpoint  int    // PostgresEndpoint or LedgerEndpoint
	Name      string // container name
	Volume    string // data volume name; "" for the ledger, which has none
	def       serviceDef
	container testcontainers.Container
}

// serviceSet is what the cluster knows of its services. The maps are filled during Start; state
// is guarded by Cluster.mu afterwards.
type serviceSet struct {
	byEndpoint map[int]*Service
	addrs      map[int]string // endpoint -> host address of client->service
	health     map[int]string // endpoint -> host address of the probe proxy
	state      map[int]NodeState
	http       *http.Client // the ledger's probes
}

func newServiceSet() serviceSet {
	return serviceSet{byEndpoint: map[int]*Service{}, addrs: map[int]string{}, health: map[int]string{}, state: map[int]NodeState{},
		http: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
}

// serviceExposed are the ports of proxy-client that the services need published.
func (c *Cluster) serviceExposed() []string {
	var ps []string
	for _, d := range c.spec.services() {
		ps = append(ps, fmt.Sprintf("%d/tcp", d.proxyPort), fmt.Sprintf("%d/tcp", d.healthPort))
	}
	return ps
}

// serviceProxies are proxy-client's proxies to the services (client-<name>, the link, and
// health-<name>, the harness's probes); it records their host addresses.
func (c *Cluster) serviceProxies(ctx context.Context) ([]toxiproxy.Proxy, error) {
	var ps []toxiproxy.Proxy
	for _, d := range c.spec.services() {
		upstream := net.JoinHostPort(d.name, strconv.Itoa(d.port))
		for _, p := range []struct {
			name  string
			port  int
			addrs map[int]string
		}{{proxyName(ClientEndpoint, d.endpoint, "client"), d.proxyPort, c.svc.addrs}, {"health-" + d.name, d.healthPort, c.svc.health}} {
			hp, err := c.clientProxy.container.MappedPort(ctx, fmt.Sprintf("%d/tcp", p.port))
			if err != nil {
				return nil, fmt.Errorf("reading the host port of %s: %w", p.name, err)
			}
			p.addrs[d.endpoint] = net.JoinHostPort(c.eng.host, strconv.Itoa(int(hp.Num())))
			ps = append(ps, toxiproxy.Proxy{Name: p.name, Enabled: true, Listen: fmt.Sprintf("0.0.0.0:%d", p.port), Upstream: upstream})
		}
	}
	return ps, nil
}

// startNodesAndServices starts the nodes and, at the same time, the services the spec asks for.
func (c *Cluster) startNodesAndServices(ctx context.Context) error {
	if len(c.spec.services()) == 0 {
		return c.startNodes(ctx)
	}
	done := make(chan error, 1)
	go func() { done <- c.startServices(ctx) }()
	return errors.Join(c.startNodes(ctx), <-done)
}

// startServices creates the services' volumes and starts their containers, in parallel.
func (c *Cluster) startServices(ctx context.Context) error {
	defs := c.spec.services()
	c.log.Info("starting services", "services", len(defs), "postgres_image", c.images.Postgres, "ledger_image", c.images.Ledger)
	svcs := make([]*Service, len(defs))
	for i, d := range defs {
		s := &Service{Endpoint: d.endpoint, Name: c.containerName(d.name), def: d}
		if d.endpoint == PostgresEndpoint {
			s.Volume = c.containerName(d.name + "-data")
			if _, err := c.eng.VolumeCreate(ctx, client.VolumeCreateOptions{Name: s.Volume, Labels: c.runLabels()}); err != nil {
				return fmt.Errorf("creating the data volume of %s: %w", d.name, err)
			}
		}
		svcs[i] = s
	}
	errs := make([]error, len(defs))
	var wg sync.WaitGroup
	for i, s := range svcs {
		wg.Go(func() {
			req := testcontainers.ContainerRequest{
				Name:           s.Name,
				Labels:         c.runLabels(),
				Networks:       []string{c.core.Name},
				NetworkAliases: map[string][]string{c.core.Name: {s.def.name}},
			}
			switch s.Endpoint {
			case PostgresEndpoint:
				req.Image = c.images.Postgres
				req.Env = map[string]string{"POSTGRES_USER": PostgresUser, "POSTGRES_PASSWORD": PostgresPassword, "POSTGRES_DB": PostgresDB}
				vol := s.Volume
				req.HostConfigModifier = func(hc *container.HostConfig) {
					// The named, labelled volume is PGDATA (the image's only volume): kept
					// across restarts, removed with the run; no anonymous volume is made.
					hc.Binds = append(hc.Binds, vol+":"+postgresDataDir)
				}
			case LedgerEndpoint:
				req.Image = c.images.Ledger
			}
			c.publish(&req, fmt.Sprintf("%d/tcp", s.def.port))
			ctr, err := c.runContainer(ctx, req, true)
			if ctr != nil {
				s.container = ctr // also when it failed to start: Close saves its log
			}
			if err != nil {
				errs[i] = c.explainStartError("starting "+s.def.name, err)
			}
		})
	}
	wg.Wait()
	c.mu.Lock()
	for _, s := range svcs {
		c.svc.byEndpoint[s.Endpoint] = s
		if s.container != nil {
			c.svc.state[s.Endpoint] = NodeRunning
		}
	}
	c.mu.Unlock()
	return errors.Join(errs...)
}

// waitServices waits until every service answers through its probe proxy, or ctx ends.
func (c *Cluster) waitServices(ctx context.Context) error {
	defs := c.spec.services()
	errs := make([]error, len(defs))
	var wg sync.WaitGroup
	for i, d := range defs {
		wg.Go(func() { errs[i] = c.waitService(ctx, d.endpoint) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitService polls the service at endpoint until it answers (PostgreSQL: a connection and a
// ping; the ledger: GET /healthz answers 200), or its container exits, or ctx ends.
func (c *Cluster) waitService(ctx context.Context, endpoint int) error {
	s, err := c.service(endpoint)
	if err != nil {
		return err
	}
	began := time.Now()
	last := "no answer yet"
	err = poll(ctx, 250*time.Millisecond, func() (bool, error) {
		st, err := s.container.State(ctx)
		if err != nil {
			return false, fmt.Errorf("inspecting %s: %w", s.def.name, err)
		}
		if !st.Running {
			return false, fmt.Errorf("%s exited (code %d) before it answered; last log lines:\n%s", s.def.name, st.ExitCode, c.tailLog(ctx, s.container, 15))
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := c.probe(pctx, endpoint); err != nil {
			last = err.Error()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s not ready within %s (last: %s); its log will be in %s; the machine may be overloaded: raise Spec.ReadyTimeout",
				s.def.name, time.Since(began).Round(time.Second), last, filepath.Join(c.spec.ArtifactDir, "logs", s.def.name+".log"))
		}
		return fmt.Errorf("waiting for %s: %w", s.def.name, err)
	}
	c.log.Info("service ready", "service", s.def.name, "in", time.Since(began).Round(time.Millisecond))
	return nil
}

// probe asks the service at endpoint, once, through its probe proxy, whether it answers.
func (c *Cluster) probe(ctx context.Context, endpoint int) error {
	addr := c.svc.health[endpoint]
	switch endpoint {
	case PostgresEndpoint:
		conn, err := pgx.Connect(ctx, postgresDSN(addr))
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		return conn.Ping(ctx)
	case LedgerEndpoint:
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+ledgerHealth, nil)
		if err != nil {
			return err
		}
		resp, err := c.svc.http.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: HTTP %s", ledgerHealth, resp.Status)
		}
		return nil
	}
	return fmt.Errorf("no service at endpoint %d", endpoint)
}

// postgresDSN is the pgx connection string for the server reached at addr (host:port).
func postgresDSN(addr string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(PostgresUser, PostgresPassword), Host: addr,
		Path: "/" + PostgresDB, RawQuery: "sslmode=disable"}
	return u.String()
}

// PostgresDSN is a connection string (pgx, libpq URL form) for the PostgreSQL server through its
// link client->postgres: user, password and database "verity", TLS off. It carries no connect
// timeout: bound connection attempts with a context, since a cut link (CutBlackhole) accepts
// the connection and then answers nothing. "" when the cluster runs no PostgreSQL (Spec.Postgres).
func (c *Cluster) PostgresDSN() string {
	addr := c.svc.addrs[PostgresEndpoint]
	if addr == "" {
		return ""
	}
	return postgresDSN(addr)
}

// LedgerURL is the base URL ("http://host:port") of Verity's ledger through its link
// client->ledger; "" when the cluster runs no ledger (Spec.Ledger).
func (c *Cluster) LedgerURL() string {
	addr := c.svc.addrs[LedgerEndpoint]
	if addr == "" {
		return ""
	}
	return "http://" + addr
}

// ServiceLinks lists the links client->service of the services the cluster runs (none without
// services). Links leaves them out.
func (c *Cluster) ServiceLinks() []Link {
	var ls []Link
	for _, d := range c.spec.services() {
		ls = append(ls, Link{ClientEndpoint, d.endpoint})
	}
	return ls
}

// Service returns the service at endpoint (PostgresEndpoint, LedgerEndpoint), or nil when the
// cluster does not run it.
func (c *Cluster) Service(endpoint int) *Service {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.svc.byEndpoint[endpoint]
}

// ServiceState is what the harness last did to the service at endpoint ("" when the cluster
// does not run it).
func (c *Cluster) ServiceState(endpoint int) NodeState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.svc.state[endpoint]
}

func (c *Cluster) setServiceState(endpoint int, st NodeState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.svc.state[endpoint] = st
}

// service returns the running service at endpoint, or an error that says why there is none.
func (c *Cluster) service(endpoint int) (*Service, error) {
	d, ok := serviceDefOf(endpoint)
	if !ok {
		return nil, fmt.Errorf("no service at endpoint %d (services: PostgresEndpoint %d, LedgerEndpoint %d)", endpoint, PostgresEndpoint, LedgerEndpoint)
	}
	s := c.Service(endpoint)
	if s == nil || s.container == nil {
		return nil, fmt.Errorf("the cluster runs no %s; start it with Spec.%s", d.name, map[int]string{PostgresEndpoint: "Postgres", LedgerEndpoint: "Ledger"}[endpoint])
	}
	return s, nil
}

// checkServiceLink says why link l to a service carries nothing, if it does not: only clients
// reach a service, and only when the cluster runs it.
func (c *Cluster) checkServiceLink(l Link) error {
	d, _ := serviceDefOf(l.To)
	if l.From != ClientEndpoint {
		return fmt.Errorf("link %s: only clients (ClientEndpoint) reach %s", l, d.name)
	}
	for _, sd := range c.spec.services() {
		if sd.endpoint == l.To {
			return nil
		}
	}
	return fmt.Errorf("link %s: the cluster runs no %s", l, d.name)
}

// endpointStopped reports whether the links into the node or service at id refuse for its
// sake: a service stopped or killed, a node killed (a node stopped cleanly keeps its links; see
// Stop).
func (c *Cluster) endpointStopped(id int) bool {
	if isService(id) {
		return c.ServiceState(id) == NodeStopped
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.killed[id]
}

// setServiceInbound disables (before a kill or after a stop) or enables (on start) the proxies
// into a service: its link as the rule of acceptsWhen says (it stays refused while cut to
// refuse), and its probe proxy, which no cut touches. As for a node (see setInbound), a proxy in
// front of a container that is gone could hang on its dial; a stopped server's host refuses
// connections at once.
func (c *Cluster) setServiceInbound(s *Service, up bool) error {
	lt := LinkTraffic{Link{ClientEndpoint, s.Endpoint}, TrafficClient}
	for _, name := range []string{"health-" + s.def.name, proxyName(ClientEndpoint, s.Endpoint, "client")} {
		p, err := c.clientProxy.api.Proxy(name)
		if err != nil {
			return fmt.Errorf("%s: reading proxy %s: %w", s.def.name, name, err)
		}
		if name == "health-"+s.def.name {
			err = switchProxy(p, acceptsWhen(up, ""))
		} else {
			err = c.applyRule(lt, p, up)
		}
		if err != nil {
			return fmt.Errorf("%s: switching proxy %s: %w", s.def.name, name, err)
		}
	}
	return nil
}

// KillService sends SIGKILL to the service at endpoint (a crash) and returns once its container
// has stopped; its clients' connections are closed and new ones refused. PostgreSQL's data stays
// for StartService; the ledger's is gone with its process.
func (c *Cluster) KillService(ctx context.Context, endpoint int) error {
	s, err := c.service(endpoint)
	if err != nil {
		return err
	}
	if c.ServiceState(endpoint) == NodeStopped {
		return nil
	}
	if err := c.setServiceInbound(s, false); err != nil {
		return fmt.Errorf("killing %s: %w", s.def.name, err)
	}
	if _, err := c.eng.ContainerKill(ctx, s.container.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return fmt.Errorf("killing %s: %w", s.def.name, errors.Join(err, c.setServiceInbound(s, true)))
	}
	c.setServiceState(endpoint, NodeStopped)
	if err := waitRunning(ctx, s.container, false); err != nil {
		return fmt.Errorf("killing %s: %w", s.def.name, err)
	}
	return nil
}

// StopService stops the service at endpoint cleanly (the image's stop signal: a fast shutdown
// for PostgreSQL, which ends its sessions) and returns once it has stopped; new connections are
// refused from then on.
func (c *Cluster) StopService(ctx context.Context, endpoint int) error {
	s, err := c.service(endpoint)
	if err != nil {
		return err
	}
	if c.ServiceState(endpoint) == NodeStopped {
		return nil
	}
	secs := int(stopTimeout.Seconds())
	if _, err := c.eng.ContainerStop(ctx, s.container.GetContainerID(), client.ContainerStopOptions{Timeout: &secs}); err != nil {
		return fmt.Errorf("stopping %s: %w", s.def.name, err)
	}
	c.setServiceState(endpoint, NodeStopped)
	if err := c.setServiceInbound(s, false); err != nil {
		return fmt.Errorf("stopping %s: %w", s.def.name, err)
	}
	return nil
}

// StartService starts the stopped service at endpoint again and returns once it answers (as at
// Start, bounded by ctx and Spec.ReadyTimeout). PostgreSQL starts on the data it had (and
// recovers from a crash by itself); the ledger starts empty.
func (c *Cluster) StartService(ctx context.Context, endpoint int) error {
	s, err := c.service(endpoint)
	if err != nil {
		return err
	}
	if err := c.startContainer(ctx, s.container.GetContainerID()); err != nil {
		return fmt.Errorf("starting %s: %w", s.def.name, err)
	}
	c.setServiceState(endpoint, NodeRunning)
	if err := waitRunning(ctx, s.container, true); err != nil {
		return fmt.Errorf("starting %s: %w", s.def.name, err)
	}
	if err := c.setServiceInbound(s, true); err != nil {
		return fmt.Errorf("starting %s: %w", s.def.name, err)
	}
	rctx, cancel := context.WithTimeout(ctx, c.spec.ReadyTimeout)
	defer cancel()
	return c.waitService(rctx, endpoint)
}

// RestartService crashes the service at endpoint (SIGKILL, as KillService) and starts it again
// (StartService), returning once it answers. Every connection open to it is closed. PostgreSQL
// keeps what it committed (its data volume stays, and it recovers from its WAL); the ledger
// keeps nothing: it holds its records in memory and comes back empty.
func (c *Cluster) RestartService(ctx context.Context, endpoint int) error {
	if err := c.KillService(ctx, endpoint); err != nil {
		return fmt.Errorf("restarting: %w", err)
	}
	if err := c.StartService(ctx, endpoint); err != nil {
		return fmt.Errorf("restarting: %w", err)
	}
	return nil
}

// restoreServices starts every stopped service (Restore).
func (c *Cluster) restoreServices(ctx context.Context) error {
	var errs []error
	for _, d := range c.spec.services() {
		if c.ServiceState(d.endpoint) == NodeStopped {
			errs = append(errs, c.StartService(ctx, d.endpoint))
		}
	}
	return errors.Join(errs...)
}

// serviceLogs are the service containers to save logs of, by log name.
func (c *Cluster) serviceLogs() map[string]testcontainers.Container {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]testcontainers.Container{}
	for _, s := range c.svc.byEndpoint {
		if s.container != nil {
			out[s.def.name] = s.container
		}
	}
	return out
}

// waitRunning polls the engine until ctr is (not) running, for at most 30 s.
func waitRunning(ctx context.Context, ctr testcontainers.Container, running bool) error {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := poll(wctx, 50*time.Millisecond, func() (bool, error) {
		st, err := ctr.State(wctx)
		if err != nil {
			return false, err
		}
		return st.Running == running, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the container to be %s: %w", map[bool]string{true: "running", false: "stopped"}[running], err)
	}
	return nil
}
