package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/verity-kafka/verity/kafkaconf"
)

// saramaVersion is the protocol version a sarama client speaks with brokers of release v: the
// release's own, capped at the newest this sarama knows, so that it never asks a broker for
// more than the broker has.
func saramaVersion(v kafkaconf.KafkaVersion) sarama.KafkaVersion {
	sv, err := sarama.ParseKafkaVersion(string(v.Or()))
	if err != nil || !sarama.MaxVersion.IsAtLeast(sv) {
		return sarama.MaxVersion
	}
	return sv
}

// SaramaConfig returns a sarama configuration for a cluster of the default Kafka release with
// timeouts short enough for fault tests (Cluster.SaramaConfig: for that cluster's release).
// Callers adjust it (acks, idempotence, ...) before use.
func SaramaConfig(clientID string) *sarama.Config {
	return SaramaConfigFor(kafkaconf.DefaultKafkaVersion)(clientID)
}

// SaramaConfig is SaramaConfig for c's Kafka release (the oldest a node runs).
func (c *Cluster) SaramaConfig(clientID string) *sarama.Config {
	return SaramaConfigFor(c.KafkaVersion())(clientID)
}

// SaramaConfigFor returns SaramaConfig for Kafka release v.
func SaramaConfigFor(v kafkaconf.KafkaVersion) func(clientID string) *sarama.Config {
	return func(clientID string) *sarama.Config { return saramaConfig(v, clientID) }
}

func saramaConfig(v kafkaconf.KafkaVersion, clientID string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = saramaVersion(v)
	cfg.ClientID = clientID
	cfg.Net.DialTimeout = 5 * time.Second
	// Above the broker's ack timeout (Producer.Timeout, 10 s by default), so that the client
	// waits for a REQUEST_TIMED_OUT answer instead of dropping the connection as it arrives.
	cfg.Net.ReadTimeout = cfg.Producer.Timeout + 5*time.Second
	cfg.Net.WriteTimeout = 5 * time.Second
	cfg.Metadata.Retry.Max = 2
	cfg.Metadata.Retry.Backoff = 200 * time.Millisecond
	cfg.Admin.Timeout = 10 * time.Second
	return cfg
}

// TopicSpec is a topic to create.
type TopicSpec struct {
	Name       string
	Partitions int32 // default 1
	RF         int   // default: number of brokers
	MinISR     int   // min.insync.replicas; 0 leaves the broker's default
	// Unclean sets unclean.leader.election.enable when not nil.
	Unclean *bool
	// Config holds any other topic settings.
	Config map[string]string
}

// PartitionState is one partition as the brokers describe it.
type PartitionState struct {
	Topic       string
	Partition   int32
	Leader      int32 // -1 when there is none
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Offline     []int32
	// ELR are the eligible leader replicas (KIP-966): replicas out of the ISR that the
	// controller still counts as holding every committed record, so that one of them can be
	// elected cleanly when the ISR has no live member left. The controller keeps an ELR only
	// while the ISR is below min.insync.replicas, and only at eligible.leader.replicas.version 1
	// (finalized on new clusters from Kafka 4.1; Spec.Features sets it); otherwise it is empty.
	ELR []int32
	// LastKnownELR is the partition's last known ELR (KIP-966): the replicas the controller
	// keeps as the best candidates for an unclean recovery once the ISR and the ELR are both
	// empty; usually empty.
	LastKnownELR []int32
	// AnsweredBy is the broker whose answer this is. Every broker answers from its own copy of
	// the metadata, which is stale on a broker cut off from the controllers: Describe takes the
	// answers of the brokers it trusts (TrustedBrokers), DescribeFrom the one asked.
	AnsweredBy int32
}

// Offsets of one partition.
type Offsets struct {
	Earliest      int64
	HighWatermark int64 // end offset for read_uncommitted
	LastStable    int64 // end offset for read_committed (LSO)
}

