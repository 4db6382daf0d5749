package nemesis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/harness"
)

// Locator answers the questions about a live cluster that harness does not: who the active
// controller is, who coordinates a transactional.id or a group, and what each broker says a
// partition's ISR is.
type Locator interface {
	// ActiveController returns the KRaft quorum leader and its epoch.
	ActiveController(ctx context.Context) (id, epoch int, err error)
	TxnCoordinator(ctx context.Context, txnID string) (int, error)
	GroupCoordinator(ctx context.Context, group string) (int, error)
	// ShareCoordinator returns the share coordinator of group's share partition topic-partition:
	// the leader of the __share_group_state partition that holds its state (KIP-932).
	ShareCoordinator(ctx context.Context, group, topic string, partition int32) (int, error)
	// ISR samples the partitions of topics from every broker that runs and that clients reach.
	ISR(ctx context.Context, topics []string) ([]ISRSample, error)
	// MinISR is the topic's min.insync.replicas.
	MinISR(ctx context.Context, topic string) (int, error)
	Close() error
}

// ISRSample is one partition as the brokers that answered describe it. ISR is the union of
// their ISRs: a broker's metadata lags the controller, and the union errs towards a larger ISR,
// so a sample never shows an ISR below min.insync.replicas unless every broker that answered
// agrees (see WatchISR).
type ISRSample struct {
	Topic     string
	Partition int32
	Leader    int32 // from the answer with the highest leader epoch
	Epoch     int32
	ISR       []int // union over the answers, ascending
	Replicas  []int
	From      []int // the brokers that answered
}

// KafkaLocator is the Locator of a real cluster, over its client links.
//
// The active controller comes from the DescribeQuorum API (key 55) sent to the brokers, which
// forward it to the controller quorum: the answer names the quorum leader and its epoch, the
// same question kafka-metadata-quorum.sh asks. sarama does not speak DescribeQuorum, so the
// locator writes the request and reads the two fields it needs by hand (quorum.go). Each
// running broker is asked at once and the answer with the highest epoch wins: a broker cut off
// from the quorum answers late or not at all. Why not the alternatives: the Metadata API's
// controller id is, under KRaft, a random live broker, not the active controller; the
// controllers' logs ("Completed transition to Leader(... epoch=N") are the fallback when no
// broker answers (every client link cut), read through NodeLog, the highest epoch winning.
type KafkaLocator struct {
	c   Cluster
	log *slog.Logger

	mu     sync.Mutex
	client sarama.Client
	admin  sarama.ClusterAdmin
	closed bool
}

// NewKafkaLocator returns a locator for c; it connects on first use.
func NewKafkaLocator(c Cluster, log *slog.Logger) *KafkaLocator {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &KafkaLocator{c: c, log: log}
}

// saramaConfig keeps every request short: a locator question during a fault must fail fast
// on a broker that does not answer and let another one answer.
func (k *KafkaLocator) saramaConfig() *sarama.Config {
	cfg := k.c.SaramaConfig("verity-nemesis")
	cfg.Net.DialTimeout = 3 * time.Second
	cfg.Net.ReadTimeout = 5 * time.Second
	cfg.Net.WriteTimeout = 3 * time.Second
	cfg.Metadata.Retry.Max = 3
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	return cfg
}

func (k *KafkaLocator) conn() (sarama.Client, sarama.ClusterAdmin, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, nil, errors.New("the locator is closed")
	}
	if k.client != nil {
		return k.client, k.admin, nil
	}
	cl, err := sarama.NewClient(k.c.Bootstrap(), k.saramaConfig())
	if err != nil {
		return nil, nil, fmt.Errorf("connecting the nemesis's client to %v: %w", k.c.Bootstrap(), err)
	}
	ad, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		_ = cl.Close()
		return nil, nil, fmt.Errorf("creating the nemesis's admin client: %w", err)
	}
	k.client, k.admin = cl, ad
	return cl, ad, nil
}

// Close closes the locator's connections.
func (k *KafkaLocator) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	if k.admin == nil {
		return nil
	}
	err := k.admin.Close() // closes the client too
	k.client, k.admin = nil, nil
	return err
}

// reachable lists the brokers that run and whose client link is not cut: asking the others
// only waits for a timeout.
func (k *KafkaLocator) reachable() map[int]bool {
	states, cuts := k.c.NodeStates(), k.c.Cuts()
	out := map[int]bool{}
	for _, id := range k.c.Brokers() {
		if _, cut := cuts[harness.Link{From: harness.ClientEndpoint, To: id}]; !cut && states[id] == harness.NodeRunning {
			out[id] = true
		}
	}
	return out
}

