package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/verity-kafka/verity/harness"
)

// Target picks nodes from the live cluster when a fault is injected, never earlier: the leader
// of a partition at that moment, the active controller, a random minority.
type Target interface {
	// Resolve returns the nodes (at least one) and how they were chosen, for the history.
	Resolve(ctx context.Context, e *Env) (nodes []int, role string, err error)
	// Available returns nil when the target can exist on c, or why not.
	Available(c Cluster) error
	String() string
}

// Node is the node with a fixed id.
func Node(id int) Target { return nodeTarget(id) }

type nodeTarget int

func (t nodeTarget) String() string { return fmt.Sprintf("node %d", int(t)) }
func (t nodeTarget) Available(c Cluster) error {
	if !slices.Contains(allNodes(c), int(t)) {
		return fmt.Errorf("no node %d (nodes %v)", int(t), allNodes(c))
	}
	return nil
}
func (t nodeTarget) Resolve(context.Context, *Env) ([]int, string, error) {
	return []int{int(t)}, t.String(), nil
}

// LeaderOf is the current leader of a partition.
func LeaderOf(topic string, partition int32) Target { return leaderOf{topic, partition} }

type leaderOf struct {
	topic     string
	partition int32
}

func (t leaderOf) String() string            { return fmt.Sprintf("leader of %s-%d", t.topic, t.partition) }
func (t leaderOf) Available(c Cluster) error { return needBrokers(c, 1) }
func (t leaderOf) Resolve(ctx context.Context, e *Env) ([]int, string, error) {
	p, err := describePartition(ctx, e, t.topic, t.partition)
	if err != nil {
		return nil, "", fmt.Errorf("finding the %s: %w", t, err)
	}
	return []int{int(p.Leader)}, fmt.Sprintf("%s (epoch %d, ISR %v)", t, p.LeaderEpoch, p.ISR), nil
}

// FollowerOf is one follower of a partition, drawn from the seeded source among the followers
// in the ISR (among all followers when none is in it).
func FollowerOf(topic string, partition int32) Target { return followerOf{topic, partition, false} }

// FollowersOf is every follower of a partition (its replicas but the leader).
func FollowersOf(topic string, partition int32) Target { return followerOf{topic, partition, true} }

type followerOf struct {
	topic     string
	partition int32
	all       bool
}

func (t followerOf) String() string {
	if t.all {
		return fmt.Sprintf("followers of %s-%d", t.topic, t.partition)
	}
	return fmt.Sprintf("a follower of %s-%d", t.topic, t.partition)
}
func (t followerOf) Available(c Cluster) error { return needBrokers(c, 2) }
func (t followerOf) Resolve(ctx context.Context, e *Env) ([]int, string, error) {
	p, err := describePartition(ctx, e, t.topic, t.partition)
	if err != nil {
		return nil, "", fmt.Errorf("finding %s: %w", t, err)
	}
	fs := without(ints32(p.Replicas), int(p.Leader))
	if len(fs) == 0 {
		return nil, "", fmt.Errorf("finding %s: replicas %v have no follower", t, p.Replicas)
	}
	role := fmt.Sprintf("%s (leader %d, ISR %v)", t, p.Leader, p.ISR)
	if t.all {
		return fs, role, nil
	}
	var inISR []int
	for _, f := range fs {
		if slices.Contains(p.ISR, int32(f)) {
			inISR = append(inISR, f)
		}
	}
	if len(inISR) > 0 {
		fs = inISR
	}
	return []int{fs[e.Rand.IntN(len(fs))]}, role, nil
}

// ReplicasOf is every replica of a partition, its leader and followers.
func ReplicasOf(topic string, partition int32) Target { return replicasOf{topic, partition} }

type replicasOf struct {
	topic     string
	partition int32
}

func (t replicasOf) String() string            { return fmt.Sprintf("replicas of %s-%d", t.topic, t.partition) }
func (t replicasOf) Available(c Cluster) error { return needBrokers(c, 1) }
func (t replicasOf) Resolve(ctx context.Context, e *Env) ([]int, string, error) {
	p, err := describePartition(ctx, e, t.topic, t.partition)
	if err != nil {
		return nil, "", fmt.Errorf("finding the %s: %w", t, err)
	}
	reps := ints32(p.Replicas)
	slices.Sort(reps)
	return reps, fmt.Sprintf("%s (leader %d, ISR %v)", t, p.Leader, p.ISR), nil
}

// Controllers is every KRaft controller: the whole quorum.
func Controllers() Target { return controllers{} }

