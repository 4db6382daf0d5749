package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"

	"github.com/verity-kafka/verity/kafkatoxic"
)

// ClientEndpoint is the From of a client->node link: the test's clients on this machine.
const ClientEndpoint = 0

// Link is one directed link: the connections that From opens to To (requests flow From->To,
// responses To->From on the same connections). From is a node id or ClientEndpoint; To is a
// node id, or a side-effect service's endpoint (PostgresEndpoint, LedgerEndpoint) for a client.
//
// A link carries one or two kinds of traffic (Traffic), each through its own Toxiproxy proxy
// because each goes to its own listener port: client->broker carries TrafficClient; i->j
// between two brokers carries TrafficReplication; i->j into a controller carries
// TrafficController; i->j between two combined nodes (broker and controller in one process, the
// default layout) carries both. Cut, Heal, AddToxic and RemoveToxic act on every traffic of a
// link: a cut of a link between combined nodes cuts replication and quorum traffic together.
// CutTraffic, HealTraffic and PartitionTraffic act on one traffic alone.
type Link struct{ From, To int }

func (l Link) String() string { return endpointName(l.From) + "->" + endpointName(l.To) }

// Traffic is one kind of traffic a link carries: the connections to one listener of the node
// (or to a service's port), which have a Toxiproxy proxy of their own per link.
type Traffic string

const (
	// TrafficClient is client->broker: the broker's CLIENT listener, which the test's clients
	// (producers, consumers, admin clients, the harness's own questions) use; and
	// client->service, a side-effect service's port.
	TrafficClient Traffic = "client"
	// TrafficReplication is broker->broker: the INTERNAL listener (inter.broker.listener.name).
	// It carries the followers' Fetch requests to their leaders, which is replication, and the
	// other requests one broker sends another: transaction markers (WriteTxnMarkers, from a
	// transaction coordinator to the partitions' leaders) and the transaction verification of
	// KIP-890 (AddPartitionsToTxn, from a partition leader to the transaction coordinator).
	// Cutting it leaves a broker registered and unfenced: its followers fall out of the ISR
	// once the leader has records they lack (a follower with every record counts as caught
	// up however long it does not fetch), and the leader shrinks the ISR through the
	// controllers.
	TrafficReplication Traffic = "replication"
	// TrafficController is node->controller: the CONTROLLER listener. From a controller it is
	// the KRaft quorum itself (Vote, BeginQuorumEpoch, EndQuorumEpoch, and Fetch and
	// FetchSnapshot of the metadata log). From a broker it is the broker's tie to the active
	// controller: its registration and heartbeats (which keep it unfenced), ISR changes
	// (AlterPartition) and the admin requests it forwards; a broker-only node also fetches the
	// metadata log over it. A combined node sends both over one listener, so one proxy carries
	// them and they cannot be cut apart.
	TrafficController Traffic = "controller"
)

// proxyKind is the suffix of the proxy names that carry traffic t (proxyName).
func (t Traffic) proxyKind() string {
	if t == TrafficReplication {
		return "internal"
	}
	return string(t)
}

// LinkTraffic is one traffic of one link: one Toxiproxy proxy.
type LinkTraffic struct {
	Link
	Traffic Traffic
}

func (lt LinkTraffic) String() string { return lt.Link.String() + "/" + string(lt.Traffic) }

// CutKind says how a link is cut.
type CutKind string

const (
	// CutBlackhole drops every byte both ways and holds connections open (a timeout toxic with
	// timeout 0 on both streams), as a real partition does: peers wait for their timeouts.
	CutBlackhole CutKind = "blackhole"
	// CutRefuse disables the proxy: existing connections are closed and new ones refused at once.
	CutRefuse CutKind = "refuse"
)

const (
	cutUp   = "verity-cut-upstream"
	cutDown = "verity-cut-downstream"
)

