package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
)

// Network faults cut directed links (harness.Link) through their Toxiproxy proxies. The cut is
// a black hole by default (bytes vanish both ways and connections stay open, so peers wait for
// their timeouts, as in a real partition); Cut: harness.CutRefuse makes it refuse connections
// at once instead. Each event records which ("cut"). Heal is one "heal" event naming the same
// links. Client links are never touched unless the fault is about them (ClientCut): a node cut
// off from its peers still answers clients.

// Isolate cuts the target nodes off from every other node, both ways. Event "isolate".
type Isolate struct {
	Target Target
	Cut    harness.CutKind
}

func (f Isolate) Name() string   { return "isolate" }
func (f Isolate) String() string { return "isolate(" + f.Target.String() + ")" }
func (f Isolate) Available(c Cluster) error {
	if len(allNodes(c)) < 2 {
		return errors.New("a single node cannot be isolated from anything")
	}
	return f.Target.Available(c)
}
func (f Isolate) Inject(ctx context.Context, e *Env) (any, error) {
	nodes, role, err := f.Target.Resolve(ctx, e)
	if err != nil {
		return nil, err
	}
	rest := without(allNodes(e.Cluster), nodes...)
	links := nodeLinksBetween(e.Cluster, nodes, rest)
	return cutLinks(ctx, e, f.Name(), f.Cut, links, Targets{Nodes: nodes, Role: role,
		Note: fmt.Sprintf("%v cut off from %v", nodes, rest)})
}
func (f Isolate) Heal(ctx context.Context, e *Env, state any) error { return healLinks(ctx, e, state) }

// Split cuts the nodes into a random minority and the majority, both ways. The minority is a
// random minority of the brokers plus, with dedicated controllers, a random minority of the
// controllers, so that the majority side keeps the quorum. Event "split".
type Split struct{ Cut harness.CutKind }

func (f Split) Name() string   { return "split" }
func (f Split) String() string { return "split(random minority | majority)" }
func (f Split) Available(c Cluster) error {
	if n := len(allNodes(c)); n < 3 {
		return fmt.Errorf("a majority/minority split needs at least 3 nodes, the cluster has %d", n)
	}
	return nil
}
func (f Split) Inject(ctx context.Context, e *Env) (any, error) {
	brokers := slices.Sorted(slices.Values(e.Cluster.Brokers()))
	minority := pick(e, brokers, max(1, (len(brokers)-1)/2))
	if ctl := dedicatedControllers(e.Cluster); len(ctl) > 0 {
		minority = append(minority, pick(e, ctl, max(1, (len(ctl)-1)/2))...)
		slices.Sort(minority)
	}
	majority := without(allNodes(e.Cluster), minority...)
	links := nodeLinksBetween(e.Cluster, minority, majority)
	return cutLinks(ctx, e, f.Name(), f.Cut, links, Targets{Nodes: minority, Role: "random minority",
		Note: fmt.Sprintf("minority %v | majority %v", minority, majority)})
}
func (f Split) Heal(ctx context.Context, e *Env, state any) error { return healLinks(ctx, e, state) }

