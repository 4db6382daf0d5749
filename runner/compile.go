package runner

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/nemesis"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/workloads"
)

// plan is a scenario made concrete for the packages that run it.
type plan struct {
	scenario  scenarios.Resolved
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
	PowerLoss            bool
	BootUnsynced         bool
	LogDirs              int
	Broker               string // the broker overrides, canonical
	Stores               string // the side-effect services the sinks need, sorted
	Kafka                string // the release and the feature levels set, canonical
	Loggers              string // the broker loggers set, canonical
}

func shapeOf(s scenarios.Scenario) clusterShape { return specShape(clusterSpec(harness.Spec{}, s)) }

// specShape is the shape of a cluster started from spec: the one place a shape is made, so that
// a scenario's shape and a running cluster's compare alike.
func specShape(spec harness.Spec) clusterShape {
	var stores []sink.Store
	if spec.Postgres {
		stores = append(stores, sink.Postgres)
	}
	if spec.Ledger {
		stores = append(stores, sink.Ledger)
	}
	var broker []string
	for _, k := range slices.Sorted(maps.Keys(spec.BrokerConfig)) {
		broker = append(broker, k+"="+spec.BrokerConfig[k])
	}
	var names []string
	for _, st := range slices.Sorted(slices.Values(stores)) {
		names = append(names, string(st))
	}
	return clusterShape{Nodes: spec.Nodes, DedicatedControllers: spec.DedicatedControllers,
		PowerLoss: spec.PowerLoss, BootUnsynced: spec.KeepBootUnsynced, LogDirs: max(spec.LogDirs, 1), Broker: strings.Join(broker, ", "), Stores: strings.Join(names, ", "),
		Kafka: string(spec.KafkaVersion.Or()) + " " + spec.Features.String(), Loggers: spec.Loggers.String()}
}

// clusterSpec is base (the caller's harness options) with the cluster s asks for.
func clusterSpec(base harness.Spec, s scenarios.Scenario) harness.Spec {
	base.Nodes, base.DedicatedControllers, base.BrokerConfig = s.Topology.Nodes, s.Topology.DedicatedControllers, s.Broker
	base.PowerLoss, base.KeepBootUnsynced, base.LogDirs = s.Topology.PowerLoss, s.Topology.BootUnsynced, s.Topology.LogDirs
	base.KafkaVersion, base.Features = s.Kafka.Version, maps.Clone(s.Kafka.Features)
	base.Loggers = maps.Clone(s.Kafka.Loggers)
	stores := s.Workload.Stores()
	base.Postgres, base.Ledger = slices.Contains(stores, sink.Postgres), slices.Contains(stores, sink.Ledger)
	return base
}

// Hold-open transactions start this far into the run, so that the workloads run first.
const holdAfter = 10 * time.Second