func proxyName(from, to int, kind string) string {
	if d, ok := serviceDefOf(to); ok && from == ClientEndpoint {
		return "client-" + d.name
	}
	if from == ClientEndpoint {
		return fmt.Sprintf("client-n%d", to)
	}
	return fmt.Sprintf("n%d-n%d-%s", from, to, kind)
}

// TrafficOf lists the kinds of traffic link l carries, each through its own proxy (see Link);
// an error when the link does not exist or carries nothing.
func (c *Cluster) TrafficOf(l Link) ([]Traffic, error) {
	if isService(l.To) {
		if err := c.checkServiceLink(l); err != nil {
			return nil, err
		}
		return []Traffic{TrafficClient}, nil
	}
	to := c.memberOf(l.To)
	if to == nil {
		return nil, fmt.Errorf("link %s: no node %d", l, l.To)
	}
	if l.From == ClientEndpoint {
		if !to.isBroker() {
			return nil, fmt.Errorf("link %s: node %d is a controller; clients talk to brokers only", l, l.To)
		}
		return []Traffic{TrafficClient}, nil
	}
	from := c.memberOf(l.From)
	if from == nil {
		return nil, fmt.Errorf("link %s: no node %d", l, l.From)
	}
	var ts []Traffic
	if from.isBroker() && to.isBroker() {
		ts = append(ts, TrafficReplication)
	}
	if to.isController() {
		ts = append(ts, TrafficController)
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("link %s: controller %d never connects to broker %d", l, l.From, l.To)
	}
	return ts, nil
}

// linkProxies are the Toxiproxy proxies that carry link l, with the proxy container that holds
// them: client->j has one; i->j has the replication proxy when both are brokers and the quorum
// proxy when j is a controller. Traffic t picks one of them ("": all).
func (c *Cluster) linkProxies(l Link, t Traffic) (*proxyBox, []LinkTraffic, []string, error) {
	ts, err := c.TrafficOf(l)
	if err != nil {
		return nil, nil, nil, err
	}
	if t != "" {
		if !slices.Contains(ts, t) {
			return nil, nil, nil, fmt.Errorf("link %s carries no %s traffic (it carries %v)", l, t, ts)
		}
		ts = []Traffic{t}
	}
	box := c.clientProxy
	if l.From != ClientEndpoint {
		box = c.nodeProxies[l.From]
	}
	var lts []LinkTraffic
	var names []string
	for _, t := range ts {
		lts = append(lts, LinkTraffic{l, t})
		names = append(names, proxyName(l.From, l.To, t.proxyKind()))
	}
	return box, lts, names, nil
}

func (c *Cluster) memberOf(id int) *member {
	for i := range c.members {
		if c.members[i].ID == id {
			return &c.members[i]
		}
	}
	return nil
}

// eachProxy runs fn on every Toxiproxy proxy that carries traffic t of link l ("": every
// traffic), reading each proxy's current state first; what names the action for errors.
func (c *Cluster) eachProxy(l Link, t Traffic, what string, fn func(lt LinkTraffic, p *toxiproxy.Proxy) error) error {
	box, lts, names, err := c.linkProxies(l, t)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, l, err)
	}
	for i, name := range names {
		p, err := box.api.Proxy(name)
		if err != nil {
			return fmt.Errorf("%s %s: reading proxy %s: %w", what, l, name, err)
		}
		if err := fn(lts[i], p); err != nil {
			return fmt.Errorf("%s %s (%s): %w", what, l, name, err)
		}
	}
	return nil
}

// acceptsWhen is the one rule for whether the proxy carrying lt accepts connections (is
// enabled) or refuses them at once (is disabled), given whether lt's destination is up (not
// killed: a node stopped cleanly keeps its links, see Stop; a service stopped or killed does not)
// and how lt is cut (cut: "" when it is not). It refuses while the destination is down, whatever
// the cuts, since a proxy in front of a container that is gone can hang on its dial (see Kill);
// and while lt is cut to refuse. Cut, CutTraffic, Heal,
// HealTraffic, HealAll, Kill, Start and the services' kill, stop and start all apply it, so a
// link healed while its node is down refuses until the node starts, and a link cut to refuse
// stays refused across a restart of its node until it is healed.
func acceptsWhen(up bool, cut CutKind) bool { return up && cut != CutRefuse }

