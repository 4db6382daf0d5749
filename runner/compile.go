package runner

import (
	"fmt"
	"slices"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/nemesis"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/workloads"
)

// plan is a scenario made concrete for the packages that run it.
type plan struct {
	scenario  scenarios.Scenario
	cluster   clusterShape
	workloads workloads.Spec // without Nemesis, Sarama, Log: the run sets them
	schedule  nemesis.Schedule
	topics    []string
	// txnTopics are the topics transactions write, with their partition counts: the run
	// measures how long their LSO stalls.
	txnTopics map[string]int32
	notes     []string // how the run departs from the scenario's letter (client limits)
}

// clusterShape is what decides whether a started cluster can run a scenario: cells of a matrix
// with the same shape share one cluster.
type clusterShape struct {
	Nodes                int
	DedicatedControllers bool
	Broker               string // the broker overrides, canonical
}

func shapeOf(s scenarios.Scenario) clusterShape {
	return clusterShape{Nodes: s.Topology.Nodes, DedicatedControllers: s.Topology.DedicatedControllers,
		Broker: fmt.Sprint(s.Broker)} // fmt prints maps sorted by key
}

// Hold-open transactions start this far into the run, so that the workloads run first.
const holdAfter = 10 * time.Second

// compile resolves s (defaults applied, validated) into a plan. tag names the run's consumer
// groups and transactional.ids, so that runs on one cluster do not share them.
func compile(s scenarios.Scenario, tag string) (*plan, error) {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	pl := &plan{scenario: s, cluster: shapeOf(s)}
	ws := workloads.Spec{Name: s.Name, Seed: s.Seed, Duration: s.Duration.Std()}
	for _, t := range s.Topics {
		unclean := t.UncleanLeaderElection
		ws.Topics = append(ws.Topics, harness.TopicSpec{Name: t.Name, Partitions: t.Partitions, RF: t.ReplicationFactor,
			MinISR: t.MinInsyncReplicas, Unclean: &unclean, Config: t.Config})
		pl.topics = append(pl.topics, t.Name)
	}
	cl := s.Client
	for _, g := range s.Workload.Producers {
		pc, note := producerConfig(cl, g)
		if note != "" && !slices.Contains(pl.notes, note) {
			pl.notes = append(pl.notes, note)
		}
		ws.Producers = append(ws.Producers, workloads.ProducerSpec{Instances: g.Count, ProducerConfig: pc})
	}
	txnClient := workloads.TxnClientConfig{RequestTimeout: cl.RequestTimeout.Std(), DeliveryTimeout: cl.DeliveryTimeout.Std()}
	tx := cl.Transactions
	var refs faultRefs
	for i := range s.Workload.Transactional.Count {
		tc := workloads.TxnConfig{Topics: s.Workload.Transactional.Topics, TxnID: fmt.Sprintf("%s-txn-%d", tag, i),
			MaxRecords: tx.Records, AbortProbability: tx.AbortProbability, ZombieProbability: tx.ZombieProbability,
			TxnClientConfig: txnClient}
		if tx.HoldOpen > 0 {
			tc.HoldOpen, tc.HoldAfter = tx.HoldOpen.Std(), holdAfter
			// The coordinator would abort a transaction open longer than its timeout.
			tc.Timeout = tx.HoldOpen.Std() + 30*time.Second
		}
		if refs.txnID == "" {
			refs.txnID = tc.TxnID
		}
		ws.Transactional = append(ws.Transactional, tc)
	}
	pr := s.Workload.Processors
	for i := range pr.Count {
		pc := workloads.ProcessorConfig{Input: pr.Input, Output: pr.Output, Group: tag + "-rpw",
			TxnID: fmt.Sprintf("%s-rpw-%d", tag, i), AbortProbability: tx.AbortProbability, CrashEvery: pr.CrashEvery.Std(),
			TxnClientConfig: txnClient}
		if refs.txnID == "" {
			refs.txnID = pc.TxnID
		}
		refs.group = pc.Group
		ws.Processors = append(ws.Processors, pc)
	}
	// Consumers in the order Workload documents: read_committed, read_uncommitted, group.
	cs := s.Workload.Consumers
	for i := range cs.ReadCommitted + cs.ReadUncommitted {
		iso := history.ReadCommitted
		if i >= cs.ReadCommitted {
			iso = history.ReadUncommitted
		}
		ws.Consumers = append(ws.Consumers, workloads.ConsumerConfig{Topics: cs.Topics, Mode: workloads.Assign, Isolation: iso})
	}
	if g := s.Workload.Group; g.Count > 0 {
		name := tag + "-" + g.Name
		refs.group = name
		for range g.Count {
			ws.Consumers = append(ws.Consumers, workloads.ConsumerConfig{Topics: g.Topics, Mode: workloads.Subscribe,
				Group: name, Isolation: cl.Isolation, RestartEvery: g.RestartEvery.Std()})
		}
	}
	if s.Workload.Transactional.Count > 0 || pr.Count > 0 {
		pl.txnTopics = map[string]int32{}
		written := slices.Clone(s.Workload.Transactional.Topics)
		if pr.Count > 0 {
			written = append(written, pr.Output)
		}
		for _, t := range s.Topics {
			if slices.Contains(written, t.Name) {
				pl.txnTopics[t.Name] = t.Partitions
			}
		}
	}
	sched, err := schedule(s, refs)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	pl.schedule = sched
	ws.Header = map[string]any{
		"isolation": cl.Isolation,
		"faults":    s.ScheduledFaults(),
		"spec":      s,
	}
	pl.workloads = ws
	return pl, nil
}

