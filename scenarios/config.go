package scenarios

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/verity-kafka/verity/verify/guarantee"
)

// headerConfig is the history header's "config": the settings the checker judges by, in
// verify/guarantee.Config's field names, and the whole scenario under "spec" (which the
// checker ignores, and a reader of the history can use to see what ran).
type headerConfig struct {
	guarantee.Config
	Spec Scenario `json:"spec"`
}

// Config predicts the history header's "config" for s, before any run: what the checker will
// judge by. Tests use it to hold each scenario's expectation against the guarantee table. The
// header of a real run is written once, by workloads.Run, from the settings the clients really
// run with (sarama's limits included), with the scenario under "spec" added by the runner; both
// number processes in Workload's documented order.
//
// It returns (with defaults applied): every producer
// and topic setting stated explicitly, so that the checker assumes nothing, and per-process
// entries ("processes") for producer groups with their own acks or idempotence and for every
// transactional producer and processor. Process numbers follow Workload's documented order.
// "faults" names the faults the schedule may inject; "deviations" the broker overrides that
// differ from Kafka 4.3's defaults (the harness adds its own when it runs).
func (s Scenario) Config() (json.RawMessage, error) {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	cl := s.Client
	c := guarantee.Config{
		Scenario:   s.Name,
		Producer:   producerSettings(cl, ProducerGroup{}),
		Topics:     map[string]guarantee.Topic{},
		Isolation:  cl.Isolation,
		Faults:     s.ScheduledFaults(),
		Deviations: s.Deviations(),
	}
	for _, t := range s.Topics {
		c.Topics[t.Name] = topicSettings(t)
	}
	c.Topic = topicSettings(s.Topics[0])

	procs := map[string]guarantee.Producer{}
	p := 0
	for _, g := range s.Workload.Producers {
		for range g.Count {
			if g.Acks != "" || g.Idempotence != nil {
				procs[strconv.Itoa(p)] = producerSettings(cl, g)
			}
			p++
		}
	}
	for range s.Workload.Transactional.Count + s.Workload.Processors.Count {
		procs[strconv.Itoa(p)] = transactionalSettings()
		p++
	}
	if len(procs) > 0 {
		c.Processes = procs
	}
	b, err := json.Marshal(headerConfig{Config: c, Spec: s})
	if err != nil {
		return nil, fmt.Errorf("encoding the config of scenario %s: %w", s.Name, err)
	}
	return b, nil
}

// Delivery is the acks and idempotence a producer of group g runs with: the group's own acks
// and idempotence over the client's, and, where neither says, Kafka's default — idempotence on
// unless a setting conflicts (acks other than all, no retries, more than 5 in flight). Forcing
// acks other than all on a group without its own idempotence drops the client's, as Kafka
// would refuse the pair. The zero group is the client's own producer.
func (c Client) Delivery(g ProducerGroup) (acks string, idempotent bool) {
	acks, idem := c.Acks, c.Idempotence
	if g.Acks != "" {
		acks = g.Acks
		if acks != "all" && g.Idempotence == nil {
			idem = nil
		}
	}
	if g.Idempotence != nil {
		idem = g.Idempotence
	}
	if idem != nil {
		return acks, *idem
	}
	return acks, acks == "all" && (c.Retries == nil || *c.Retries > 0) && c.MaxInFlight <= 5
}

// producerSettings states every delivery setting of a producer of group g explicitly, with
// Kafka's default where the scenario leaves one out.
func producerSettings(cl Client, g ProducerGroup) guarantee.Producer {
	acksText, idempotent := cl.Delivery(g)
	acks, _ := guarantee.ParseAcks(acksText) // validated
	retries := guarantee.DefaultRetries
	if cl.Retries != nil {
		retries = *cl.Retries
	}
	inFlight := cl.MaxInFlight
	resend := cl.AppResend > 0
	return guarantee.Producer{Acks: &acks, Idempotence: &idempotent, MaxInFlight: &inFlight, Retries: &retries, AppResend: &resend}
}

// transactionalSettings are what Kafka forces on a transactional producer.
func transactionalSettings() guarantee.Producer {
	acks, yes, inFlight, retries := guarantee.AcksAll, true, guarantee.DefaultMaxInFlight, guarantee.DefaultRetries
	return guarantee.Producer{Acks: &acks, Idempotence: &yes, MaxInFlight: &inFlight, Retries: &retries, Transactional: &yes}
}

func topicSettings(t Topic) guarantee.Topic {
	rf, minISR, unclean := t.ReplicationFactor, t.MinInsyncReplicas, t.UncleanLeaderElection
	return guarantee.Topic{ReplicationFactor: &rf, MinInsyncReplicas: &minISR, UncleanLeaderElection: &unclean}
}

// ScheduledFaults lists, sorted and once each, the faults s's schedule may inject (the parts of
// compounds, not "compound"; never "none").
func (s Scenario) ScheduledFaults() []string {
	seen := map[string]bool{}
	var walk func(f Fault)
	walk = func(f Fault) {
		switch f.Name {
		case FaultNone:
		case FaultCompound:
			for _, p := range f.Parts {
				walk(p)
			}
		default:
			seen[string(f.Name)] = true
		}
	}
	for _, st := range s.Faults.Timeline {
		walk(st.Fault)
	}
	if p := s.Faults.Periodic; p != nil {
		for _, f := range p.Set {
			walk(f)
		}
	}
	if len(seen) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(seen))
}

// kafkaBrokerDefaults are Kafka 4.3's defaults of broker settings scenarios are likely to
// override, so that Deviations can leave out an override that sets the default.
func kafkaBrokerDefaults() map[string]string {
	return map[string]string{
		"replica.lag.time.max.ms":                  "30000",
		"group.initial.rebalance.delay.ms":         "3000",
		"offsets.topic.replication.factor":         "3",
		"transaction.state.log.replication.factor": "3",
		"transaction.state.log.min.isr":            "2",
		"transaction.state.log.num.partitions":     "50",
		"transaction.max.timeout.ms":               "900000",
		"min.insync.replicas":                      "1",
		"unclean.leader.election.enable":           "false",
		"default.replication.factor":               "1",
		"auto.create.topics.enable":                "true",
		"num.partitions":                           "1",
	}
}

// Deviations lists s's broker overrides that differ from Kafka 4.3's defaults, as "key=value",
// sorted. An override of a setting whose default this package does not know counts.
func (s Scenario) Deviations() []string {
	defaults := kafkaBrokerDefaults()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(s.Broker)) {
		if d, ok := defaults[k]; ok && d == s.Broker[k] {
			continue
		}
		out = append(out, k+"="+s.Broker[k])
	}
	return out
}
