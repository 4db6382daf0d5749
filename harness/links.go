package harness

import (
	"context"
	"errors"
	"fmt"
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
type Link struct{ From, To int }

func (l Link) String() string { return endpointName(l.From) + "->" + endpointName(l.To) }

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

// linkProxies are the Toxiproxy proxies that carry link l: client->j has one; i->j has the
// replication proxy when both are brokers and the quorum proxy when j is a controller.
func (c *Cluster) linkProxies(l Link) (*proxyBox, []string, error) {
	if isService(l.To) {
		return c.serviceLinkProxies(l)
	}
	to := c.memberOf(l.To)
	if to == nil {
		return nil, nil, fmt.Errorf("link %s: no node %d", l, l.To)
	}
	if l.From == ClientEndpoint {
		if !to.isBroker() {
			return nil, nil, fmt.Errorf("link %s: node %d is a controller; clients talk to brokers only", l, l.To)
		}
		return c.clientProxy, []string{proxyName(l.From, l.To, "client")}, nil
	}
	from := c.memberOf(l.From)
	if from == nil {
		return nil, nil, fmt.Errorf("link %s: no node %d", l, l.From)
	}
	var names []string
	if from.isBroker() && to.isBroker() {
		names = append(names, proxyName(l.From, l.To, "internal"))
	}
	if to.isController() {
		names = append(names, proxyName(l.From, l.To, "controller"))
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("link %s: controller %d never connects to broker %d", l, l.From, l.To)
	}
	return c.nodeProxies[l.From], names, nil
}

func (c *Cluster) memberOf(id int) *member {
	for i := range c.members {
		if c.members[i].ID == id {
			return &c.members[i]
		}
	}
	return nil
}

// eachProxy runs fn on every Toxiproxy proxy that carries link l, reading each proxy's current
// state first; what names the action for errors.
func (c *Cluster) eachProxy(l Link, what string, fn func(p *toxiproxy.Proxy) error) error {
	box, names, err := c.linkProxies(l)
	if err != nil {
		return err
	}
	for _, name := range names {
		p, err := box.api.Proxy(name)
		if err != nil {
			return fmt.Errorf("%s %s: reading proxy %s: %w", what, l, name, err)
		}
		if err := fn(p); err != nil {
			return fmt.Errorf("%s %s (%s): %w", what, l, name, err)
		}
	}
	return nil
}

// Cut cuts one directed link.
func (c *Cluster) Cut(ctx context.Context, l Link, kind CutKind) error {
	if kind == "" {
		kind = CutBlackhole
	}
	if kind != CutBlackhole && kind != CutRefuse {
		return fmt.Errorf("cutting %s: unknown cut kind %q (want %q or %q)", l, kind, CutBlackhole, CutRefuse)
	}
	err := c.eachProxy(l, "cutting", func(p *toxiproxy.Proxy) error {
		if kind == CutRefuse {
			return p.Disable()
		}
		var err error
		for stream, tname := range map[string]string{"upstream": cutUp, "downstream": cutDown} {
			if _, aerr := p.AddToxic(tname, "timeout", stream, 1, toxiproxy.Attributes{"timeout": 0}); aerr != nil && !isConflict(aerr) {
				err = errors.Join(err, aerr)
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.cuts[l] = kind
	c.mu.Unlock()
	return ctx.Err()
}

// Heal undoes Cut on one directed link (both kinds; other toxics stay).
func (c *Cluster) Heal(ctx context.Context, l Link) error {
	err := c.eachProxy(l, "healing", func(p *toxiproxy.Proxy) error {
		for _, t := range []string{cutUp, cutDown} {
			if err := p.RemoveToxic(t); err != nil && !isNotFound(err) {
				return fmt.Errorf("removing %s: %w", t, err)
			}
		}
		if !p.Enabled && !c.endpointStopped(l.To) {
			return p.Enable()
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.cuts, l)
	c.mu.Unlock()
	return ctx.Err()
}

// Refused reports whether the proxies carrying link l refuse new connections at once: the link
// is cut to refuse, or its node was killed.
func (c *Cluster) Refused(l Link) (bool, error) {
	refused := true
	err := c.eachProxy(l, "reading", func(p *toxiproxy.Proxy) error {
		refused = refused && !p.Enabled
		return nil
	})
	return refused, err
}

// Partition cuts, both ways, every link between nodes of different groups. Every node must be in
// exactly one group. Client links are left alone: clients still reach every broker.
func (c *Cluster) Partition(ctx context.Context, kind CutKind, groups ...[]int) error {
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
		if group[l.From] != group[l.To] {
			if err := c.Cut(ctx, l, kind); err != nil {
				return fmt.Errorf("partition: %w", err)
			}
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

// Cuts is a copy of the links currently cut.
func (c *Cluster) Cuts() map[Link]CutKind {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[Link]CutKind, len(c.cuts))
	for k, v := range c.cuts {
		out[k] = v
	}
	return out
}

// HealAll removes every cut and every toxic from every link, and enables every proxy, a killed
// node's too: Restore starts the nodes before it.
func (c *Cluster) HealAll(ctx context.Context) error {
	var errs []error
	boxes := []*proxyBox{c.clientProxy}
	for _, b := range c.nodeProxies {
		boxes = append(boxes, b)
	}
	for _, b := range boxes {
		if b == nil {
			continue
		}
		if err := b.api.ResetState(); err != nil {
			errs = append(errs, fmt.Errorf("resetting %s: %w", b.name, err))
		}
	}
	c.mu.Lock()
	clear(c.cuts)
	c.mu.Unlock()
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
// kafkatoxic): the nth (from 1, counted over every connection of each proxy of the link; 0:
// every one) with API key apiKey is dropped (kafkatoxic.Drop), held (kafkatoxic.Hold) with what
// follows it on its connection, for hold, or until the toxic is removed when hold is 0, or let
// through with its connection closed behind it (kafkatoxic.DropResponse). Only a
// Toxiproxy image whose ToxicsLabel lists it has it (Verity's stand-in does; the official image
// does not): AddToxic says so with ErrNoRequestToxic.
func KafkaRequest(action string, apiKey int16, nth int, hold time.Duration) Toxic {
	return Toxic{Type: kafkatoxic.Type, Stream: "upstream",
		Attributes: map[string]any{"action": action, "api_key": apiKey, "nth": nth, "delay": hold.Milliseconds()}}
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
	err := c.eachProxy(l, "adding toxic "+t.Name+" to", func(p *toxiproxy.Proxy) error {
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
	err := c.eachProxy(l, "removing toxic "+name+" from", func(p *toxiproxy.Proxy) error {
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