type adminClient struct {
	client sarama.Client
	admin  sarama.ClusterAdmin
}

func (a *adminClient) close() {
	_ = a.admin.Close() // also closes the client
}

// ResetAdmin drops the cluster's shared admin client, closing it; the next admin question
// (WaitHealthy, CreateTopic, Offsets, Admin, ...) connects anew; Describe has a client of its
// own. Admin clients handed out by Admin before the reset are closed with it.
//
// Why: a sarama broker connection that has once read an answer out of turn ("correlation ID
// didn't match", after a request timed out during a fault) fails every later request until it
// is closed, and the shared admin client does not close it, so WaitHealthy could fail for
// minutes on a healthy cluster. WaitHealthy calls it after an admin error, and the nemesis
// between its bounded health checks.
func (c *Cluster) ResetAdmin() {
	c.mu.Lock()
	a := c.admin
	c.admin = nil
	c.mu.Unlock()
	if a != nil {
		a.close()
	}
}

// adminClient returns the cluster's shared admin client, creating it on first success.
func (c *Cluster) adminClient() (*adminClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.admin != nil {
		return c.admin, nil
	}
	cl, err := sarama.NewClient(c.bootstrap, c.SaramaConfig("verity-admin-"+c.spec.RunID))
	if err != nil {
		return nil, fmt.Errorf("connecting an admin client to %v: %w", c.bootstrap, err)
	}
	ad, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("creating the admin client: %w", err)
	}
	c.admin = &adminClient{client: cl, admin: ad}
	return c.admin, nil
}

func (a *adminClient) registeredBrokers() ([]int32, error) {
	bs, _, err := a.admin.DescribeCluster()
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, b := range bs {
		ids = append(ids, b.ID())
	}
	slices.Sort(ids)
	return ids, nil
}

// createTopicAt sends the CreateTopics request to broker id directly.
func (a *adminClient) createTopicAt(id int32, t TopicSpec) error {
	b, err := a.broker(id)
	if err != nil {
		return err
	}
	req := sarama.NewCreateTopicsRequest(a.client.Config().Version, map[string]*sarama.TopicDetail{t.Name: t.detail()},
		a.client.Config().Admin.Timeout, false)
	resp, err := b.CreateTopics(req)
	if err != nil {
		_ = b.Close() // reconnect next time
		return err
	}
	te, ok := resp.TopicErrors[t.Name]
	switch {
	case !ok:
		return sarama.ErrIncompleteResponse
	case errors.Is(te.Err, sarama.ErrNoError), errors.Is(te.Err, sarama.ErrTopicAlreadyExists):
		return nil
	}
	return te
}

func (a *adminClient) createTopic(t TopicSpec) error {
	err := a.admin.CreateTopic(t.Name, t.detail(), false)
	if errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return nil
	}
	return err
}

// detail is t as a CreateTopics request states it.
func (t TopicSpec) detail() *sarama.TopicDetail {
	cfg := map[string]*string{}
	set := func(k, v string) { cfg[k] = &v }
	if t.MinISR > 0 {
		set("min.insync.replicas", strconv.Itoa(t.MinISR))
	}
	if t.Unclean != nil {
		set("unclean.leader.election.enable", strconv.FormatBool(*t.Unclean))
	}
	for k, v := range t.Config {
		set(k, v)
	}
	return &sarama.TopicDetail{NumPartitions: t.Partitions, ReplicationFactor: int16(t.RF), ConfigEntries: cfg}
}