// applyRule enables or disables proxy p (carrying lt) as acceptsWhen says, up being whether
// lt's destination is up.
func (c *Cluster) applyRule(lt LinkTraffic, p *toxiproxy.Proxy, up bool) error {
	c.mu.Lock()
	want := acceptsWhen(up, c.cuts[lt])
	c.mu.Unlock()
	return switchProxy(p, want)
}

// switchProxy enables (accept) or disables proxy p, if it is not so already.
func switchProxy(p *toxiproxy.Proxy, accept bool) error {
	switch {
	case accept && !p.Enabled:
		return p.Enable()
	case !accept && p.Enabled:
		return p.Disable()
	}
	return nil
}

// Cut cuts one directed link: every traffic it carries (see Link; CutTraffic cuts one).
func (c *Cluster) Cut(ctx context.Context, l Link, kind CutKind) error {
	return c.CutTraffic(ctx, l, "", kind)
}

// CutTraffic cuts traffic t of link l alone, e.g. TrafficReplication of a link between two
// combined nodes, which leaves its quorum and heartbeat traffic flowing; t "" cuts every traffic
// of the link, as Cut does. A link that does not carry t is an error (TrafficOf says what it
// carries). A cut replaces an earlier cut of another kind on the same traffic.
func (c *Cluster) CutTraffic(ctx context.Context, l Link, t Traffic, kind CutKind) error {
	if kind == "" {
		kind = CutBlackhole
	}
	if kind != CutBlackhole && kind != CutRefuse {
		return fmt.Errorf("cutting %s: unknown cut kind %q (want %q or %q)", l, kind, CutBlackhole, CutRefuse)
	}
	up := !c.endpointStopped(l.To)
	return c.eachProxy(l, t, "cutting", func(lt LinkTraffic, p *toxiproxy.Proxy) error {
		var err error
		if kind == CutBlackhole {
			// Toxics first, then the rule (which may enable a proxy cut to refuse before):
			// no connection may pass between the two.
			for stream, tname := range map[string]string{"upstream": cutUp, "downstream": cutDown} {
				if _, aerr := p.AddToxic(tname, "timeout", stream, 1, toxiproxy.Attributes{"timeout": 0}); aerr != nil && !isConflict(aerr) {
					err = errors.Join(err, aerr)
				}
			}
			if err != nil {
				return err
			}
		}
		c.mu.Lock()
		c.cuts[lt] = kind
		c.mu.Unlock()
		return errors.Join(c.applyRule(lt, p, up), ctx.Err())
	})
}

// Heal undoes Cut and CutTraffic on one directed link, every traffic of it (both kinds; other
// toxics stay).
//
// A link into a killed node, or a stopped or killed service, still refuses connections after
// Heal, until Start (or StartService, or Restore) starts it: the proxies in front of such a
// destination always refuse, as a crashed process's host does (see acceptsWhen). The cut is
// forgotten all the same, so the start brings the link back.
func (c *Cluster) Heal(ctx context.Context, l Link) error {
	return c.HealTraffic(ctx, l, "")
}

// HealTraffic undoes a cut of traffic t of link l alone ("": every traffic, as Heal). As for
// Heal, the link refuses until its destination starts if that is stopped.
func (c *Cluster) HealTraffic(ctx context.Context, l Link, t Traffic) error {
	up := !c.endpointStopped(l.To)
	return c.eachProxy(l, t, "healing", func(lt LinkTraffic, p *toxiproxy.Proxy) error {
		for _, tn := range []string{cutUp, cutDown} {
			if err := p.RemoveToxic(tn); err != nil && !isNotFound(err) {
				return fmt.Errorf("removing %s: %w", tn, err)
			}
		}
		c.mu.Lock()
		delete(c.cuts, lt)
		c.mu.Unlock()
		return errors.Join(c.applyRule(lt, p, up), ctx.Err())
	})
}

