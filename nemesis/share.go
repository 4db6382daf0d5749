package nemesis

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf16"

	"github.com/IBM/sarama"
)

// Share groups (KIP-932) keep each share partition's state (which records are acquired,
// acknowledged, how many times delivered) in the internal topic __share_group_state, written by
// its share coordinator: the broker that leads the partition of that topic the share partition
// hashes to. Killing or cutting that broker is what a fault on "the share coordinator" means.

// ShareStateTopic is the internal topic that holds share-partition state.
const ShareStateTopic = "__share_group_state"

// ErrNoShareState is returned when __share_group_state does not exist yet: the cluster creates it
// when the first share group initialises state for a partition (a member joined and fetched), so
// a share coordinator can only be resolved after that.
var ErrNoShareState = errors.New(ShareStateTopic + " does not exist yet: the cluster creates it when a share group first initialises state (after a member joins and fetches); resolve the share coordinator after that")

// ShareState is where one share partition's state lives, as resolved from the live cluster.
type ShareState struct {
	Group     string
	Topic     string
	Partition int32
	// TopicID is the topic's id as Kafka prints it (Uuid.toString).
	TopicID string
	// Key is the share coordinator key, "group:topicId:partition".
	Key string
	// StatePartition is the partition of __share_group_state the key hashes to, of
	// StatePartitions.
	StatePartition  int32
	StatePartitions int32
	// Leader is StatePartition's leader, the share coordinator, at leader epoch Epoch.
	Leader int
	Epoch  int32
}

// ShareCoordinator is the share coordinator of one share partition: the leader of the
// __share_group_state partition that holds its state (see KafkaLocator.ShareState). It resolves
// only once the state exists (ErrNoShareState before).
func ShareCoordinator(group, topic string, partition int32) Target {
	return shareCoordinator{group, topic, partition}
}

type shareCoordinator struct {
	group     string
	topic     string
	partition int32
}

// shareStater is a Locator that can tell where the state lives, not just who leads it: the role
// recorded in the history then names the state partition too.
type shareStater interface {
	ShareState(ctx context.Context, group, topic string, partition int32) (ShareState, error)
}

func (t shareCoordinator) String() string {
	return fmt.Sprintf("share coordinator of %s %s-%d", t.group, t.topic, t.partition)
}
func (t shareCoordinator) Available(c Cluster) error { return needBrokers(c, 1) }
func (t shareCoordinator) Resolve(ctx context.Context, e *Env) ([]int, string, error) {
	if s, ok := e.Locator.(shareStater); ok {
		st, err := s.ShareState(ctx, t.group, t.topic, t.partition)
		if err != nil {
			return nil, "", fmt.Errorf("finding the %s: %w", t, err)
		}
		return []int{st.Leader}, fmt.Sprintf("%s (%s-%d, leader %d)", t, ShareStateTopic, st.StatePartition, st.Leader), nil
	}
	id, err := e.Locator.ShareCoordinator(ctx, t.group, t.topic, t.partition)
	if err != nil {
		return nil, "", fmt.Errorf("finding the %s: %w", t, err)
	}
	return []int{id}, fmt.Sprintf("%s (leader %d)", t, id), nil
}

// ShareCoordinator returns the broker that leads the __share_group_state partition holding the
// state of group's share partition topic-partition (see ShareState).
func (k *KafkaLocator) ShareCoordinator(ctx context.Context, group, topic string, partition int32) (int, error) {
	st, err := k.ShareState(ctx, group, topic, partition)
	if err != nil {
		return -1, err
	}
	return st.Leader, nil
}

// ShareState computes where the state of group's share partition topic-partition lives, as the
// brokers do (ShareCoordinatorService.partitionFor): the key "group:topicId:partition" hashed
// with Java's String.hashCode, made non-negative with Kafka's Utils.abs, modulo the partition
// count of __share_group_state; then that partition's leader. The topic id and the state
// topic's partitions and leaders come from Metadata (v10+ carries topic ids) asked of every
// reachable broker at once, the answer with the highest leader epoch winning, as ISR does.
//
// Why not FindCoordinator with key type SHARE: sarama speaks FindCoordinator up to v3, and
// SHARE needs v6 (batched keys); the computation also yields the state partition, which the
// history's role names. The cluster test checks that both agree.
//
// It asks again, for up to resolveWait, while the state partition has no leader or no broker
// answers; it fails at once when the topic, its partition, or __share_group_state does not
// exist (ErrNoShareState), since asking again will not create them.
func (k *KafkaLocator) ShareState(ctx context.Context, group, topic string, partition int32) (ShareState, error) {
	wctx, cancel := context.WithTimeout(ctx, resolveWait)
	defer cancel()
	var last error
	for {
		st, retry, err := k.shareState(group, topic, partition)
		if err == nil {
			return st, nil
		}
		if !retry {
			return ShareState{}, err
		}
		last = err
		if !waitUntil(wctx, time.Now().Add(250*time.Millisecond)) {
			if ctx.Err() != nil {
				return ShareState{}, ctx.Err()
			}
			return ShareState{}, fmt.Errorf("locating the share state of %s %s-%d: no usable answer within %s: %w", group, topic, partition, resolveWait, last)
		}
	}
}