// CreateTopic creates a topic and waits until every partition has its full ISR and a leader that serves it.
// A topic that already exists is left as it is.
func (c *Cluster) CreateTopic(ctx context.Context, t TopicSpec) error {
	if t.Partitions <= 0 {
		t.Partitions = 1
	}
	if t.RF <= 0 {
		t.RF = len(c.Brokers())
	}
	if err := c.createTopic(t); err != nil {
		return fmt.Errorf("creating topic %s: %w", t.Name, err)
	}
	err := poll(ctx, 200*time.Millisecond, func() (bool, error) {
		ps, err := c.describe(ctx, t.Name)
		if err != nil || len(ps) < int(t.Partitions) {
			return false, nil
		}
		for _, p := range ps {
			if p.Leader < 0 || len(p.ISR) < t.RF {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for topic %s to have leaders and full ISRs: %w", t.Name, err)
	}
	// The metadata names a leader before that broker has loaded the partition's log; until it
	// has, a client that fetches or lists offsets there is told the partition does not exist
	// (sarama's partition consumer gives up on that at once). A leader that answers ListOffsets
	// has it.
	for p := range t.Partitions {
		if _, err := c.Offsets(ctx, t.Name, p); err != nil {
			return fmt.Errorf("waiting for the leader of %s-%d to serve it: %w", t.Name, p, err)
		}
	}
	return nil
}

// createTopic sends the CreateTopics request through the admin client, which sends it to the
// broker the metadata names as controller (in KRaft any broker, which forwards it); when that
// fails without an answer it is sent to every broker in turn on a new connection. CI met a
// broker that answered CreateTopics with EOF on every attempt, and on a new admin client, after
// the test had killed and restarted nodes; another broker takes the request all the same.
// Creating is idempotent here: an existing topic counts as created. The error names every
// attempt.
func (c *Cluster) createTopic(t TopicSpec) error {
	a, err := c.adminClient()
	if err != nil {
		return err
	}
	first := a.createTopic(t)
	var answer *sarama.TopicError
	if first == nil || errors.As(first, &answer) {
		return first
	}
	c.ResetAdmin()
	errs := []error{fmt.Errorf("through the admin client: %w", first)}
	if a, err = c.adminClient(); err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, id := range c.Brokers() {
		err := a.createTopicAt(int32(id), t)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("at broker %d: %w", id, err))
		if errors.As(err, &answer) {
			return errors.Join(errs...)
		}
	}
	return errors.Join(errs...)
}

// Describe returns the state of every partition of topic as the brokers the harness trusts
// report it (TrustedBrokers: running, reachable by clients and in touch with a majority of the
// controllers through links the harness has not cut; an isolated broker's metadata is stale, and
// it would still name itself leader). Where they disagree, the answer with the highest leader
// epoch wins; each state says which broker gave it (AnsweredBy). The brokers left out are not
// asked at all: DescribeFrom asks one broker of the caller's choosing, whatever its links.
func (c *Cluster) Describe(ctx context.Context, topic string) ([]PartitionState, error) {
	ps, err := c.describe(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("describing topic %s: %w", topic, err)
	}
	return ps, nil
}

// DescribeFrom returns the state of every partition of topic as broker id alone reports it from
// its own copy of the metadata, whatever the harness has done to it: an isolated leader's view,
// say, which still names itself leader at an epoch the rest of the cluster has left behind.
// Clients must reach the broker: it fails when the broker does not answer (stopped, paused, its
// client link cut) within ctx or 10 seconds.
func (c *Cluster) DescribeFrom(ctx context.Context, id int, topic string) ([]PartitionState, error) {
	ps, err := c.describeAt(ctx, int32(id), topic)
	if err != nil {
		return nil, fmt.Errorf("describing topic %s as broker %d sees it: %w", topic, id, err)
	}
	return ps, nil
}

// DescribePartition returns one partition's state.
func (c *Cluster) DescribePartition(ctx context.Context, topic string, partition int32) (PartitionState, error) {
	ps, err := c.Describe(ctx, topic)
	if err != nil {
		return PartitionState{}, err
	}
	for _, p := range ps {
		if p.Partition == partition {
			return p, nil
		}
	}
	return PartitionState{}, fmt.Errorf("topic %s has no partition %d", topic, partition)
}

// WaitPartition polls a partition's state until cond holds or ctx ends, and returns the last
// state seen.
func (c *Cluster) WaitPartition(ctx context.Context, topic string, partition int32, cond func(PartitionState) bool) (PartitionState, error) {
	var last PartitionState
	var lastErr error
	err := poll(ctx, 250*time.Millisecond, func() (bool, error) {
		p, err := c.DescribePartition(ctx, topic, partition)
		if err != nil {
			lastErr = err
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		return last, fmt.Errorf("waiting on %s-%d (last state %+v, last error %v): %w", topic, partition, last, lastErr, err)
	}
	return last, nil
}

// TrustedBrokers lists the brokers Describe asks now: the running brokers that clients can reach
// and that reach a majority of the running controllers through links the harness has not cut
// (only the controller traffic counts: a broker whose replication alone is cut still follows the
// metadata log). Their metadata is current; the others' may be stale.
func (c *Cluster) TrustedBrokers() []int {
	var ids []int
	for _, id := range c.trustedBrokers() {
		ids = append(ids, int(id))
	}
	return ids
}

// trustedBrokers is TrustedBrokers.
func (c *Cluster) trustedBrokers() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	controllers := 0
	for _, m := range c.members {
		if m.isController() {
			controllers++
		}
	}
	var ids []int32
	for _, b := range c.members {
		if !b.isBroker() || c.state[b.ID] != NodeRunning {
			continue
		}
		if _, cut := c.cuts[LinkTraffic{Link{ClientEndpoint, b.ID}, TrafficClient}]; cut {
			continue
		}
		reached := 0
		for _, ctl := range c.members {
			if !ctl.isController() || c.state[ctl.ID] != NodeRunning {
				continue
			}
			// Only the quorum's listener matters: a broker whose replication alone is cut still
			// follows the metadata log.
			_, out := c.cuts[LinkTraffic{Link{b.ID, ctl.ID}, TrafficController}]
			_, in := c.cuts[LinkTraffic{Link{ctl.ID, b.ID}, TrafficController}]
			if ctl.ID == b.ID || (!out && !in) {
				reached++
			}
		}
		if 2*reached > controllers {
			ids = append(ids, int32(b.ID))
		}
	}
	return ids
}

func (c *Cluster) describe(ctx context.Context, topic string) ([]PartitionState, error) {
	brokers := c.trustedBrokers()
	if len(brokers) == 0 {
		return nil, fmt.Errorf("no broker is running, reachable and in touch with the controllers (nodes %v, cuts %v); DescribeFrom asks one broker regardless",
			c.NodeStates(), c.TrafficCuts())
	}
	answers := make([][]PartitionState, len(brokers))
	errs := make([]error, len(brokers))
	var wg sync.WaitGroup
	for i, id := range brokers {
		wg.Go(func() { answers[i], errs[i] = c.describeAt(ctx, id, topic) })
	}
	wg.Wait()
	best := map[int32]PartitionState{}
	for _, an := range answers {
		for _, p := range an {
			if cur, ok := best[p.Partition]; !ok || p.LeaderEpoch > cur.LeaderEpoch {
				best[p.Partition] = p
			}
		}
	}
	if len(best) == 0 {
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("topic %s has no partitions", topic)
	}
	out := slices.Collect(maps.Values(best))
	slices.SortFunc(out, func(x, y PartitionState) int { return int(x.Partition - y.Partition) })
	return out, ctx.Err()
}

// describeTimeout bounds one broker's answer to DescribeTopicPartitions: a broker behind a
// black hole would otherwise hold the question until ctx ends.
const describeTimeout = 10 * time.Second

// describeAt asks broker id for topic's partitions with DescribeTopicPartitions (KIP-966), the
// request that carries the ELR, which Metadata does not. It goes to the broker's client address
// (a seed of the describe client), so that it reaches that broker even when the broker's own
// metadata, or the cluster's, has lost track of it.
func (c *Cluster) describeAt(ctx context.Context, id int32, topic string) ([]PartitionState, error) {
	idx := slices.Index(c.Brokers(), int(id))
	if idx < 0 {
		return nil, fmt.Errorf("no broker %d in this cluster (brokers %v)", id, c.Brokers())
	}
	cl, err := c.describeClient()
	if err != nil {
		return nil, err
	}
	seeds := cl.SeedBrokers()
	if idx >= len(seeds) {
		return nil, fmt.Errorf("broker %d has no client address (seeds %d)", id, len(seeds))
	}
	rctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	var out []PartitionState
	for {
		resp, err := req.RequestWith(rctx, seeds[idx])
		if err != nil {
			return nil, fmt.Errorf("DescribeTopicPartitions to broker %d: %w", id, err)
		}
		for _, t := range resp.Topics {
			if t.Topic == nil || *t.Topic != topic {
				continue
			}
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				return nil, fmt.Errorf("broker %d: topic %s: %w", id, topic, err)
			}
			for _, p := range t.Partitions {
				out = append(out, PartitionState{
					Topic: topic, Partition: p.Partition, Leader: p.LeaderID, LeaderEpoch: p.LeaderEpoch,
					Replicas: sortedCopy(p.Replicas), ISR: sortedCopy(p.ISR), Offline: sortedCopy(p.OfflineReplicas),
					ELR: sortedCopy(p.EligibleLeaderReplicas), LastKnownELR: sortedCopy(p.LastKnownELR), AnsweredBy: id,
				})
			}
		}
		// The broker answers at most ResponsePartitionLimit partitions (2000) at a time.
		if resp.NextCursor == nil || resp.NextCursor.Topic != topic {
			break
		}
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: resp.NextCursor.Partition}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("broker %d: no topic %s", id, topic)
	}
	return out, nil
}

// describeClient returns the cluster's shared franz-go client for DescribeTopicPartitions,
// creating it on first use: sarama does not speak that request. Its seeds are the brokers'
// client addresses, in Brokers' order, and it is only ever asked through them.
func (c *Cluster) describeClient() (*kgo.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.describer != nil {
		return c.describer, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap...), kgo.ClientID("verity-describe-"+c.spec.RunID),
		kgo.DialTimeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("creating the describe client for %v: %w", c.bootstrap, err)
	}
	c.describer = cl
	return cl, nil
}

