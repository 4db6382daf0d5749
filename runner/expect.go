package runner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// Expected is what the guarantee table holds of one anomaly family under a scenario's settings:
// the judgement of each way a finding could arise (each producer, topic, reader isolation, with
// the scheduled faults taking effect), with the reason of each.
type Expected struct {
	Anomaly guarantee.Anomaly
	// Why gives, for each judgement some circumstance of the run gets, that circumstance's
	// reason.
	Why map[guarantee.Judgement]string
}

// Has reports whether some circumstance of the run gets judgement j.
func (e Expected) Has(j guarantee.Judgement) bool { _, ok := e.Why[j]; return ok }

// Expectations derives, once, what the guarantee table permits and forbids for a run of s:
// the settings are the header the run will write (Header), every producer with every topic and
// every isolation its readers use, and the faults its schedule may inject as if each took
// effect on every partition. A scenario's expectations are never written by hand.
func Expectations(s scenarios.Resolved) ([]Expected, error) {
	h, err := Header(s)
	if err != nil {
		return nil, err
	}
	faults := scheduledFaults(s)
	isos := []kafkaconf.Isolation{kafkaconf.ReadCommitted}
	w := s.Workload
	if w.Consumers.ReadUncommitted > 0 || (w.Group.Count > 0 && s.Client.Isolation == kafkaconf.ReadUncommitted) {
		isos = append(isos, kafkaconf.ReadUncommitted)
	}
	var facts []guarantee.Facts
	for _, n := range slices.Sorted(maps.Keys(h.Processes)) {
		p := kafkaconf.ResolveProducer(h.ProducerOf(n), kafkaconf.JavaClient())
		kind := guarantee.WriterSend
		if p.Transactional {
			kind = guarantee.WriterTxn
		}
		for _, name := range slices.Sorted(maps.Keys(h.Topics)) {
			for _, iso := range isos {
				f := guarantee.Facts{HasWriter: true, Producer: p, WriterKind: kind, Resent: p.AppResend,
					Topic: kafkaconf.ResolveTopic(h.TopicOf(name)), Faults: faults, Isolation: iso}
				if h.Client != nil {
					f.Client, f.TxnProtocol = h.Client.Name, h.Client.TxnProtocol
				}
				facts = append(facts, f)
			}
		}
	}
	table := guarantee.Rules()
	var out []Expected
	for _, a := range guarantee.Anomalies() {
		e := Expected{Anomaly: a, Why: map[guarantee.Judgement]string{}}
		for _, f := range facts {
			d := table.Judge(a, f)
			if _, seen := e.Why[d.Judgement]; !seen {
				e.Why[d.Judgement] = d.Why
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// scheduledFaults are the faults s's schedule may inject, as the guarantee table counts them: a
// disk or power loss on as many replicas as its target can hit at most.
func scheduledFaults(s scenarios.Resolved) guarantee.Faults {
	f := guarantee.Faults{Kinds: s.ScheduledFaults()}
	var walk func(scenarios.Fault)
	walk = func(ft scenarios.Fault) {
		for _, p := range ft.Parts {
			walk(p)
		}
		if ft.Target == nil {
			return
		}
		switch guarantee.FaultKind(string(ft.Name)) {
		case guarantee.FaultDiskLoss:
			f.DiskLossNodes = max(f.DiskLossNodes, targetSize(s, *ft.Target))
		case guarantee.FaultPowerLoss:
			f.PowerLossNodes = max(f.PowerLossNodes, targetSize(s, *ft.Target))
		}
	}
	for _, st := range s.Faults.Timeline {
		walk(st.Fault)
	}
	if p := s.Faults.Periodic; p != nil {
		for _, ft := range p.Set {
			walk(ft)
		}
	}
	return f
}

// targetSize is how many brokers a target picks at most.
func targetSize(s scenarios.Resolved, t scenarios.Target) int {
	n := s.Topology.Nodes
	switch t.Role {
	case scenarios.RoleFollowersOf:
		for _, tp := range s.Topics {
			if tp.Name == t.Topic {
				return max(tp.ReplicationFactor-1, 1)
			}
		}
	case scenarios.RoleReplicasOf:
		for _, tp := range s.Topics {
			if tp.Name == t.Topic {
				return tp.ReplicationFactor
			}
		}
	case scenarios.RoleControllers:
		if s.Topology.DedicatedControllers {
			return 0 // no broker: no replica
		}
		return n
	case scenarios.RoleRandomMinority:
		return max((n-1)/2, 1)
	case scenarios.RoleRandomMajority:
		return n/2 + 1
	}
	return 1
}

// checkClaims refuses a scenario whose expectations contradict the guarantee table: a
// forbidden or permitted claim the table gives no circumstance of the run, or a likely anomaly
// (a positive control) the table never permits.
func checkClaims(s scenarios.Resolved) error {
	exps, err := Expectations(s)
	if err != nil {
		return err
	}
	by := map[guarantee.Anomaly]Expected{}
	for _, e := range exps {
		by[e.Anomaly] = e
	}
	var errs []string
	claim := func(field string, as []guarantee.Anomaly, j guarantee.Judgement) {
		for i, a := range as {
			e := by[a]
			if e.Has(j) {
				continue
			}
			var because []string
			for _, other := range []guarantee.Judgement{guarantee.Forbidden, guarantee.Permitted, guarantee.Unknown} {
				if why, ok := e.Why[other]; ok {
					because = append(because, fmt.Sprintf("%s (%s)", other, why))
				}
			}
			errs = append(errs, fmt.Sprintf("expect.%s[%d]: %s is never %s under these settings; the guarantee table says %s",
				field, i, a, j, strings.Join(because, ", ")))
		}
	}
	e := s.Expect
	claim("forbidden", e.Forbidden, guarantee.Forbidden)
	claim("permitted", e.Permitted, guarantee.Permitted)
	claim("likely", e.Likely, guarantee.Permitted)
	if len(errs) > 0 {
		return fmt.Errorf("scenario %s: %s", s.Name, strings.Join(errs, "; "))
	}
	return nil
}