type controllers struct{}

func (controllers) String() string            { return "every controller" }
func (controllers) Available(c Cluster) error { return nil }
func (t controllers) Resolve(_ context.Context, e *Env) ([]int, string, error) {
	ids := slices.Clone(e.Cluster.Controllers())
	slices.Sort(ids)
	return ids, fmt.Sprintf("%s %v", t, ids), nil
}

// ActiveController is the KRaft quorum's current leader (see Locator.ActiveController).
func ActiveController() Target { return activeController{} }

type activeController struct{}

func (activeController) String() string            { return "active controller" }
func (activeController) Available(c Cluster) error { return nil }
func (activeController) Resolve(ctx context.Context, e *Env) ([]int, string, error) {
	id, epoch, err := e.Locator.ActiveController(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("finding the active controller: %w", err)
	}
	return []int{id}, fmt.Sprintf("active controller (quorum epoch %d)", epoch), nil
}

// TxnCoordinator is the transaction coordinator of a transactional.id: the leader of its
// __transaction_state partition.
func TxnCoordinator(txnID string) Target { return coordinator{txnID, true} }

// GroupCoordinator is the group coordinator of a consumer group: the leader of its
// __consumer_offsets partition.
func GroupCoordinator(group string) Target { return coordinator{group, false} }

type coordinator struct {
	key string
	txn bool
}

func (t coordinator) String() string {
	if t.txn {
		return fmt.Sprintf("transaction coordinator of %q", t.key)
	}
	return fmt.Sprintf("group coordinator of %q", t.key)
}
func (t coordinator) Available(c Cluster) error { return needBrokers(c, 1) }
func (t coordinator) Resolve(ctx context.Context, e *Env) ([]int, string, error) {
	var id int
	var err error
	if t.txn {
		id, err = e.Locator.TxnCoordinator(ctx, t.key)
	} else {
		id, err = e.Locator.GroupCoordinator(ctx, t.key)
	}
	if err != nil {
		return nil, "", fmt.Errorf("finding the %s: %w", t, err)
	}
	return []int{id}, t.String(), nil
}

// RandomBroker is one broker drawn from the seeded source.
func RandomBroker() Target { return randomNodes{kind: "broker"} }

// RandomMinority is a random minority of the brokers: (n-1)/2 of n, at least one.
func RandomMinority() Target { return randomNodes{kind: "minority"} }

// RandomMajority is a random majority of the brokers: n/2+1 of n.
func RandomMajority() Target { return randomNodes{kind: "majority"} }

type randomNodes struct{ kind string }

func (t randomNodes) String() string {
	if t.kind == "broker" {
		return "a random broker"
	}
	return "a random " + t.kind + " of the brokers"
}
func (t randomNodes) Available(c Cluster) error {
	if t.kind == "minority" {
		return needBrokers(c, 2)
	}
	return needBrokers(c, 1)
}
func (t randomNodes) size(n int) int {
	switch t.kind {
	case "minority":
		return max(1, (n-1)/2)
	case "majority":
		return n/2 + 1
	}
	return 1
}
func (t randomNodes) Resolve(_ context.Context, e *Env) ([]int, string, error) {
	pool := slices.Clone(e.Cluster.Brokers())
	slices.Sort(pool)
	picked := pick(e, pool, t.size(len(pool)))
	return picked, fmt.Sprintf("%s %v", t, pool), nil
}

// pick draws k of pool (sorted on return) from the env's seeded source.
func pick(e *Env, pool []int, k int) []int {
	p := slices.Clone(pool)
	e.Rand.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	out := p[:min(k, len(p))]
	slices.Sort(out)
	return out
}

// resolveWait bounds how long a target waits for a partition to have a leader.
const resolveWait = 15 * time.Second

// describePartition returns a partition's state once it has a leader, asking again for up to
// resolveWait: right after a fault or a heal an election may be under way, or the admin
// client's connections may have been cut and need a moment to come back.
func describePartition(ctx context.Context, e *Env, topic string, partition int32) (harness.PartitionState, error) {
	wctx, cancel := context.WithTimeout(ctx, resolveWait)
	defer cancel()
	var last error
	for {
		p, err := e.Cluster.DescribePartition(wctx, topic, partition)
		switch {
		case err == nil && p.Leader >= 0:
			return p, nil
		case err == nil:
			last = fmt.Errorf("%s-%d has no leader (ISR %v)", topic, partition, p.ISR)
		case strings.Contains(err.Error(), "has no partition"):
			return p, err // asking again will not create it
		default:
			last = err
		}
		if !waitUntil(wctx, time.Now().Add(200*time.Millisecond)) {
			if ctx.Err() != nil {
				return p, ctx.Err()
			}
			return p, fmt.Errorf("no answer with a leader within %s: %w", resolveWait, last)
		}
	}
}