func sortedCopy(s []int32) []int32 {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func (a *adminClient) broker(id int32) (*sarama.Broker, error) {
	b, err := a.client.Broker(id)
	if err != nil {
		if rerr := a.client.RefreshMetadata(); rerr != nil {
			return nil, fmt.Errorf("broker %d: %w", id, err)
		}
		if b, err = a.client.Broker(id); err != nil {
			return nil, fmt.Errorf("broker %d: %w", id, err)
		}
	}
	if ok, _ := b.Connected(); !ok {
		if err := b.Open(a.client.Config()); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
			return nil, fmt.Errorf("connecting to broker %d: %w", id, err)
		}
	}
	return b, nil
}

// Offsets returns a partition's earliest offset, high watermark and last stable offset, asked of
// its current leader. Answers that only mean "not yet" (a leader just elected, leadership moving)
// are retried until ctx ends.
func (c *Cluster) Offsets(ctx context.Context, topic string, partition int32) (Offsets, error) {
	var o Offsets
	var last error
	err := poll(ctx, 200*time.Millisecond, func() (bool, error) {
		o, last = c.offsetsOnce(ctx, topic, partition)
		if last == nil {
			return true, nil
		}
		var kerr sarama.KError
		if errors.As(last, &kerr) && !retriable(kerr) {
			return false, last
		}
		return false, nil
	})
	if err != nil {
		if last != nil && !errors.Is(err, last) {
			err = fmt.Errorf("%w (last answer: %v)", err, last)
		}
		return Offsets{}, err
	}
	return o, nil
}