// Refused reports whether every proxy carrying link l refuses new connections at once: every
// traffic of the link is cut to refuse, or its node is stopped (acceptsWhen).
func (c *Cluster) Refused(l Link) (bool, error) {
	refused := true
	err := c.eachProxy(l, "", "reading", func(_ LinkTraffic, p *toxiproxy.Proxy) error {
		refused = refused && !p.Enabled
		return nil
	})
	return refused, err
}

// Partition cuts, both ways, every link between nodes of different groups. Every node must be in
// exactly one group. Client links are left alone: clients still reach every broker.
func (c *Cluster) Partition(ctx context.Context, kind CutKind, groups ...[]int) error {
	return c.PartitionTraffic(ctx, kind, "", groups...)
}

// PartitionTraffic is Partition for traffic t alone: it cuts t on every link between nodes of
// different groups that carries it, and leaves the other traffic of those links flowing; t ""
// cuts every traffic, as Partition does. With TrafficReplication the brokers of different
// groups stop replicating from each other while every node stays in the quorum.
func (c *Cluster) PartitionTraffic(ctx context.Context, kind CutKind, t Traffic, groups ...[]int) error {
	group := map[int]int{}
	for gi, g := range groups {
		for _, id := range g {
			if c.memberOf(id) == nil {
				return fmt.Errorf("partition: no node %d", id)
			}
			if _, dup := group[id]; dup {
				return fmt.Errorf("partition: node %d is in two groups", id)
			}
			group[id] = gi
		}
	}
	for _, m := range c.members {
		if _, ok := group[m.ID]; !ok {
			return fmt.Errorf("partition: node %d is in no group; list every node", m.ID)
		}
	}
	for _, l := range c.nodeLinks() {
		if group[l.From] == group[l.To] {
			continue
		}
		if ts, _ := c.TrafficOf(l); t != "" && !slices.Contains(ts, t) {
			continue
		}
		if err := c.CutTraffic(ctx, l, t, kind); err != nil {
			return fmt.Errorf("partition: %w", err)
		}
	}
	return nil
}

// Isolate cuts node id off from every other node, both ways; clients still reach it.
func (c *Cluster) Isolate(ctx context.Context, id int, kind CutKind) error {
	var rest []int
	for _, m := range c.members {
		if m.ID != id {
			rest = append(rest, m.ID)
		}
	}
	return c.Partition(ctx, kind, []int{id}, rest)
}

// nodeLinks lists every directed node->node link that carries traffic (no self-links).
func (c *Cluster) nodeLinks() []Link {
	var ls []Link
	for _, from := range c.members {
		for _, to := range c.members {
			carries := (from.isBroker() && to.isBroker()) || to.isController()
			if from.ID != to.ID && carries {
				ls = append(ls, Link{from.ID, to.ID})
			}
		}
	}
	return ls
}

// Links lists every directed link of the cluster: client->broker and node->node.
func (c *Cluster) Links() []Link {
	var ls []Link
	for _, b := range c.Brokers() {
		ls = append(ls, Link{ClientEndpoint, b})
	}
	return append(ls, c.nodeLinks()...)
}

// Cuts is a copy of the links currently cut whole: every traffic they carry is cut (by Cut,
// Partition, Isolate, or CutTraffic of each). A link whose traffics are cut in different ways
// counts as CutBlackhole: some of its connections hang. TrafficCuts lists every cut, partial
// ones too.
func (c *Cluster) Cuts() map[Link]CutKind {
	c.mu.Lock()
	byLink := map[Link]map[Traffic]CutKind{}
	for lt, k := range c.cuts {
		if byLink[lt.Link] == nil {
			byLink[lt.Link] = map[Traffic]CutKind{}
		}
		byLink[lt.Link][lt.Traffic] = k
	}
	c.mu.Unlock()
	out := map[Link]CutKind{}
	for l, cut := range byLink {
		ts, err := c.TrafficOf(l)
		if err != nil {
			continue
		}
		kind := wholeCut(ts, cut)
		if kind != "" {
			out[l] = kind
		}
	}
	return out
}