// shareState is one attempt of ShareState; retry says whether asking again may help.
func (k *KafkaLocator) shareState(group, topic string, partition int32) (st ShareState, retry bool, err error) {
	answers, err := k.metadata([]string{topic, ShareStateTopic})
	if err != nil {
		return st, true, err
	}
	var (
		id          sarama.Uuid
		parts       = int32(-1)
		stateParts  = int32(-1)
		stateByPart = map[int32]*sarama.PartitionMetadata{}
		errs        []error
		answered    bool
		// transient: a topic is there but some answer gave it an error other than unknown
		// (LEADER_NOT_AVAILABLE while it is being created): asking again may help.
		transient = map[string]bool{}
	)
	for _, a := range answers {
		if a.err != nil {
			errs = append(errs, a.err)
			continue
		}
		answered = true
		if a.resp.Version < 10 {
			return st, false, fmt.Errorf("broker %d answered Metadata v%d, which has no topic ids (v10+)", a.id, a.resp.Version)
		}
		for _, t := range a.resp.Topics {
			if t.Err != sarama.ErrNoError {
				if t.Err != sarama.ErrUnknownTopicOrPartition {
					errs = append(errs, fmt.Errorf("broker %d on %s: %w", a.id, t.Name, t.Err))
					transient[t.Name] = true
				}
				continue
			}
			switch t.Name {
			case topic:
				if id != (sarama.Uuid{}) && t.Uuid != id {
					return st, true, fmt.Errorf("brokers disagree on the id of %s (%s, %s): re-created?", topic, kafkaUuid(id), kafkaUuid(t.Uuid))
				}
				id = t.Uuid
				parts = max(parts, int32(len(t.Partitions)))
			case ShareStateTopic:
				stateParts = max(stateParts, int32(len(t.Partitions)))
				for _, p := range t.Partitions {
					if cur := stateByPart[p.ID]; cur == nil || p.LeaderEpoch > cur.LeaderEpoch {
						stateByPart[p.ID] = p
					}
				}
			}
		}
	}
	switch {
	case !answered:
		return st, true, fmt.Errorf("no broker answered Metadata: %w", errors.Join(errs...))
	case parts < 0 && transient[topic]:
		return st, true, fmt.Errorf("describing %s: %w", topic, errors.Join(errs...))
	case parts < 0:
		return st, false, fmt.Errorf("topic %s does not exist (%w)", topic, errors.Join(append(errs, sarama.ErrUnknownTopicOrPartition)...))
	case partition < 0 || partition >= parts:
		return st, false, fmt.Errorf("topic %s has no partition %d (%d partitions)", topic, partition, parts)
	case id == (sarama.Uuid{}):
		return st, true, fmt.Errorf("the brokers gave %s no topic id", topic)
	case stateParts < 0 && transient[ShareStateTopic]:
		return st, true, fmt.Errorf("describing %s: %w", ShareStateTopic, errors.Join(errs...))
	case stateParts < 0:
		return st, false, ErrNoShareState
	case stateParts == 0:
		return st, true, fmt.Errorf("%s has no partitions yet", ShareStateTopic)
	}
	st = ShareState{Group: group, Topic: topic, Partition: partition, TopicID: kafkaUuid(id), StatePartitions: stateParts}
	st.Key = shareCoordinatorKey(group, st.TopicID, partition)
	st.StatePartition = coordinatorPartition(st.Key, stateParts)
	p := stateByPart[st.StatePartition]
	if p == nil || p.Leader < 0 {
		return st, true, fmt.Errorf("%s-%d has no leader", ShareStateTopic, st.StatePartition)
	}
	st.Leader, st.Epoch = int(p.Leader), p.LeaderEpoch
	return st, false, nil
}

// shareCoordinatorKey is SharePartitionKey.asCoordinatorKey: "%s:%s:%d" of the group, the
// topic id as Uuid.toString prints it, and the partition.
func shareCoordinatorKey(group, topicID string, partition int32) string {
	return fmt.Sprintf("%s:%s:%d", group, topicID, partition)
}

// coordinatorPartition is the partition of an n-partition coordinator topic that key maps to:
// Utils.abs(key.hashCode()) % n, as the coordinators compute it.
func coordinatorPartition(key string, n int32) int32 {
	return javaUtilsAbs(javaStringHash(key)) % n
}

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1] in int arithmetic over
// the string's UTF-16 code units (so a rune outside the BMP counts as its two surrogates).
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaUtilsAbs is Kafka's Utils.abs: Math.abs, but 0 for Integer.MIN_VALUE (whose Math.abs is
// itself, negative).
func javaUtilsAbs(n int32) int32 {
	switch {
	case n == math.MinInt32:
		return 0
	case n < 0:
		return -n
	}
	return n
}

// kafkaUuid is Kafka's Uuid.toString: the 16 bytes in URL-safe base64 without padding.
func kafkaUuid(u sarama.Uuid) string { return base64.RawURLEncoding.EncodeToString(u[:]) }