// WaitOffsets polls a partition's offsets until cond holds or ctx ends.
func (c *Cluster) WaitOffsets(ctx context.Context, topic string, partition int32, cond func(Offsets) bool) (Offsets, error) {
	var last Offsets
	err := poll(ctx, 200*time.Millisecond, func() (bool, error) {
		o, err := c.Offsets(ctx, topic, partition)
		if err != nil {
			return false, nil
		}
		last = o
		return cond(o), nil
	})
	if err != nil {
		return last, fmt.Errorf("waiting on the offsets of %s-%d (last %+v): %w", topic, partition, last, err)
	}
	return last, nil
}

func retriable(k sarama.KError) bool {
	switch k {
	case sarama.ErrOffsetNotAvailable, sarama.ErrNotLeaderForPartition, sarama.ErrLeaderNotAvailable,
		sarama.ErrUnknownLeaderEpoch, sarama.ErrFencedLeaderEpoch, sarama.ErrRequestTimedOut,
		sarama.ErrNotEnoughReplicas, sarama.ErrUnknownTopicOrPartition:
		return true
	}
	return false
}

func (c *Cluster) offsetsOnce(ctx context.Context, topic string, partition int32) (Offsets, error) {
	p, err := c.DescribePartition(ctx, topic, partition)
	if err != nil {
		return Offsets{}, err
	}
	if p.Leader < 0 {
		return Offsets{}, fmt.Errorf("offsets of %s-%d: the partition has no leader", topic, partition)
	}
	a, err := c.adminClient()
	if err != nil {
		return Offsets{}, err
	}
	b, err := a.broker(p.Leader)
	if err != nil {
		return Offsets{}, err
	}
	get := func(ts int64, iso sarama.IsolationLevel) (int64, error) {
		req := sarama.NewOffsetRequest(a.client.Config().Version)
		req.IsolationLevel = iso
		req.AddBlock(topic, partition, ts, 1)
		resp, err := b.GetAvailableOffsets(req)
		if err != nil {
			_ = b.Close()
			return -1, err
		}
		blk := resp.GetBlock(topic, partition)
		if blk == nil {
			return -1, errors.New("no offset in the answer")
		}
		if blk.Err != sarama.ErrNoError {
			return -1, blk.Err
		}
		return blk.Offset, nil
	}
	var o Offsets
	if o.Earliest, err = get(sarama.OffsetOldest, sarama.ReadUncommitted); err == nil {
		if o.HighWatermark, err = get(sarama.OffsetNewest, sarama.ReadUncommitted); err == nil {
			o.LastStable, err = get(sarama.OffsetNewest, sarama.ReadCommitted)
		}
	}
	if err != nil {
		return Offsets{}, fmt.Errorf("offsets of %s-%d from leader %d: %w", topic, partition, p.Leader, err)
	}
	return o, nil
}