// wholeCut is how a link that carries ts is cut when its traffics are cut as cut says: "" unless
// every one is, CutBlackhole when they are cut in different ways.
func wholeCut(ts []Traffic, cut map[Traffic]CutKind) CutKind {
	var kind CutKind
	for _, t := range ts {
		k, ok := cut[t]
		if !ok {
			return ""
		}
		if kind != "" && kind != k {
			k = CutBlackhole
		}
		kind = k
	}
	return kind
}

// TrafficCuts is a copy of every traffic of every link currently cut, whether its link is cut
// whole (Cuts) or in part (CutTraffic, PartitionTraffic).
func (c *Cluster) TrafficCuts() map[LinkTraffic]CutKind {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.cuts)
}

// HealAll removes every cut and every toxic from every link and enables every proxy, except
// those into a killed node or a stopped service: as after Heal, those refuse until it starts
// (Restore starts the nodes before it heals).
func (c *Cluster) HealAll(ctx context.Context) error {
	c.mu.Lock()
	clear(c.cuts)
	c.mu.Unlock()
	// What each proxy leads into, for the rule; the proxies not listed here (the metrics
	// proxies, a node's link to itself) lead nowhere a fault stops and are enabled.
	into := map[string]int{}
	for _, l := range append(c.Links(), c.ServiceLinks()...) {
		box, _, names, err := c.linkProxies(l, "")
		if err != nil {
			continue
		}
		for _, n := range names {
			into[box.name+"/"+n] = l.To
		}
	}
	if c.clientProxy != nil {
		for _, d := range c.spec.services() {
			into[c.clientProxy.name+"/health-"+d.name] = d.endpoint
		}
	}
	var errs []error
	boxes := []*proxyBox{c.clientProxy}
	for _, b := range c.nodeProxies {
		boxes = append(boxes, b)
	}
	for _, b := range boxes {
		if b == nil {
			continue
		}
		// Proxy by proxy rather than Toxiproxy's reset, which enables every proxy: one in front
		// of a stopped node, enabled even for a moment, can hang on its dial (see Kill).
		ps, err := b.api.Proxies()
		if err != nil {
			errs = append(errs, fmt.Errorf("healing every link: listing the proxies of %s: %w", b.name, err))
			continue
		}
		for name, p := range ps {
			for _, tx := range p.ActiveToxics {
				if err := p.RemoveToxic(tx.Name); err != nil && !isNotFound(err) {
					errs = append(errs, fmt.Errorf("healing every link: removing toxic %s from %s: %w", tx.Name, name, err))
				}
			}
			to, known := into[b.name+"/"+name]
			if err := switchProxy(p, acceptsWhen(!known || !c.endpointStopped(to), "")); err != nil {
				errs = append(errs, fmt.Errorf("healing every link: switching %s in %s: %w", name, b.name, err))
			}
		}
	}
	return errors.Join(append(errs, ctx.Err())...)
}

// Toxic is a Toxiproxy toxic to put on a link. Stream "upstream" acts on requests (From->To),
// "downstream" on responses (To->From).
type Toxic struct {
	Name       string
	Type       string // latency, bandwidth, timeout, reset_peer, slow_close, limit_data, ...
	Stream     string
	Toxicity   float32 // probability per connection; 0 means 1
	Attributes map[string]any
}