// compile makes s into a plan. tag names the run's consumer groups and transactional.ids, so
// that runs on one cluster do not share them.
func compile(s scenarios.Resolved, tag string) (*plan, error) {
	pl := &plan{scenario: s, cluster: shapeOf(s.Scenario)}
	ws := workloads.Spec{Name: s.Name, Seed: s.Seed, Duration: s.Duration.Std(), ScheduledFaults: s.ScheduledFaults(),
		Client: s.Client.Name, ClientVersion: s.Client.Version, TxnProtocol: s.Client.TxnProtocol, GroupProtocol: s.Client.GroupProtocol,
		ClientCommand: s.Client.Command, Liveness: s.Expect.Liveness.Bounds()}
	client, _ := kafkaconf.LookupClient(s.Client.Name) // validated
	spec, err := json.Marshal(s.Scenario)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: encoding it for the history header: %w", s.Name, err)
	}
	ws.Scenario = spec
	for _, t := range s.Topics {
		ws.Topics = append(ws.Topics, harness.TopicSpec{Name: t.Name, Partitions: t.Partitions, RF: t.ReplicationFactor,
			MinISR: t.MinInsyncReplicas, Unclean: new(t.UncleanLeaderElection), Config: t.Config})
		pl.topics = append(pl.topics, t.Name)
	}
	cl := s.Client
	for _, g := range s.Workload.Producers {
		pc := producerConfig(cl, g)
		_, notes, err := pc.Resolved(client)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
		for _, note := range notes {
			if !slices.Contains(pl.notes, note) {
				pl.notes = append(pl.notes, note)
			}
		}
		ws.Producers = append(ws.Producers, workloads.ProducerSpec{Instances: g.Count, ProducerConfig: pc})
	}
	txnClient := workloads.TxnClientConfig{RequestTimeout: cl.RequestTimeout.Std(), DeliveryTimeout: cl.DeliveryTimeout.Std()}
	if cl.Retries != nil {
		txnClient.Retries = *cl.Retries
	}
	tx := cl.Transactions
	refs := scenarios.Refs{LogDirs: s.Topology.LogDirs}
	for i := range s.Workload.Transactional.Count {
		tc := workloads.TxnConfig{Topics: s.Workload.Transactional.Topics, TxnID: fmt.Sprintf("%s-txn-%d", tag, i),
			MaxRecords: tx.Records, AbortProbability: tx.AbortProbability, ZombieProbability: tx.ZombieProbability,
			TxnClientConfig: txnClient}
		if tx.HoldOpen > 0 {
			tc.HoldOpen, tc.HoldAfter = tx.HoldOpen.Std(), holdAfter
			// The coordinator would abort a transaction open longer than its timeout.
			tc.Timeout = tx.HoldOpen.Std() + 30*time.Second
		}
		refs.TxnID = cmp.Or(refs.TxnID, tc.TxnID)
		ws.Transactional = append(ws.Transactional, tc)
	}
	pr := s.Workload.Processors
	for i := range pr.Count {
		pc := workloads.ProcessorConfig{Input: pr.Input, Output: pr.Output, Group: tag + "-rpw",
			TxnID: fmt.Sprintf("%s-rpw-%d", tag, i), AbortProbability: tx.AbortProbability, CrashEvery: pr.CrashEvery.Std(), CrashAfterCommit: pr.CrashAfterCommit,
			Writes: pr.Writes, Isolation: pr.Isolation, SkipRewind: pr.SkipRewind, TxnClientConfig: txnClient}
		refs.TxnID = cmp.Or(refs.TxnID, pc.TxnID)
		refs.Group = pc.Group
		ws.Processors = append(ws.Processors, pc)
	}
	// Consumers in the order Workload documents: read_committed, read_uncommitted, group.
	cs := s.Workload.Consumers
	for i := range cs.ReadCommitted + cs.ReadUncommitted {
		iso := kafkaconf.ReadCommitted
		if i >= cs.ReadCommitted {
			iso = kafkaconf.ReadUncommitted
		}
		ws.Consumers = append(ws.Consumers, workloads.ConsumerConfig{Topics: cs.Topics, Mode: workloads.Assign, Isolation: iso})
	}
	if g := s.Workload.Group; g.Count > 0 {
		name := tag + "-" + g.Name
		refs.Group = name
		for range g.Count {
			ws.Consumers = append(ws.Consumers, workloads.ConsumerConfig{Topics: g.Topics, Mode: workloads.Subscribe,
				Group: name, Isolation: cl.Isolation, RestartEvery: g.RestartEvery.Std(), StallEvery: g.StallEvery.Std(),
				MaxPollInterval: g.MaxPollInterval.Std()})
		}
	}
	for _, sk := range s.Workload.Sinks {
		group := tag + "-sink-" + sk.Name
		refs.Group = cmp.Or(refs.Group, group) // a group-coordinator fault aims at the first sink's without another group
		ws.Sinks = append(ws.Sinks, workloads.SinkConfig{Name: sk.Name, Mode: sk.Mode, Topic: sk.Topic,
			Group: group, Instances: sk.Count, CrashEvery: sk.CrashEvery.Std(), Outbox: sk.Outbox})
	}
	if sh := s.Workload.Share; sh.Members > 0 {
		g := workloads.ShareGroupConfig{Group: tag + "-" + sh.Name, Topics: sh.Topics, Members: sh.Members,
			Mix:        workloads.ShareMix{Accept: sh.Mix.Accept, Release: sh.Mix.Release, Reject: sh.Mix.Reject},
			CrashEvery: sh.CrashEvery.Std(), LockDuration: sh.LockDuration.Std(), DeliveryLimit: sh.DeliveryLimit}
		if ms, err := strconv.Atoi(s.Broker["group.share.session.timeout.ms"]); err == nil {
			g.SessionTimeout = time.Duration(ms) * time.Millisecond
		}
		refs.ShareGroup, refs.ShareTopic = g.Group, sh.Topics[0]
		ws.ShareGroups = append(ws.ShareGroups, g)
	}
	if s.Workload.Uses().Transactions {
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
	if pl.schedule, err = s.NemesisSchedule(refs); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	pl.workloads = ws
	return pl, nil
}