// RegisteredBrokers lists the brokers the cluster reports as registered and alive.
func (c *Cluster) RegisteredBrokers(ctx context.Context) ([]int32, error) {
	a, err := c.adminClient()
	if err != nil {
		return nil, err
	}
	ids, err := a.registeredBrokers()
	if err != nil {
		return nil, fmt.Errorf("describing the cluster: %w", err)
	}
	return ids, ctx.Err()
}

// WaitHealthy waits until every node runs, every broker is registered, every partition of
// every topic has its full ISR (ISR = replicas), and every broker answers a new client (Silent).
// It returns what was still wrong on timeout.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	last := ""
	err := poll(ctx, 500*time.Millisecond, func() (bool, error) {
		for id, s := range c.NodeStates() {
			if s != NodeRunning {
				last = fmt.Sprintf("node %d is %s", id, s)
				return false, nil
			}
		}
		reg, err := c.RegisteredBrokers(ctx)
		if err != nil {
			// A connection that timed out during a fault may answer out of turn from then on;
			// sarama's admin client never closes it, so start afresh.
			c.ResetAdmin()
		}
		if err != nil || len(reg) < len(c.Brokers()) {
			last = fmt.Sprintf("registered brokers %v of %v (%v)", reg, c.Brokers(), err)
			return false, nil
		}
		a, err := c.adminClient()
		if err != nil {
			last = err.Error()
			return false, nil
		}
		topics, err := a.admin.ListTopics()
		if err != nil {
			c.ResetAdmin()
			last = "listing topics: " + err.Error()
			return false, nil
		}
		for t := range topics {
			ps, err := c.describe(ctx, t)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			for _, p := range ps {
				if p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
					last = fmt.Sprintf("%s-%d: leader %d, ISR %v of replicas %v", t, p.Partition, p.Leader, p.ISR, p.Replicas)
					return false, nil
				}
			}
		}
		// A broker killed and started again within its session timeout is still registered
		// and in every ISR while its JVM boots, and a restarted broker is back in the ISR some
		// seconds before it answers a new client (about 6 s measured on these clusters): until
		// then a client that bootstraps from it, or is sent to it, gets EOF.
		if silent := c.Silent(ctx); len(silent) > 0 {
			last = fmt.Sprintf("brokers do not answer a new client: %v", silent)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("cluster not healthy (%s): %w", last, err)
	}
	return nil
}

