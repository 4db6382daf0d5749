package kafkaconf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Kafka 4.3's broker defaults of the topic settings that decide durability.
const (
	DefaultReplicationFactor = 1 // default.replication.factor
	DefaultMinISR            = 1 // min.insync.replicas
	DefaultUnclean           = false
	// DefaultFlushMessages is log.flush.interval.messages (Long.MAX_VALUE): Kafka never fsyncs
	// per append; a log reaches the disk when its segment rolls, at a clean shutdown or by the
	// operating system's own writeback. Durability rests on replication.
	DefaultFlushMessages int64 = math.MaxInt64
)

// Names of the flush settings: the topic's, and the brokers' default for topics without one.
const (
	TopicFlushMessages  = "flush.messages"
	BrokerFlushMessages = "log.flush.interval.messages"
	// BrokerTxnVerification is KIP-890 part 1's verification: a partition leader asks the
	// transaction coordinator whether a transactional produce's partition is in the
	// transaction before appending it.
	BrokerTxnVerification = "transaction.partition.verification.enable"
)

// TopicConfig is what is known of one topic's durability settings; nil fields are unset. It
// is a history header's entry for a topic.
type TopicConfig struct {
	ReplicationFactor     *int  `json:"replication_factor,omitempty"`
	MinInsyncReplicas     *int  `json:"min_insync_replicas,omitempty"`
	UncleanLeaderElection *bool `json:"unclean_leader_election,omitempty"`
	// FlushMessages is flush.messages: the log is fsynced after this many appends.
	FlushMessages *int64 `json:"flush_messages,omitempty"`
}

// Over returns c laid over base: each setting c gives replaces base's.
func (c TopicConfig) Over(base TopicConfig) TopicConfig {
	return TopicConfig{ReplicationFactor: over(c.ReplicationFactor, base.ReplicationFactor),
		MinInsyncReplicas:     over(c.MinInsyncReplicas, base.MinInsyncReplicas),
		UncleanLeaderElection: over(c.UncleanLeaderElection, base.UncleanLeaderElection),
		FlushMessages:         over(c.FlushMessages, base.FlushMessages)}
}

// Topic is a topic's effective durability settings.
type Topic struct {
	RF            int
	MinISR        int
	Unclean       bool
	FlushMessages int64
}

// FlushEach reports whether every append is fsynced before it returns (flush.messages=1), so
// that a replica acknowledges, or fetches further, only what is on its disk.
func (t Topic) FlushEach() bool { return t.FlushMessages == 1 }

// Config states every setting of t; a flush interval at Kafka's default is left unset.
func (t Topic) Config() TopicConfig {
	c := TopicConfig{ReplicationFactor: new(t.RF), MinInsyncReplicas: new(t.MinISR), UncleanLeaderElection: new(t.Unclean)}
	if t.FlushMessages != DefaultFlushMessages && t.FlushMessages != 0 {
		c.FlushMessages = new(t.FlushMessages)
	}
	return c
}

// ParseFlushMessages reads a flush.messages or log.flush.interval.messages value: a positive
// count of appends.
func ParseFlushMessages(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a count of appends: want a positive integer (1 fsyncs every append)", s)
	}
	return n, nil
}

// FlushMessagesOf is a topic's flush.messages: its own setting in topic, else the brokers'
// log.flush.interval.messages in broker, else nil (Kafka's default).
func FlushMessagesOf(topic, broker map[string]string) (*int64, error) {
	for _, c := range []struct {
		set  map[string]string
		name string
	}{{topic, TopicFlushMessages}, {broker, BrokerFlushMessages}} {
		if v, ok := c.set[c.name]; ok {
			n, err := ParseFlushMessages(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			return &n, nil
		}
	}
	return nil, nil
}

// ResolvedTopic is a topic's effective settings and how they were reached.
type ResolvedTopic struct {
	Topic
	// Assumed lists the settings that took Kafka's default because nothing gave them.
	Assumed []string
	// Conflict says why no documented guarantee covers the settings (min ISR above the
	// replication factor), or "".
	Conflict string
}

// ResolveTopic decides a topic's effective settings, Kafka's broker defaults filling what c
// leaves unset.
func ResolveTopic(c TopicConfig) ResolvedTopic {
	r := ResolvedTopic{Topic: Topic{RF: DefaultReplicationFactor, MinISR: DefaultMinISR, Unclean: DefaultUnclean,
		FlushMessages: DefaultFlushMessages}}
	if c.FlushMessages != nil {
		// Unset is not listed as assumed: it matters only under a power loss, where the
		// table's reasons state it.
		r.FlushMessages = *c.FlushMessages
	}
	if c.ReplicationFactor != nil {
		r.RF = *c.ReplicationFactor
	} else {
		r.Assumed = append(r.Assumed, "replication.factor="+strconv.Itoa(DefaultReplicationFactor))
	}
	if c.MinInsyncReplicas != nil {
		r.MinISR = *c.MinInsyncReplicas
	} else {
		r.Assumed = append(r.Assumed, "min.insync.replicas="+strconv.Itoa(DefaultMinISR))
	}
	if c.UncleanLeaderElection != nil {
		r.Unclean = *c.UncleanLeaderElection
	} else {
		r.Assumed = append(r.Assumed, "unclean.leader.election.enable="+strconv.FormatBool(DefaultUnclean))
	}
	switch {
	case r.RF < 1:
		r.Conflict = fmt.Sprintf("replication factor %d is below 1", r.RF)
	case r.MinISR < 1:
		r.Conflict = fmt.Sprintf("min.insync.replicas=%d is below 1", r.MinISR)
	case r.FlushMessages < 1:
		r.Conflict = fmt.Sprintf("flush.messages=%d is below 1", r.FlushMessages)
	case r.MinISR > r.RF:
		r.Conflict = fmt.Sprintf("min.insync.replicas=%d exceeds the replication factor %d, so acks=all can never succeed", r.MinISR, r.RF)
	}
	return r
}

// BrokerDefaults are Kafka 4.3's defaults of the broker settings the harness or a scenario is
// likely to set, so that a setting equal to its default is not reported as a deviation.
func BrokerDefaults() map[string]string {
	return map[string]string{
		"replica.lag.time.max.ms":                          "30000",
		"group.initial.rebalance.delay.ms":                 "3000",
		"offsets.topic.replication.factor":                 "3",
		"transaction.state.log.replication.factor":         "3",
		"transaction.state.log.min.isr":                    "2",
		"transaction.state.log.num.partitions":             "50",
		"transaction.max.timeout.ms":                       "900000",
		"share.coordinator.state.topic.replication.factor": "3",
		"share.coordinator.state.topic.min.isr":            "2",
		"min.insync.replicas":                              strconv.Itoa(DefaultMinISR),
		"unclean.leader.election.enable":                   strconv.FormatBool(DefaultUnclean),
		"default.replication.factor":                       strconv.Itoa(DefaultReplicationFactor),
		"auto.create.topics.enable":                        "true",
		"num.partitions":                                   "1",
		BrokerTxnVerification:                              "true",
	}
}