// brokers returns the sarama brokers of the reachable nodes, connected.
func (k *KafkaLocator) brokers() ([]*sarama.Broker, error) {
	cl, _, err := k.conn()
	if err != nil {
		return nil, err
	}
	ok := k.reachable()
	var out []*sarama.Broker
	for _, b := range cl.Brokers() {
		if ok[int(b.ID())] {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no broker is running with its client link up (states %v)", k.c.NodeStates())
	}
	return out, nil
}

func (k *KafkaLocator) openBroker(b *sarama.Broker) error {
	if ok, _ := b.Connected(); ok {
		return nil
	}
	if err := b.Open(k.saramaConfig()); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
		return fmt.Errorf("connecting to broker %d: %w", b.ID(), err)
	}
	return nil
}

// ActiveController asks every reachable broker for the quorum leader (DescribeQuorum) and
// takes the answer with the highest epoch; when none answers, it reads the controllers' logs.
func (k *KafkaLocator) ActiveController(ctx context.Context) (int, int, error) {
	bs, err := k.brokers()
	if err == nil {
		type answer struct{ leader, epoch int }
		answers := make([]answer, len(bs))
		errs := make([]error, len(bs))
		var wg sync.WaitGroup
		for i, b := range bs {
			wg.Go(func() {
				qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				answers[i].leader, answers[i].epoch, errs[i] = describeQuorum(qctx, b.Addr())
				if errs[i] != nil {
					errs[i] = fmt.Errorf("broker %d: %w", b.ID(), errs[i])
				}
			})
		}
		wg.Wait()
		best := answer{-1, -1}
		for i, a := range answers {
			if errs[i] == nil && a.leader >= 0 && a.epoch > best.epoch {
				best = a
			}
		}
		if best.leader >= 0 {
			return best.leader, best.epoch, nil
		}
		err = errors.Join(errs...)
	}
	id, epoch, lerr := k.controllerFromLogs(ctx)
	if lerr != nil {
		return -1, -1, fmt.Errorf("asking the brokers (DescribeQuorum): %w; reading the controllers' logs: %w", err, lerr)
	}
	k.log.Info("active controller read from the logs: no broker answered DescribeQuorum", "id", id, "epoch", epoch, "err", err)
	return id, epoch, nil
}

// ControllerFromLogs is ActiveController's fallback on its own: the quorum leader as the
// controllers' logs tell it.
func (k *KafkaLocator) ControllerFromLogs(ctx context.Context) (id, epoch int, err error) {
	return k.controllerFromLogs(ctx)
}

// controllerFromLogs finds the latest quorum leader in the running controllers' logs: the
// "Completed transition to Leader" line with the highest epoch, unless some node has since
// moved to a higher epoch (an election under way: no leader to name yet).
func (k *KafkaLocator) controllerFromLogs(ctx context.Context) (int, int, error) {
	leader, epoch, top := -1, -1, -1
	for _, id := range k.c.Controllers() {
		if k.c.NodeStates()[id] != harness.NodeRunning {
			continue
		}
		text, err := k.c.NodeLog(ctx, id)
		if err != nil {
			return -1, -1, err
		}
		l, e, t := parseQuorumLog(text)
		if e > epoch {
			leader, epoch = l, e
		}
		top = max(top, t)
	}
	switch {
	case leader < 0:
		return -1, -1, errors.New("no controller has logged becoming leader")
	case top > epoch:
		return -1, -1, fmt.Errorf("an election is under way (epoch %d after leader %d's epoch %d)", top, leader, epoch)
	}
	return leader, epoch, nil
}

// parseQuorumLog returns the leader and epoch of the "Completed transition to Leader" line
// with the highest epoch in one controller's log (-1 if none, or if that leader has since
// resigned at that epoch), and the highest epoch of any transition.
func parseQuorumLog(text string) (leader, epoch, top int) {
	// Kafka 4.3 prints "[RaftManager id=1] Completed transition to Leader(localVoterNode=
	// VoterNode(voterKey=ReplicaKey(id=1, ...)), epoch=3, ...) from CandidateState(...)";
	// older versions "Leader(localId=1, epoch=3, ...)". The first epoch= after the state's
	// name is the new state's.
	re := regexp.MustCompile(`(?:\[RaftManager (?:node)?[iI]d=(\d+)\] )?Completed transition to (\w+)\(([^\n]*?)[(, ]epoch=(\d+)`)
	idRe := regexp.MustCompile(`(?:localId=|ReplicaKey\(id=)(\d+)`)
	leader, epoch, top = -1, -1, -1
	resigned := -1
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		e, _ := strconv.Atoi(m[4])
		top = max(top, e)
		switch {
		case m[2] == "ResignedState":
			resigned = max(resigned, e)
		case m[2] == "Leader" && e >= epoch:
			id := m[1]
			if id == "" {
				if im := idRe.FindStringSubmatch(m[3]); im != nil {
					id = im[1]
				}
			}
			if n, err := strconv.Atoi(id); err == nil {
				leader, epoch = n, e
			}
		}
	}
	if leader >= 0 && resigned >= epoch {
		return -1, -1, top
	}
	return leader, epoch, top
}

