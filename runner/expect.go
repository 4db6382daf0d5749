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
	isos := s.Workload.ReadIsolations(s.Client.Isolation)
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
	// A sink's anomalies are judged by its mode: one circumstance per sink.
	var sinkFacts []guarantee.Facts
	for _, name := range slices.Sorted(maps.Keys(h.Sinks)) {
		si := h.Sinks[name]
		sinkFacts = append(sinkFacts, guarantee.Facts{Sink: si.Mode, Topic: kafkaconf.ResolveTopic(h.TopicOf(si.Topic)), Faults: faults})
	}
	table := guarantee.Rules()
	var out []Expected
	for _, a := range guarantee.Anomalies() {
		e := Expected{Anomaly: a, Why: map[guarantee.Judgement]string{}}
		fs := facts
		if a.OfSinks() {
			fs = sinkFacts
		}
		for _, f := range fs {
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
	cs, err := contradictions(s)
	if err != nil || len(cs) == 0 {
		return err
	}
	msgs := make([]string, len(cs))
	for i, c := range cs {
		msgs[i] = c.msg
	}
	return fmt.Errorf("scenario %s: %s", s.Name, strings.Join(msgs, "; "))
}

// contradiction is one claim of a scenario's expectation that the guarantee table, or the
// client, denies.
type contradiction struct {
	field   string // "forbidden", "permitted" or "likely"
	anomaly guarantee.Anomaly
	msg     string
	// because says why, when it is not the table: a positive control the client cannot fire.
	because string
}

func contradictions(s scenarios.Resolved) ([]contradiction, error) {
	exps, err := Expectations(s)
	if err != nil {
		return nil, err
	}
	by := map[guarantee.Anomaly]Expected{}
	for _, e := range exps {
		by[e.Anomaly] = e
	}
	var out []contradiction
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
			out = append(out, contradiction{field: field, anomaly: a, msg: fmt.Sprintf(
				"expect.%s[%d]: %s is never %s under these settings; the guarantee table says %s",
				field, i, a, j, strings.Join(because, ", "))})
		}
	}
	e := s.Expect
	claim("forbidden", e.Forbidden, guarantee.Forbidden)
	claim("permitted", e.Permitted, guarantee.Permitted)
	claim("likely", e.Likely, guarantee.Permitted)
	out = append(out, uncontrollable(s, out)...)
	return out, nil
}

// uncontrollable are the positive controls (likely anomalies) that s's client cannot fire: the
// scenario says what they need of the client (expect.likely_needs), the client table what each
// client does (kafkaconf.Clients). This is the one place a control is expected per client; the
// likely anomalies already denied (in denied) are not said twice.
func uncontrollable(s scenarios.Resolved, denied []contradiction) []contradiction {
	c, ok := kafkaconf.LookupClient(s.Client.Name)
	if !ok {
		return nil // validation names the client
	}
	var lacks []kafkaconf.Capability
	for _, need := range s.Expect.LikelyNeeds {
		if !c.Has(need) {
			lacks = append(lacks, need)
		}
	}
	if len(lacks) == 0 {
		return nil
	}
	names := make([]string, len(lacks))
	for i, l := range lacks {
		names[i] = string(l)
	}
	because := fmt.Sprintf("it needs %s of the client, which %s lacks", strings.Join(names, ", "), c.Name)
	var out []contradiction
	for i, a := range s.Expect.Likely {
		if slices.ContainsFunc(denied, func(d contradiction) bool { return d.field == "likely" && d.anomaly == a }) {
			continue
		}
		out = append(out, contradiction{field: "likely", anomaly: a, because: because,
			msg: fmt.Sprintf("expect.likely[%d]: %s cannot fire under client %s: %s (expect.likely_needs)", i, a, c.Name, because)})
	}
	return out
}

// Force forces the knob settings onto s (scenarios.Resolved.Override) and drops, with a note for
// each, the claims of its expectation that the forced settings make the guarantee table deny:
// `verity run --flush 1` and a matrix's flush axis change the scenario's settings on purpose, and
// a claim written for its own settings (lost-write likely) then no longer applies. Without
// settings s is returned as it is, its claims still checked by Run.
func Force(s scenarios.Resolved, set []scenarios.Setting) (scenarios.Resolved, []string, error) {
	if len(set) == 0 {
		return s, nil, nil
	}
	s, err := s.Override(set)
	if err != nil {
		return s, nil, err
	}
	return withoutDeniedClaims(s, strings.Join(scenarios.Flags(set), " "))
}

// withoutDeniedClaims drops from s the claims of its expectation that the guarantee table
// denies, with a note for each: a matrix cell changes the scenario's settings on purpose (a
// flush or acks axis), and a claim written for the scenario's own settings then no longer
// applies. The verdict is the table's either way.
func withoutDeniedClaims(s scenarios.Resolved, given string) (scenarios.Resolved, []string, error) {
	cs, err := contradictions(s)
	if err != nil || len(cs) == 0 {
		return s, nil, err
	}
	s = scenarios.Resolved{Scenario: s.Clone()} // fewer claims: still valid
	var notes []string
	for _, c := range cs {
		list := map[string]*[]guarantee.Anomaly{"forbidden": &s.Expect.Forbidden, "permitted": &s.Expect.Permitted, "likely": &s.Expect.Likely}[c.field]
		*list = slices.DeleteFunc(*list, func(a guarantee.Anomaly) bool { return a == c.anomaly })
		note := fmt.Sprintf("the scenario's claim that %s is %s does not hold with %s", c.anomaly, c.field, given)
		if c.because != "" {
			note += " (" + c.because + ")"
		}
		notes = append(notes, note+", and is not checked")
	}
	if len(s.Expect.Likely) == 0 {
		s.Expect.LikelyNeeds = nil // what no control is left to need
	}
	return s, notes, nil
}