func needBrokers(c Cluster, n int) error {
	if b := len(c.Brokers()); b < n {
		return fmt.Errorf("needs at least %d brokers, the cluster has %d", n, b)
	}
	return nil
}

// LinkSet picks directed links from the live cluster when a fault is injected.
type LinkSet interface {
	Resolve(ctx context.Context, e *Env) (links []harness.Link, role string, err error)
	Available(c Cluster) error
	String() string
}

// ClientLinksTo is the client->node link of every node t resolves to: what the test's
// clients send to that broker, and its answers.
func ClientLinksTo(t Target) LinkSet { return clientLinks{t} }

type clientLinks struct{ t Target }

func (s clientLinks) String() string            { return "client links to " + s.t.String() }
func (s clientLinks) Available(c Cluster) error { return s.t.Available(c) }
func (s clientLinks) Resolve(ctx context.Context, e *Env) ([]harness.Link, string, error) {
	nodes, role, err := s.t.Resolve(ctx, e)
	if err != nil {
		return nil, "", err
	}
	var ls []harness.Link
	for _, id := range nodes {
		if !slices.Contains(e.Cluster.Brokers(), id) {
			return nil, "", fmt.Errorf("%s: node %d is a controller; clients talk to brokers only", s, id)
		}
		ls = append(ls, harness.Link{From: harness.ClientEndpoint, To: id})
	}
	return ls, "client links to " + role, nil
}

// FetchLinksOf are the links over which a partition's followers fetch from its leader
// (follower->leader: the follower opens the connections). Slowing them delays replication
// without touching clients or the quorum's other links.
func FetchLinksOf(topic string, partition int32) LinkSet { return fetchLinks{topic, partition} }

type fetchLinks struct {
	topic     string
	partition int32
}

func (s fetchLinks) String() string            { return fmt.Sprintf("fetch links of %s-%d", s.topic, s.partition) }
func (s fetchLinks) Available(c Cluster) error { return needBrokers(c, 2) }
func (s fetchLinks) Resolve(ctx context.Context, e *Env) ([]harness.Link, string, error) {
	p, err := describePartition(ctx, e, s.topic, s.partition)
	if err != nil {
		return nil, "", fmt.Errorf("finding the %s: %w", s, err)
	}
	var ls []harness.Link
	for _, f := range without(ints32(p.Replicas), int(p.Leader)) {
		ls = append(ls, harness.Link{From: f, To: int(p.Leader)})
	}
	if len(ls) == 0 {
		return nil, "", fmt.Errorf("finding the %s: no follower", s)
	}
	return ls, fmt.Sprintf("%s (leader %d, epoch %d)", s, p.Leader, p.LeaderEpoch), nil
}

// NodeLinksOf is every node->node link to and from the nodes t resolves to (not client links).
func NodeLinksOf(t Target) LinkSet { return nodeLinks{t} }

type nodeLinks struct{ t Target }

func (s nodeLinks) String() string { return "node links of " + s.t.String() }
func (s nodeLinks) Available(c Cluster) error {
	if len(allNodes(c)) < 2 {
		return errors.New("a single node has no node links")
	}
	return s.t.Available(c)
}
func (s nodeLinks) Resolve(ctx context.Context, e *Env) ([]harness.Link, string, error) {
	nodes, role, err := s.t.Resolve(ctx, e)
	if err != nil {
		return nil, "", err
	}
	ls := nodeLinksBetween(e.Cluster, nodes, without(allNodes(e.Cluster), nodes...))
	return ls, "node links of " + role, nil
}

// Links is a fixed set of links.
func Links(ls ...harness.Link) LinkSet { return fixedLinks(ls) }

type fixedLinks []harness.Link

func (s fixedLinks) String() string { return fmt.Sprintf("links %v", []harness.Link(s)) }
func (s fixedLinks) Available(c Cluster) error {
	for _, l := range s {
		if !slices.Contains(c.Links(), l) {
			return fmt.Errorf("no link %s in this cluster", l)
		}
	}
	return nil
}
func (s fixedLinks) Resolve(context.Context, *Env) ([]harness.Link, string, error) {
	return slices.Clone([]harness.Link(s)), s.String(), nil
}