// TxnCoordinator asks the cluster (FindCoordinator) which broker coordinates txnID, retrying
// while the coordinator is loading or moving, until ctx ends.
func (k *KafkaLocator) TxnCoordinator(ctx context.Context, txnID string) (int, error) {
	return k.coordinator(ctx, func(cl sarama.Client) (*sarama.Broker, error) {
		if err := cl.RefreshTransactionCoordinator(txnID); err != nil {
			return nil, err
		}
		return cl.TransactionCoordinator(txnID)
	})
}

// GroupCoordinator asks the cluster (FindCoordinator) which broker coordinates group.
func (k *KafkaLocator) GroupCoordinator(ctx context.Context, group string) (int, error) {
	return k.coordinator(ctx, func(cl sarama.Client) (*sarama.Broker, error) {
		if err := cl.RefreshCoordinator(group); err != nil {
			return nil, err
		}
		return cl.Coordinator(group)
	})
}

func (k *KafkaLocator) coordinator(ctx context.Context, find func(sarama.Client) (*sarama.Broker, error)) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		cl, _, err := k.conn()
		if err == nil {
			var b *sarama.Broker
			if b, err = find(cl); err == nil {
				return int(b.ID()), nil
			}
		}
		last = err
		if !waitUntil(cctx, time.Now().Add(250*time.Millisecond)) {
			return -1, fmt.Errorf("%w (last error: %v)", cctx.Err(), last)
		}
	}
}

// metadataAnswer is one broker's Metadata answer, or why there is none.
type metadataAnswer struct {
	id   int
	resp *sarama.MetadataResponse
	err  error
}

// metadata asks every reachable broker for the metadata of topics, at once: a broker's metadata
// lags the controller, so callers merge the answers (the highest leader epoch wins). The
// request never creates a topic (AllowAutoTopicCreation false).
func (k *KafkaLocator) metadata(topics []string) ([]metadataAnswer, error) {
	bs, err := k.brokers()
	if err != nil {
		return nil, err
	}
	answers := make([]metadataAnswer, len(bs))
	var wg sync.WaitGroup
	for i, b := range bs {
		wg.Go(func() {
			answers[i].id = int(b.ID())
			if err := k.openBroker(b); err != nil {
				answers[i].err = err
				return
			}
			resp, err := b.GetMetadata(sarama.NewMetadataRequest(k.saramaConfig().Version, topics))
			if err != nil {
				_ = b.Close() // reconnect next time
				answers[i].err = fmt.Errorf("metadata from broker %d: %w", b.ID(), err)
				return
			}
			answers[i].resp = resp
		})
	}
	wg.Wait()
	return answers, nil
}

// ISR asks every reachable broker for the metadata of topics, at once, and merges the answers.
func (k *KafkaLocator) ISR(ctx context.Context, topics []string) ([]ISRSample, error) {
	answers, err := k.metadata(topics)
	if err != nil {
		return nil, err
	}
	type key struct {
		topic string
		part  int32
	}
	merged := map[key]*ISRSample{}
	var errs []error
	for _, a := range answers {
		if a.err != nil {
			errs = append(errs, a.err)
			continue
		}
		for _, t := range a.resp.Topics {
			if t.Err != sarama.ErrNoError {
				continue
			}
			for _, p := range t.Partitions {
				k := key{t.Name, p.ID}
				s := merged[k]
				if s == nil {
					s = &ISRSample{Topic: t.Name, Partition: p.ID, Leader: -1, Epoch: -1}
					merged[k] = s
				}
				if p.LeaderEpoch > s.Epoch {
					s.Leader, s.Epoch, s.Replicas = p.Leader, p.LeaderEpoch, ints32(p.Replicas)
				}
				s.ISR = append(s.ISR, ints32(p.Isr)...)
				s.From = appendUnique(s.From, a.id)
			}
		}
	}
	if len(merged) == 0 {
		if len(errs) == 0 {
			errs = append(errs, fmt.Errorf("no broker described %v", topics))
		}
		return nil, errors.Join(errs...)
	}
	out := make([]ISRSample, 0, len(merged))
	for _, s := range merged {
		slices.Sort(s.ISR)
		s.ISR = slices.Compact(s.ISR)
		slices.Sort(s.Replicas)
		slices.Sort(s.From)
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ISRSample) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out, ctx.Err()
}

// MinISR reads the topic's min.insync.replicas (its own setting or the broker default).
func (k *KafkaLocator) MinISR(ctx context.Context, topic string) (int, error) {
	_, ad, err := k.conn()
	if err != nil {
		return 0, err
	}
	entries, err := ad.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"min.insync.replicas"}})
	if err != nil {
		return 0, fmt.Errorf("reading min.insync.replicas of %s: %w", topic, err)
	}
	for _, e := range entries {
		if e.Name == "min.insync.replicas" {
			n, err := strconv.Atoi(e.Value)
			if err != nil {
				return 0, fmt.Errorf("min.insync.replicas of %s is %q: %w", topic, e.Value, err)
			}
			return n, ctx.Err()
		}
	}
	return 0, fmt.Errorf("min.insync.replicas of %s: not in the answer", topic)
}