// Admin returns the cluster's shared sarama admin client for questions the harness does not wrap
// (log dirs, configs, groups). Do not close it: Close does.
func (c *Cluster) Admin() (sarama.ClusterAdmin, error) {
	a, err := c.adminClient()
	if err != nil {
		return nil, err
	}
	return a.admin, nil
}

// ReplicaSize is the size in bytes of broker id's replica of topic-partition, as the broker's log
// dirs report it; -1 when the broker does not answer or holds no such replica.
//
// It asks through the describe client (franz-go), which reconnects by itself: a sarama
// connection that a kill or a cut broke fails every later request until it is closed, and the
// shared admin client does not close it (seen: a wiped node's size read -1 for minutes after
// it had refilled).
func (c *Cluster) ReplicaSize(ctx context.Context, id int, topic string, partition int32) int64 {
	idx := slices.Index(c.Brokers(), id)
	cl, err := c.describeClient()
	if idx < 0 || err != nil || idx >= len(cl.SeedBrokers()) {
		return -1
	}
	rctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(rctx, cl.SeedBrokers()[idx])
	if err != nil || resp.ErrorCode != 0 {
		return -1
	}
	for _, d := range resp.Dirs {
		for _, dt := range d.Topics {
			for _, dp := range dt.Partitions {
				if d.ErrorCode == 0 && dt.Topic == topic && dp.Partition == partition {
					return dp.Size
				}
			}
		}
	}
	return -1
}

// Silent opens a new connection to every broker's client address and asks it for metadata;
// it returns the brokers that did not answer, with why. A new connection, not a pooled one, so
// that a broker restarted since is really asked; the addresses are Bootstrap's, in Brokers'
// order, not those of a client's metadata, which leaves out a broker that was fenced when it
// was last refreshed.
func (c *Cluster) Silent(ctx context.Context) map[int]error {
	out := map[int]error{}
	ids, addrs := c.Brokers(), c.Bootstrap()
	errs := make([]error, len(ids))
	cfg := c.SaramaConfig("verity-health")
	cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = 2*time.Second, 2*time.Second, 2*time.Second
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			if i >= len(addrs) {
				errs[i] = fmt.Errorf("broker %d has no client address", id)
				return
			}
			b := sarama.NewBroker(addrs[i])
			if err := b.Open(cfg); err != nil {
				errs[i] = err
				return
			}
			defer b.Close()
			if _, err := b.GetMetadata(&sarama.MetadataRequest{Version: 1}); err != nil {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		if errs[i] != nil {
			out[id] = errs[i]
		}
	}
	if len(out) > 0 && ctx.Err() != nil {
		for id := range out {
			out[id] = errors.Join(out[id], ctx.Err())
		}
	}
	return out
}
