package scenarios

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify/results"
)

// Defaults of a scenario's omitted fields (see the field comments of Scenario). Kafka's own
// defaults are kafkaconf's; these are the scenario's choices where it leaves Kafka's.
const (
	DefaultTopic = "verity"
	// SecondTopic is the second topic of the built-ins whose transactions span two topics.
	SecondTopic       = "verity-b"
	DefaultNodes      = 3
	DefaultPartitions = 3
	// TopicRF and TopicMinISR are a topic's replication factor and min.insync.replicas when the
	// scenario gives none (at most the node count and the replication factor): the settings
	// under which Kafka promises that acknowledged writes survive a broker loss, rather than
	// Kafka's broker defaults (kafkaconf.DefaultReplicationFactor and DefaultMinISR, both 1).
	TopicRF         = 3
	TopicMinISR     = 2
	DefaultDuration = Duration(60 * time.Second)
	DefaultGroup    = "verity-group"
	DefaultShare    = "verity-share"
	// DefaultIsolation is the consumers' isolation unless the scenario gives one: read_committed,
	// the level transactions promise to (Kafka's consumer default is read_uncommitted).
	DefaultIsolation = kafkaconf.ReadCommitted
	// DefaultRate is each plain producer's sends per second: enough to see every fault's
	// effect, little enough that three nodes and the clients share two cores.
	DefaultRate = 200
)

// Resolved is a scenario with every default applied and validated: what a run runs. Resolve,
// Parse, Load and Override make one; the runner takes nothing else, so nothing downstream
// applies defaults again. Setting its fields directly skips validation: use Override.
type Resolved struct{ Scenario }

// Resolve applies the defaults to a copy of s and validates it.
func (s Scenario) Resolve() (Resolved, error) {
	d := s.withDefaults()
	if err := d.Validate(); err != nil {
		return Resolved{}, err
	}
	return Resolved{d}, nil
}

// withDefaults returns a copy of s with every omitted field set to its default. It never
// changes s, and applying it twice gives the same result as once.
func (s Scenario) withDefaults() Scenario {
	s = s.Clone()
	if s.Expect.Verdict == "" {
		s.Expect.Verdict = results.Pass
	}
	if s.Topology.Nodes == 0 {
		s.Topology.Nodes = DefaultNodes
	}
	if s.schedules(func(f FaultSpec) bool { return f.LazyFS }) {
		s.Topology.PowerLoss = true
	}
	if len(s.Topics) == 0 {
		s.Topics = []Topic{{Name: DefaultTopic}}
	}
	for i := range s.Topics {
		t := &s.Topics[i]
		if t.Partitions == 0 {
			t.Partitions = DefaultPartitions
		}
		if t.ReplicationFactor == 0 {
			t.ReplicationFactor = max(1, min(TopicRF, s.Topology.Nodes))
		}
		if t.MinInsyncReplicas == 0 {
			t.MinInsyncReplicas = max(1, min(TopicMinISR, t.ReplicationFactor))
		}
	}
	first := s.Topics[0].Name

	if s.Client.Isolation == "" {
		s.Client.Isolation = DefaultIsolation
	}
	if s.Client.Name == "" {
		s.Client.Name = kafkaconf.DefaultClient
	}

	w := &s.Workload
	if len(w.Producers) == 0 && w.Transactional.Count == 0 && w.Processors.Count == 0 &&
		w.Consumers.ReadCommitted == 0 && w.Consumers.ReadUncommitted == 0 && w.Group.Count == 0 {
		w.Producers = []ProducerGroup{{Count: 3}}
		w.Consumers.ReadCommitted = 1
	}
	for i := range w.Producers {
		if w.Producers[i].Count == 0 {
			w.Producers[i].Count = 1
		}
		if w.Producers[i].Rate == 0 {
			w.Producers[i].Rate = DefaultRate
		}
		if w.Producers[i].Topic == "" {
			w.Producers[i].Topic = first
		}
	}
	if w.Transactional.Count > 0 && len(w.Transactional.Topics) == 0 {
		// A transaction of two or more records spans two topics: the first two.
		for _, t := range s.Topics[:min(2, len(s.Topics))] {
			w.Transactional.Topics = append(w.Transactional.Topics, t.Name)
		}
	}
	if w.Processors.Count > 0 {
		if w.Processors.Input == "" {
			w.Processors.Input = first
		}
		if w.Processors.Output == "" && len(s.Topics) > 1 {
			w.Processors.Output = s.Topics[1].Name
		}
	}
	if w.Consumers.ReadCommitted+w.Consumers.ReadUncommitted > 0 && len(w.Consumers.Topics) == 0 {
		for _, t := range s.Topics {
			w.Consumers.Topics = append(w.Consumers.Topics, t.Name)
		}
	}
	if w.Group.Count > 0 {
		if w.Group.Name == "" {
			w.Group.Name = DefaultGroup
		}
		if len(w.Group.Topics) == 0 {
			w.Group.Topics = []string{first}
		}
	}
	if w.Share.Members > 0 {
		w.Share.Name = cmp.Or(w.Share.Name, DefaultShare)
		if len(w.Share.Topics) == 0 {
			w.Share.Topics = []string{first}
		}
		if w.Share.Mix == (ShareMix{}) {
			w.Share.Mix = ShareMix{Accept: 80, Release: 15, Reject: 5}
		}
	}
	for i := range w.Sinks {
		sk := &w.Sinks[i]
		if sk.Name == "" {
			sk.Name = "sink"
			if i > 0 {
				sk.Name += strconv.Itoa(i + 1)
			}
		}
		if sk.Count == 0 {
			sk.Count = 1
		}
		if sk.Topic == "" {
			sk.Topic = first
		}
		if in, ok := sk.Mode.Info(); ok && in.Relays {
			sk.Outbox = cmp.Or(sk.Outbox, sk.Name+"-outbox")
			s.Topics = withTopicLike(s.Topics, sk.Outbox, sk.Topic)
		}
	}

	f := &s.Faults
	if f.Kind == "" {
		switch {
		case f.Periodic != nil:
			f.Kind = SchedulePeriodic
		case len(f.Timeline) > 0:
			f.Kind = ScheduleTimeline
		default:
			f.Kind = ScheduleNone
		}
	}
	for i := range f.Timeline {
		f.Timeline[i].Fault = f.Timeline[i].Fault.withDefaults(first)
	}
	if p := f.Periodic; p != nil {
		if p.Hold == 0 {
			p.Hold = p.Interval / 2
		}
		if p.Start == 0 {
			p.Start = p.Interval
		}
		for i := range p.Set {
			p.Set[i] = p.Set[i].withDefaults(first)
		}
	}
	if s.Duration == 0 {
		s.Duration = DefaultDuration
	}
	return s
}