// Latency delays every chunk by d plus or minus jitter.
func Latency(stream string, d, jitter time.Duration) Toxic {
	return Toxic{Type: "latency", Stream: stream, Attributes: map[string]any{"latency": d.Milliseconds(), "jitter": jitter.Milliseconds()}}
}

// Bandwidth caps the rate at kbps kilobytes per second.
func Bandwidth(stream string, kbps int64) Toxic {
	return Toxic{Type: "bandwidth", Stream: stream, Attributes: map[string]any{"rate": kbps}}
}

// Timeout stops all data and closes the connection after d (0: never closes: a black hole).
func Timeout(stream string, d time.Duration) Toxic {
	return Toxic{Type: "timeout", Stream: stream, Attributes: map[string]any{"timeout": d.Milliseconds()}}
}

// ResetPeer resets connections (TCP RST) after d.
func ResetPeer(stream string, d time.Duration) Toxic {
	return Toxic{Type: "reset_peer", Stream: stream, Attributes: map[string]any{"timeout": d.Milliseconds()}}
}

// SlowClose delays the closing of connections by d.
func SlowClose(stream string, d time.Duration) Toxic {
	return Toxic{Type: "slow_close", Stream: stream, Attributes: map[string]any{"delay": d.Milliseconds()}}
}

// LimitData closes connections after n bytes.
func LimitData(stream string, n int64) Toxic {
	return Toxic{Type: "limit_data", Stream: stream, Attributes: map[string]any{"bytes": n}}
}

// KafkaRequest acts on whole Kafka requests crossing a link towards the broker (package
// kafkatoxic, whose Toxic says what it drops, holds or lets through with its connection closed
// behind it). Only a Toxiproxy image whose ToxicsLabel lists it has it (Verity's stand-in does;
// the official image does not): AddToxic says so with ErrNoRequestToxic.
func KafkaRequest(t *kafkatoxic.Toxic) Toxic {
	return Toxic{Type: kafkatoxic.Type, Stream: "upstream", Attributes: t.Attributes()}
}

// ErrNoRequestToxic: the cluster's Toxiproxy image has no Kafka request toxic.
var ErrNoRequestToxic = errors.New("the Toxiproxy image has no Kafka request toxic")

// AddToxic puts t on link l and returns its name (t.Name, or one made from type and stream).
func (c *Cluster) AddToxic(ctx context.Context, l Link, t Toxic) (string, error) {
	if t.Type == kafkatoxic.Type && !slices.Contains(c.images.Toxics, t.Type) {
		return "", fmt.Errorf("%w (%s; Verity's stand-in %s has it: run `make images` and set VERITY_TOXIPROXY_IMAGE=%s)",
			ErrNoRequestToxic, c.images.Toxiproxy, StandInToxiproxyImage, StandInToxiproxyImage)
	}
	if t.Stream == "" {
		t.Stream = "downstream"
	}
	if t.Name == "" {
		t.Name = "verity-" + t.Type + "-" + t.Stream
	}
	if t.Toxicity == 0 {
		t.Toxicity = 1
	}
	err := c.eachProxy(l, "", "adding toxic "+t.Name+" to", func(_ LinkTraffic, p *toxiproxy.Proxy) error {
		_, err := p.AddToxic(t.Name, t.Type, t.Stream, t.Toxicity, toxiproxy.Attributes(t.Attributes))
		return err
	})
	if err != nil {
		return "", err
	}
	return t.Name, ctx.Err()
}

// RemoveToxic takes the named toxic off link l.
func (c *Cluster) RemoveToxic(ctx context.Context, l Link, name string) error {
	err := c.eachProxy(l, "", "removing toxic "+name+" from", func(_ LinkTraffic, p *toxiproxy.Proxy) error {
		if err := p.RemoveToxic(name); err != nil && !isNotFound(err) {
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ctx.Err()
}

func isNotFound(err error) bool { return err != nil && strings.Contains(err.Error(), "404") }
func isConflict(err error) bool { return err != nil && strings.Contains(err.Error(), "409") }
