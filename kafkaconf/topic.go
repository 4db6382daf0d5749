package kafkaconf

import (
	"fmt"
	"strconv"
)

// Kafka 4.3's broker defaults of the topic settings that decide durability.
const (
	DefaultReplicationFactor = 1 // default.replication.factor
	DefaultMinISR            = 1 // min.insync.replicas
	DefaultUnclean           = false
)

// TopicConfig is what is known of one topic's durability settings; nil fields are unset. It
// is a history header's entry for a topic.
type TopicConfig struct {
	ReplicationFactor     *int  `json:"replication_factor,omitempty"`
	MinInsyncReplicas     *int  `json:"min_insync_replicas,omitempty"`
	UncleanLeaderElection *bool `json:"unclean_leader_election,omitempty"`
}

// Over returns c laid over base: each setting c gives replaces base's.
func (c TopicConfig) Over(base TopicConfig) TopicConfig {
	return TopicConfig{ReplicationFactor: over(c.ReplicationFactor, base.ReplicationFactor),
		MinInsyncReplicas:     over(c.MinInsyncReplicas, base.MinInsyncReplicas),
		UncleanLeaderElection: over(c.UncleanLeaderElection, base.UncleanLeaderElection)}
}

// Topic is a topic's effective durability settings.
type Topic struct {
	RF      int
	MinISR  int
	Unclean bool
}

// Config states every setting of t.
func (t Topic) Config() TopicConfig {
	return TopicConfig{ReplicationFactor: new(t.RF), MinInsyncReplicas: new(t.MinISR), UncleanLeaderElection: new(t.Unclean)}
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
	r := ResolvedTopic{Topic: Topic{RF: DefaultReplicationFactor, MinISR: DefaultMinISR, Unclean: DefaultUnclean}}
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
	}
}