func dedicatedControllers(c Cluster) []int {
	var out []int
	for _, id := range c.Controllers() {
		if !slices.Contains(c.Brokers(), id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Bridge splits the nodes into two halves that cannot reach each other but both reach one
// middle node (Jepsen's bridge): each half may believe the other is gone while the middle node
// talks to both. Halves and middle are drawn from the seeded source. Event "bridge"; its nodes
// are the middle node.
type Bridge struct{ Cut harness.CutKind }

func (f Bridge) Name() string   { return "bridge" }
func (f Bridge) String() string { return "bridge(two halves, one middle node)" }
func (f Bridge) Available(c Cluster) error {
	if n := len(allNodes(c)); n < 3 {
		return fmt.Errorf("a bridge needs at least 3 nodes, the cluster has %d", n)
	}
	return nil
}
func (f Bridge) Inject(ctx context.Context, e *Env) (any, error) {
	nodes := allNodes(e.Cluster)
	e.Rand.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	middle := nodes[0]
	h := (len(nodes) - 1) / 2
	a, b := slices.Sorted(slices.Values(nodes[1:1+h])), slices.Sorted(slices.Values(nodes[1+h:]))
	links := nodeLinksBetween(e.Cluster, a, b)
	return cutLinks(ctx, e, f.Name(), f.Cut, links, Targets{Nodes: []int{middle}, Role: "random middle node",
		Note: fmt.Sprintf("halves %v and %v, both reach %d", a, b, middle)})
}
func (f Bridge) Heal(ctx context.Context, e *Env, state any) error { return healLinks(ctx, e, state) }

// LeaderCut cuts a partition's leader off from its followers, both ways (replication and, on
// combined nodes, quorum links between them), while clients still reach it: the leader keeps
// taking writes it cannot replicate until the controller moves leadership or the ISR shrinks.
// Event "leader-cut".
type LeaderCut struct {
	Topic     string
	Partition int32
	Cut       harness.CutKind
}

func (f LeaderCut) Name() string { return "leader-cut" }
func (f LeaderCut) String() string {
	return fmt.Sprintf("leader-cut(leader of %s-%d from its followers)", f.Topic, f.Partition)
}
func (f LeaderCut) Available(c Cluster) error { return needBrokers(c, 2) }
func (f LeaderCut) Inject(ctx context.Context, e *Env) (any, error) {
	p, err := describePartition(ctx, e, f.Topic, f.Partition)
	if err != nil {
		return nil, fmt.Errorf("finding the leader of %s-%d: %w", f.Topic, f.Partition, err)
	}
	leader := int(p.Leader)
	followers := without(ints32(p.Replicas), leader)
	if len(followers) == 0 {
		return nil, fmt.Errorf("%s-%d has no follower to cut its leader from", f.Topic, f.Partition)
	}
	links := nodeLinksBetween(e.Cluster, []int{leader}, followers)
	return cutLinks(ctx, e, f.Name(), f.Cut, links, Targets{Nodes: []int{leader},
		Role: fmt.Sprintf("leader of %s-%d (epoch %d, ISR %v)", f.Topic, f.Partition, p.LeaderEpoch, p.ISR),
		Note: fmt.Sprintf("leader %d cut from followers %v; clients still reach it", leader, followers)})
}
func (f LeaderCut) Heal(ctx context.Context, e *Env, state any) error {
	return healLinks(ctx, e, state)
}

// OneWayCut cuts only the connections that From's nodes open to To's nodes: To can still open
// connections to From and be answered. E.g. From a follower To its leader: the follower's
// fetches fail (it drops out of the ISR) while the leader, on combined nodes, still reaches
// the follower's controller. Event "one-way-cut".
type OneWayCut struct {
	From, To Target
	Cut      harness.CutKind
}

func (f OneWayCut) Name() string { return "one-way-cut" }
func (f OneWayCut) String() string {
	return fmt.Sprintf("one-way-cut(%s -> %s)", f.From, f.To)
}
func (f OneWayCut) Available(c Cluster) error {
	if len(allNodes(c)) < 2 {
		return errors.New("a one-way cut needs two nodes")
	}
	return errors.Join(f.From.Available(c), f.To.Available(c))
}
func (f OneWayCut) Inject(ctx context.Context, e *Env) (any, error) {
	from, frole, err := f.From.Resolve(ctx, e)
	if err != nil {
		return nil, err
	}
	to, trole, err := f.To.Resolve(ctx, e)
	if err != nil {
		return nil, err
	}
	var links []harness.Link
	for _, l := range e.Cluster.Links() {
		if l.From != harness.ClientEndpoint && l.From != l.To && slices.Contains(from, l.From) && slices.Contains(to, l.To) {
			links = append(links, l)
		}
	}
	if len(links) == 0 {
		return nil, fmt.Errorf("no link from %v (%s) to %v (%s)", from, frole, to, trole)
	}
	nodes := append(slices.Clone(from), to...)
	return cutLinks(ctx, e, f.Name(), f.Cut, links, Targets{Nodes: nodes, Role: frole + " -> " + trole,
		Note: fmt.Sprintf("connections from %v to %v cut; %v can still reach %v", from, to, to, from)})
}
func (f OneWayCut) Heal(ctx context.Context, e *Env, state any) error {
	return healLinks(ctx, e, state)
}

// ClientCut cuts the test's clients off from the target brokers; the brokers still talk to
// each other. Event "client-cut".
type ClientCut struct {
	Target Target
	Cut    harness.CutKind
}

func (f ClientCut) Name() string              { return "client-cut" }
func (f ClientCut) String() string            { return "client-cut(" + f.Target.String() + ")" }
func (f ClientCut) Available(c Cluster) error { return f.Target.Available(c) }
func (f ClientCut) Inject(ctx context.Context, e *Env) (any, error) {
	links, role, err := ClientLinksTo(f.Target).Resolve(ctx, e)
	if err != nil {
		return nil, err
	}
	var nodes []int
	for _, l := range links {
		nodes = append(nodes, l.To)
	}
	return cutLinks(ctx, e, f.Name(), f.Cut, links, Targets{Nodes: nodes, Role: role})
}
func (f ClientCut) Heal(ctx context.Context, e *Env, state any) error {
	return healLinks(ctx, e, state)
}

// cutState is what a network fault's heal needs.
type cutState struct {
	fault string
	links []harness.Link
	t     Targets
}

// cutLinks cuts links as one event f. The state comes back even on error: some links may be
// cut.
func cutLinks(ctx context.Context, e *Env, f string, kind harness.CutKind, links []harness.Link, t Targets) (any, error) {
	if len(links) == 0 {
		return nil, fmt.Errorf("%s: no link to cut (%s)", f, t.Note)
	}
	if kind == "" {
		kind = harness.CutBlackhole
	}
	t.Links, t.Cut = linkPairs(links), string(kind)
	err := e.Do(ctx, f, t, func(ctx context.Context) error { return e.cut(ctx, links, kind) })
	return &cutState{fault: f, links: links, t: t}, err
}

func healLinks(ctx context.Context, e *Env, state any) error {
	s, ok := state.(*cutState)
	if !ok || s == nil {
		return nil
	}
	t := Targets{Nodes: s.t.Nodes, Links: s.t.Links, Cut: s.t.Cut, Fault: s.fault}
	return e.Do(ctx, history.FHeal, t, func(ctx context.Context) error { return e.heal(ctx, s.links) })
}