// withDefaults fills the topic of partition targets (the scenario's first topic).
func (f Fault) withDefaults(topic string) Fault {
	fill := func(t *Target) {
		if t != nil && t.Topic == "" && slices.Contains(partitionRoles(), t.Role) {
			t.Topic = topic
		}
	}
	fill(f.Target)
	fill(f.Params.To)
	for i := range f.Parts {
		f.Parts[i] = f.Parts[i].withDefaults(topic)
	}
	return f
}

// Clone returns a deep copy of s: changing one never changes the other.
func (s Scenario) Clone() Scenario {
	s.Expect.Forbidden = slices.Clone(s.Expect.Forbidden)
	s.Expect.Permitted = slices.Clone(s.Expect.Permitted)
	s.Expect.Likely = slices.Clone(s.Expect.Likely)
	s.Broker = maps.Clone(s.Broker)
	s.Kafka.Features = maps.Clone(s.Kafka.Features)
	if s.Regression != nil {
		r := *s.Regression
		r.Shows = slices.Clone(r.Shows)
		s.Regression = &r
	}
	s.Topics = slices.Clone(s.Topics)
	for i := range s.Topics {
		s.Topics[i].Config = maps.Clone(s.Topics[i].Config)
	}
	s.Client.Delivery = cloneDelivery(s.Client.Delivery)
	s.Requires = slices.Clone(s.Requires)
	s.Tags = slices.Clone(s.Tags)
	s.Expect.LikelyNeeds = slices.Clone(s.Expect.LikelyNeeds)
	if l := s.Expect.Liveness; l != nil {
		c := *l
		c.BreaksWithout = slices.Clone(c.BreaksWithout)
		s.Expect.Liveness = &c
	}
	w := &s.Workload
	w.Producers = slices.Clone(w.Producers)
	for i := range w.Producers {
		w.Producers[i].Delivery = cloneDelivery(w.Producers[i].Delivery)
	}
	w.Transactional.Topics = slices.Clone(w.Transactional.Topics)
	w.Consumers.Topics = slices.Clone(w.Consumers.Topics)
	w.Group.Topics = slices.Clone(w.Group.Topics)
	w.Share.Topics = slices.Clone(w.Share.Topics)
	w.Sinks = slices.Clone(w.Sinks)
	s.Faults.Timeline = slices.Clone(s.Faults.Timeline)
	for i := range s.Faults.Timeline {
		s.Faults.Timeline[i].Fault = s.Faults.Timeline[i].Fault.clone()
	}
	if p := s.Faults.Periodic; p != nil {
		c := *p
		c.Set = slices.Clone(c.Set)
		for i := range c.Set {
			c.Set[i] = c.Set[i].clone()
		}
		s.Faults.Periodic = &c
	}
	return s
}

func (f Fault) clone() Fault {
	f.Target = clonePtr(f.Target)
	f.Params.To = clonePtr(f.Params.To)
	f.Parts = slices.Clone(f.Parts)
	for i := range f.Parts {
		f.Parts[i] = f.Parts[i].clone()
	}
	return f
}

func cloneDelivery(d kafkaconf.Delivery) kafkaconf.Delivery {
	return kafkaconf.Delivery{Acks: clonePtr(d.Acks), Idempotence: clonePtr(d.Idempotence),
		MaxInFlight: clonePtr(d.MaxInFlight), Retries: clonePtr(d.Retries)}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// withTopicLike adds topic name, with the settings of topic like, unless topics has it.
func withTopicLike(topics []Topic, name, like string) []Topic {
	if slices.ContainsFunc(topics, func(t Topic) bool { return t.Name == name }) {
		return topics
	}
	i := slices.IndexFunc(topics, func(t Topic) bool { return t.Name == like })
	if i < 0 {
		return topics // validation names the unknown topic
	}
	t := topics[i]
	t.Name, t.Config = name, maps.Clone(t.Config)
	return append(topics, t)
}

// schedules says whether the scenario's schedule holds a fault (in a compound's parts too) that
// is.
func (s Scenario) schedules(is func(FaultSpec) bool) bool {
	for _, name := range s.ScheduledFaults() {
		if spec, ok := LookupFault(FaultName(name)); ok && is(spec) {
			return true
		}
	}
	return false
}