// producerConfig is a producer group's client configuration: the scenario's settings as they
// are; the workloads resolve what Kafka and sarama make of them (kafkaconf.ResolveProducer).
func producerConfig(cl scenarios.Client, g scenarios.ProducerGroup) workloads.ProducerConfig {
	return workloads.ProducerConfig{
		Topics: []string{g.Topic}, Delivery: g.Delivery.Over(cl.Delivery),
		RetryBackoff: cl.RetryBackoff.Std(), RequestTimeout: cl.RequestTimeout.Std(), DeliveryTimeout: cl.DeliveryTimeout.Std(),
		Linger: cl.Linger.Std(), BatchBytes: cl.BatchBytes, Compression: cl.Compression, Async: g.Async,
		Rate: max(g.Rate, 0), AppResend: cl.AppResend,
	}
}

// Plan checks everything a run of s would check before it starts a cluster — the scenario's
// claims against its settings, and its compilation into a plan and a header — and starts
// nothing: what 'verity validate' runs.
func Plan(s scenarios.Resolved) error {
	if err := checkClaims(s); err != nil {
		return err
	}
	if _, err := Header(s); err != nil {
		return fmt.Errorf("planning its run: %w", err)
	}
	return nil
}

// Header is the history header's config a run of s writes, as far as a scenario decides it:
// made by the same function the run uses (workloads.HeaderConfig), on a cluster of s's shape.
// The process numbers, the settings of every producer and topic, the isolation and deviations
// are the run's; only the names a reused cluster's run gives its topics differ. Of the kafka
// entry it has the release and the levels the scenario sets: the run's adds every other level
// the cluster finalized, which only the cluster knows.
func Header(s scenarios.Resolved) (history.Config, error) {
	pl, err := compile(s, "verity")
	if err != nil {
		return history.Config{}, err
	}
	hs := clusterSpec(harness.Spec{}, s.Scenario)
	h, err := workloads.HeaderConfig(pl.workloads, s.Topology.Nodes, hs.ControllerIDs(), hs.Deviations(), workloads.PredictTxnProtocol(pl.workloads))
	if err != nil {
		return history.Config{}, err
	}
	h.Kafka = &history.KafkaInfo{Version: s.Kafka.Version.Or(), Features: maps.Clone(s.Kafka.Features)}
	return h, nil
}

// freshNames returns s with every topic, consumer group and transactional.id it names given
// suffix, so that a run on a reused cluster starts on empty topics and new groups.
func freshNames(r scenarios.Resolved, suffix string) scenarios.Resolved {
	s := r.Clone()
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
	renAll(w.Share.Topics)
	for i := range w.Sinks {
		ren(&w.Sinks[i].Topic)
		ren(&w.Sinks[i].Outbox)
	}
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
	return scenarios.Resolved{Scenario: s}
}