// producerConfig is a producer group's client configuration. The scenario states Kafka's
// settings; sarama differs in two ways that matter, both written into the history: its
// idempotent producer allows one request in flight (Kafka allows five), and it has no
// delivery.timeout.ms (the workload enforces it). Idempotence is stated explicitly
// (Client.Delivery), since the workload would otherwise turn it off when more than one request
// may be in flight.
func producerConfig(cl scenarios.Client, g scenarios.ProducerGroup) (workloads.ProducerConfig, string) {
	acks, idempotent := cl.Delivery(g)
	inFlight := cl.MaxInFlight
	var note string
	if idempotent && inFlight > 1 {
		note = fmt.Sprintf("idempotent producers run with max.in.flight.requests.per.connection=1, not %d: sarama's idempotent producer allows no more", inFlight)
		inFlight = 1
	}
	rate := g.Rate
	if rate < 0 {
		rate = 0
	}
	return workloads.ProducerConfig{
		Topics: []string{g.Topic}, Acks: acks, Idempotence: &idempotent, MaxInFlight: inFlight, Retries: cl.Retries,
		RetryBackoff: cl.RetryBackoff.Std(), RequestTimeout: cl.RequestTimeout.Std(), DeliveryTimeout: cl.DeliveryTimeout.Std(),
		Linger: cl.Linger.Std(), BatchBytes: cl.BatchBytes, Compression: cl.Compression, Async: g.Async,
		Rate: rate, AppResend: cl.AppResend,
	}, note
}

// freshNames returns s with every topic, consumer group and transactional.id it names given
// suffix, so that a run on a reused cluster starts on empty topics and new groups.
func freshNames(s scenarios.Scenario, suffix string) scenarios.Scenario {
	s = s.WithDefaults() // fills the targets' implicit topics, so that they are renamed too
	ren := func(name *string) {
		if *name != "" {
			*name += suffix
		}
	}
	renAll := func(names []string) {
		for i := range names {
			ren(&names[i])
		}
	}
	for i := range s.Topics {
		ren(&s.Topics[i].Name)
	}
	w := &s.Workload
	for i := range w.Producers {
		ren(&w.Producers[i].Topic)
	}
	renAll(w.Transactional.Topics)
	ren(&w.Processors.Input)
	ren(&w.Processors.Output)
	renAll(w.Consumers.Topics)
	renAll(w.Group.Topics)
	var target func(t *scenarios.Target)
	target = func(t *scenarios.Target) {
		if t != nil {
			ren(&t.Topic)
		}
	}
	var fault func(f *scenarios.Fault)
	fault = func(f *scenarios.Fault) {
		target(f.Target)
		target(f.Params.To)
		for i := range f.Parts {
			fault(&f.Parts[i])
		}
	}
	for i := range s.Faults.Timeline {
		fault(&s.Faults.Timeline[i].Fault)
	}
	if p := s.Faults.Periodic; p != nil {
		for i := range p.Set {
			fault(&p.Set[i])
		}
	}
	return s
}
