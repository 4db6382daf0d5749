package scenarios

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/kafkatoxic"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/verify"
	"github.com/verity-kafka/verity/verify/guarantee"
	"github.com/verity-kafka/verity/verify/results"
)

// FieldError is one problem of a scenario: the path of the field (as in YAML, e.g.
// "topics[0].min_insync_replicas"), what is wrong and what the field accepts. Line is the
// line of the YAML file the field is on, when the scenario came from one.
type FieldError struct {
	Path string
	Msg  string
	Line int
}

func (e *FieldError) Error() string {
	s := e.Msg
	if e.Path != "" {
		s = e.Path + ": " + e.Msg
	}
	if e.Line > 0 {
		s += fmt.Sprintf(" (line %d)", e.Line)
	}
	return s
}

// Errors are every problem found in a scenario, in field order.
type Errors []*FieldError

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// checker collects the problems of one scenario.
type checker struct {
	s    *Scenario
	errs Errors
}

func (c *checker) addf(path, format string, args ...any) {
	c.errs = append(c.errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Validate checks every field of s, as given (call WithDefaults first for a scenario with
// omitted fields: Parse and Builtin do). It returns nil or Errors naming each bad field with
// what it accepts.
func (s Scenario) Validate() error {
	c := &checker{s: &s}
	c.scenario()
	if len(c.errs) == 0 {
		return nil
	}
	return c.errs
}

// allOf reports whether s is non-empty and every byte of it is a digit, a letter (lower-case
// only when lower) or one of extra.
func allOf(s string, lower bool, extra string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case !lower && c >= 'A' && c <= 'Z':
		case strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// validName: a scenario name, lower-case letters, digits, dots and dashes, starting with a
// letter or digit.
func validName(s string) bool { return allOf(s, true, ".-") && alnum(s[0]) }

// validTopic: Kafka's legal topic characters, at most 249.
func validTopic(s string) bool { return len(s) <= 249 && allOf(s, false, "._-") }

// validProperty: a dotted property name.
func validProperty(s string) bool { return allOf(s, false, "._-") && alnum(s[0]) }

// topicFieldKeys are topic settings with fields of their own.
func topicFieldKeys() map[string]string {
	return map[string]string{
		"min.insync.replicas":            "min_insync_replicas",
		"unclean.leader.election.enable": "unclean_leader_election",
		"replication.factor":             "replication_factor",
	}
}

func (c *checker) scenario() {
	s := c.s
	switch {
	case s.Name == "":
		c.addf("name", "missing: give the scenario a name")
	case !validName(s.Name):
		c.addf("name", "%q: want lower-case letters, digits, dots and dashes", s.Name)
	}
	c.expect()
	c.tags()
	if n := s.Topology.Nodes; n < 1 || n > 50 {
		c.addf("topology.nodes", "%d: want 1 to 50 brokers", n)
	}
	if n := s.Topology.LogDirs; n < 0 || n > harness.MaxLogDirs {
		c.addf("topology.log_dirs", "%d: want 1 to %d log directories per node", n, harness.MaxLogDirs)
	}
	if s.Topology.BootUnsynced && !s.Topology.PowerLoss {
		c.addf("topology.boot_unsynced", "true needs the nodes on the lazy filesystem: set topology.power_loss, or schedule a power-loss or disk fault")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Broker)) {
		p := fmt.Sprintf("broker[%q]", k)
		switch {
		case !validProperty(k):
			c.addf(p, "not a property name")
		case slices.Contains(harness.TopologyKeys(), k):
			c.addf(p, "the harness sets %s to build its topology; it cannot be overridden", k)
		case k == kafkaconf.BrokerFlushMessages:
			if _, err := kafkaconf.ParseFlushMessages(s.Broker[k]); err != nil {
				c.addf(p, "%v", err)
			}
		}
	}
	c.kafka()
	c.regression()
	c.topics()
	c.client()
	c.workload()
	if d := s.Duration.Std(); d <= 0 || d > 24*time.Hour {
		c.addf("duration", "%s: want a positive duration up to 24h, such as 60s", s.Duration)
	}
	c.schedule()
}

func (c *checker) kafka() {
	k := c.s.Kafka
	if k.Version != "" {
		if _, err := kafkaconf.ParseKafkaVersion(string(k.Version)); err != nil {
			c.addf("kafka.version", "%v", err)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(k.Features)) {
		p := fmt.Sprintf("kafka.features[%q]", f)
		if _, err := kafkaconf.ParseFeature(string(f)); err != nil {
			c.addf(p, "%v", err)
		} else if k.Features[f] < 0 {
			c.addf(p, "%d: want a level of 0 or more", k.Features[f])
		}
	}
	if err := k.Loggers.Validate(); err != nil {
		c.addf("kafka.loggers", "%v", err)
	}
}

func (c *checker) regression() {
	r := c.s.Regression
	if r == nil {
		return
	}
	if strings.TrimSpace(r.Bug) == "" {
		c.addf("regression.bug", "missing: name the bug by its issue or KIP id")
	}
	k, ok := LookupKnob(r.Knob)
	if !ok || !k.Axis {
		var axes []string
		for _, k := range Knobs() {
			if k.Axis {
				axes = append(axes, k.Name)
			}
		}
		c.addf("regression.knob", "%q: want a knob a matrix may vary: %s", r.Knob, strings.Join(axes, ", "))
		return
	}
	if strings.TrimSpace(r.Bad) == strings.TrimSpace(r.Fixed) {
		c.addf("regression.fixed", "%q is the bad side's value too: the sides must differ", r.Fixed)
	}
	for i, field := range []string{"bad", "fixed"} {
		v := r.Values()[i]
		side := c.s.Clone()
		if err := k.Scenario(&side, v); err != nil {
			c.addf("regression."+field, "--%s %s: %v", r.Knob, v, err)
		}
	}
	if len(r.Shows) == 0 {
		c.addf("regression.shows", "missing: list the anomalies the bad side shows")
	}
	known := anomalyNames()
	for i, a := range r.Shows {
		if !slices.Contains(guarantee.Anomalies(), a) {
			c.addf(fmt.Sprintf("regression.shows[%d]", i), "%q: want one of %s%s", a, strings.Join(known, ", "), suggest(string(a), known))
		}
	}
}

func (c *checker) expect() {
	e := c.s.Expect
	if e.Verdict != results.Pass && e.Verdict != results.Fail {
		c.addf("expect.verdict", "%q: want pass or fail", e.Verdict)
	}
	known := anomalyNames()
	check := func(field string, names []guarantee.Anomaly) {
		for i, n := range names {
			p := fmt.Sprintf("expect.%s[%d]", field, i)
			if !slices.Contains(guarantee.Anomalies(), n) {
				c.addf(p, "%q: want one of %s%s", n, strings.Join(known, ", "), suggest(string(n), known))
			}
			if slices.Index(names, n) != i {
				c.addf(p, "%q is listed twice", n)
			}
		}
	}
	check("forbidden", e.Forbidden)
	check("permitted", e.Permitted)
	check("likely", e.Likely)
	if len(e.Likely) > 0 && strings.TrimSpace(e.Provoke) == "" {
		c.addf("expect.provoke", "missing: say how the scenario makes %s likely", guarantee.Join(e.Likely))
	}
	if len(e.LikelyNeeds) > 0 && len(e.Likely) == 0 {
		c.addf("expect.likely_needs", "set, but expect.likely names no anomaly that needs it")
	}
	for i, need := range e.LikelyNeeds {
		if _, err := kafkaconf.ParseCapability(string(need)); err != nil {
			c.addf(fmt.Sprintf("expect.likely_needs[%d]", i), "%v", err)
		}
	}
	c.liveness()
}

// liveness checks expect.liveness: each bound longer than the shortest stall the checker counts
// and shorter than the run, recover_within only with a fault the schedule heals, and the
// capabilities known to break a bound with the bound and the reason.
func (c *checker) liveness() {
	l := c.s.Expect.Liveness
	if l == nil {
		return
	}
	const p = "expect.liveness"
	if l.MaxStall == 0 && l.RecoverWithin == 0 {
		c.addf(p, "states no bound: give max_stall or recover_within, or remove it")
	}
	for _, b := range []struct {
		name string
		v    Duration
	}{{"max_stall", l.MaxStall}, {"recover_within", l.RecoverWithin}} {
		switch d := c.s.Duration; {
		case b.v == 0:
		case b.v.Std() <= verify.MinStall:
			c.addf(p+"."+b.name, "%s: want more than %s, the shortest stretch without progress the checker counts as a stall", b.v, verify.MinStall)
		case d > 0 && b.v >= d:
			c.addf(p+"."+b.name, "%s is not shorter than the run (duration %s): no stretch that long could be judged", b.v, d)
		}
	}
	if l.RecoverWithin > 0 && !c.s.Faults.healsFault() {
		c.addf(p+".recover_within", "the schedule heals no fault: nothing to judge recover_within against")
	}
	for i, need := range l.BreaksWithout {
		bp := fmt.Sprintf("%s.breaks_without[%d]", p, i)
		if _, err := kafkaconf.ParseCapability(string(need)); err != nil {
			c.addf(bp, "%v", err)
		}
		if slices.Index(l.BreaksWithout, need) != i {
			c.addf(bp, "%q is listed twice", need)
		}
	}
	switch {
	case len(l.BreaksWithout) > 0 && l.Bounds() == nil:
		// Said once, above: there is no bound to break.
	case len(l.BreaksWithout) > 0 && strings.TrimSpace(l.Why) == "":
		c.addf(p+".why", "missing: say why a client without %s breaks %s", capabilityList(l.BreaksWithout), l.BoundsText())
	case len(l.BreaksWithout) == 0 && l.Why != "":
		c.addf(p+".why", "set, but expect.liveness.breaks_without names no capability whose lack it explains")
	}
}

// healsFault reports whether the schedule injects a fault that it then heals: a timeline step
// with a duration, or a periodic set with a fault that lasts until healed.
func (f Schedule) healsFault() bool {
	heals := func(ft Fault) bool {
		spec, ok := LookupFault(ft.Name)
		return ok && spec.Heals
	}
	switch f.Kind {
	case ScheduleTimeline:
		return slices.ContainsFunc(f.Timeline, func(st Step) bool { return st.For > 0 && heals(st.Fault) })
	case SchedulePeriodic:
		return f.Periodic != nil && slices.ContainsFunc(f.Periodic.Set, heals)
	}
	return false
}

func capabilityList(cs []kafkaconf.Capability) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return strings.Join(out, ", ")
}

func (c *checker) tags() {
	for i, t := range c.s.Tags {
		p := fmt.Sprintf("tags[%d]", i)
		if _, err := ParseTag(string(t)); err != nil {
			c.addf(p, "%v", err)
		}
		if slices.Index(c.s.Tags, t) != i {
			c.addf(p, "%q is listed twice", t)
		}
	}
}

func anomalyNames() []string {
	var out []string
	for _, a := range guarantee.Anomalies() {
		out = append(out, string(a))
	}
	return out
}

func (c *checker) topicNames() []string {
	out := make([]string, len(c.s.Topics))
	for i, t := range c.s.Topics {
		out[i] = t.Name
	}
	return out
}

// topic returns the topic called name, if any.
func (c *checker) topic(name string) (Topic, bool) {
	for _, t := range c.s.Topics {
		if t.Name == name {
			return t, true
		}
	}
	return Topic{}, false
}

// knownTopic checks that name is a topic of the scenario.
func (c *checker) knownTopic(path, name string) bool {
	if _, ok := c.topic(name); ok {
		return true
	}
	if name == "" {
		c.addf(path, "missing: name one of the topics (%s)", strings.Join(c.topicNames(), ", "))
	} else {
		c.addf(path, "%q is not a topic of the scenario (topics: %s)%s", name, strings.Join(c.topicNames(), ", "), suggest(name, c.topicNames()))
	}
	return false
}

func (c *checker) topics() {
	s := c.s
	if len(s.Topics) == 0 {
		c.addf("topics", "no topic: give at least one")
	}
	for i, t := range s.Topics {
		p := fmt.Sprintf("topics[%d]", i)
		switch {
		case t.Name == "":
			c.addf(p+".name", "missing")
		case !validTopic(t.Name):
			c.addf(p+".name", "%q: want letters, digits, '.', '_' or '-' (at most 249)", t.Name)
		case strings.HasPrefix(t.Name, "__"):
			c.addf(p+".name", "%q: names starting with __ are Kafka's internal topics", t.Name)
		}
		for j := range i {
			if s.Topics[j].Name == t.Name && t.Name != "" {
				c.addf(p+".name", "%q is also topics[%d]", t.Name, j)
			}
		}
		if t.Partitions < 1 || t.Partitions > 10000 {
			c.addf(p+".partitions", "%d: want 1 to 10000", t.Partitions)
		}
		switch rf := t.ReplicationFactor; {
		case rf < 1:
			c.addf(p+".replication_factor", "%d: want at least 1", rf)
		case rf > s.Topology.Nodes:
			c.addf(p+".replication_factor", "%d is more than topology.nodes %d", rf, s.Topology.Nodes)
		}
		switch m := t.MinInsyncReplicas; {
		case m < 1:
			c.addf(p+".min_insync_replicas", "%d: want at least 1", m)
		case t.ReplicationFactor >= 1 && m > t.ReplicationFactor:
			c.addf(p+".min_insync_replicas", "%d is more than replication_factor %d", m, t.ReplicationFactor)
		}
		own := topicFieldKeys()
		for _, k := range slices.Sorted(maps.Keys(t.Config)) {
			kp := fmt.Sprintf("%s.config[%q]", p, k)
			if f, ok := own[k]; ok {
				c.addf(kp, "use %s.%s", p, f)
			} else if !validProperty(k) {
				c.addf(kp, "not a property name")
			} else if k == kafkaconf.TopicFlushMessages {
				if _, err := kafkaconf.ParseFlushMessages(t.Config[k]); err != nil {
					c.addf(kp, "%v", err)
				}
			}
		}
	}
}

// delivery checks a producer's delivery settings d at path on their own, each value in range,
// and reports whether they all are.
func (c *checker) delivery(path string, d kafkaconf.Delivery) bool {
	before := len(c.errs)
	if d.Acks != nil && !d.Acks.Valid() {
		c.addf(path+".acks", "%d: want 0, 1 or all", int(*d.Acks))
	}
	if d.MaxInFlight != nil && *d.MaxInFlight < 1 {
		c.addf(path+".max_in_flight", "%d: want at least 1", *d.MaxInFlight)
	}
	if d.Retries != nil && *d.Retries < 0 {
		c.addf(path+".retries", "%d: want 0 or more", *d.Retries)
	}
	return len(c.errs) == before
}

// producer checks that Kafka would run a producer asked for pc (path names where own, the
// settings the path itself gives, came from): kafkaconf.ResolveProducer decides, so that the
// scenario refuses exactly what Kafka refuses. A conflict equal to the client's is not said
// again.
func (c *checker) producer(path string, own kafkaconf.Delivery, pc kafkaconf.ProducerConfig, clientConflict string) {
	r := kafkaconf.ResolveProducer(pc, kafkaconf.JavaClient()) // what Kafka refuses, whatever the client
	if r.Conflict == "" || r.Conflict == clientConflict {
		return // a group with the client's own conflict: said once, for the client
	}
	switch {
	case own.Idempotence != nil:
		path += ".idempotence"
	case own.Acks != nil:
		path += ".acks"
	}
	c.addf(path, "%s: Kafka refuses to start such a producer", r.Conflict)
}

func (c *checker) client() {
	cl := c.s.Client
	kc, known := kafkaconf.LookupClient(cl.Name)
	if !known {
		c.addf("client.name", "%q: want one of %s", cl.Name, strings.Join(kafkaconf.ClientNames(), ", "))
	}
	if cl.Version != "" && known {
		if _, err := kc.ParseVersion(cl.Version); err != nil {
			c.addf("client.version", "%v", err)
		}
	}
	transactional := c.s.Workload.Uses().Transactions
	if cl.GroupProtocol != "" && known && !slices.Contains(kc.GroupProtocols, cl.GroupProtocol) {
		c.addf("client.group_protocol", "%s: %s's group members speak %s only", cl.GroupProtocol, cl.Name, groupProtocolList(kc.GroupProtocols))
	}
	if cl.GroupProtocol != "" && !c.s.Workload.Uses().Groups {
		c.addf("client.group_protocol", "%s: the workload has no group member (a subscribing consumer, a processor)", cl.GroupProtocol)
	}
	if cl.TxnProtocol != "" && known && !slices.Contains(kc.TxnProtocols, cl.TxnProtocol) {
		c.addf("client.txn_protocol", "%s: %s speaks transaction protocol %s only", cl.TxnProtocol, cl.Name, protocolList(kc.TxnProtocols))
	}
	if cl.TxnProtocol != "" && !transactional {
		c.addf("client.txn_protocol", "set, but the workload has no transactional producers or processors")
	}
	for i, need := range c.s.Requires {
		if _, err := kafkaconf.ParseCapability(string(need)); err != nil {
			c.addf(fmt.Sprintf("requires[%d]", i), "%v", err)
		} else if known && !kc.Has(need) {
			c.addf(fmt.Sprintf("requires[%d]", i), "%s: the scenario needs it and client %s lacks it (%s)", need, cl.Name, kc.Doc)
		}
	}
	if c.delivery("client", cl.Delivery) {
		c.producer("client", cl.Delivery, cl.Producer(ProducerGroup{}), "")
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{{"retry_backoff", cl.RetryBackoff}, {"request_timeout", cl.RequestTimeout}, {"delivery_timeout", cl.DeliveryTimeout}, {"linger", cl.Linger}} {
		if d.v < 0 {
			c.addf("client."+d.name, "%s: want 0 or more", d.v)
		}
	}
	if cl.DeliveryTimeout > 0 {
		req := cmp.Or(cl.RequestTimeout, kafkaconf.DefaultRequestTimeout)
		linger := cmp.Or(cl.Linger, kafkaconf.DefaultLinger)
		if cl.DeliveryTimeout < linger+req {
			c.addf("client.delivery_timeout", "%s is less than linger + request_timeout (%s): Kafka refuses it", cl.DeliveryTimeout, linger+req)
		}
	}
	if cl.BatchBytes < 0 {
		c.addf("client.batch_bytes", "%d: want 0 or more", cl.BatchBytes)
	}
	if cl.Compression != "" {
		if _, err := kafkaconf.ParseCompression(string(cl.Compression)); err != nil {
			c.addf("client.compression", "%v", err)
		}
	}
	if cl.AppResend < 0 {
		c.addf("client.app_resend", "%d: want 0 or more", cl.AppResend)
	}
	c.isolation("client.isolation", cl.Isolation)
	tx := cl.Transactions
	if tx.AbortProbability < 0 || tx.AbortProbability >= 1 {
		c.addf("client.transactions.abort_probability", "%g: want 0 to below 1", tx.AbortProbability)
	}
	if tx.ZombieProbability < 0 || tx.ZombieProbability > 1 {
		c.addf("client.transactions.zombie_probability", "%g: want 0 to 1", tx.ZombieProbability)
	}
	if tx.Records < 0 {
		c.addf("client.transactions.records", "%d: want 0 or more", tx.Records)
	}
	if tx.HoldOpen < 0 {
		c.addf("client.transactions.hold_open", "%s: want 0 or more", tx.HoldOpen)
	}
	if tx != (Transactions{}) && !transactional {
		c.addf("client.transactions", "set, but the workload has no transactional producers or processors")
	}
	if transactional && cl.Retries != nil && *cl.Retries == 0 {
		c.addf("client.retries", "0: a transactional producer needs retries above 0 (idempotence), and the workload has transactional producers or processors")
	}
}

func protocolList(ps []kafkaconf.TxnProtocol) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, " and ")
}

func (c *checker) isolation(path string, v kafkaconf.Isolation) {
	if _, err := kafkaconf.ParseIsolation(string(v)); err != nil {
		c.addf(path, "%q: want %s or %s", v, kafkaconf.ReadCommitted, kafkaconf.ReadUncommitted)
	}
}

func (c *checker) workload() {
	w := c.s.Workload
	cl := c.s.Client
	for i, g := range w.Producers {
		p := fmt.Sprintf("workload.producers[%d]", i)
		if g.Count < 1 {
			c.addf(p+".count", "%d: want at least 1", g.Count)
		}
		c.knownTopic(p+".topic", g.Topic)
		// The client's own settings were checked with the client; a group that gives nothing
		// of its own cannot add a conflict.
		if c.delivery(p, g.Delivery) && !g.Delivery.IsZero() {
			c.producer(p, g.Delivery, cl.Producer(g), kafkaconf.ResolveProducer(cl.Producer(ProducerGroup{}), kafkaconf.JavaClient()).Conflict)
		}
	}
	if w.Transactional.Count < 0 {
		c.addf("workload.transactional.count", "%d: want 0 or more", w.Transactional.Count)
	}
	if w.Transactional.Count > 0 {
		if len(w.Transactional.Topics) == 0 {
			c.addf("workload.transactional.topics", "missing: name the topics the transactions write")
		}
		for i, t := range w.Transactional.Topics {
			c.knownTopic(fmt.Sprintf("workload.transactional.topics[%d]", i), t)
		}
		if n := len(slices.Compact(slices.Sorted(slices.Values(w.Transactional.Topics)))); n == 1 {
			c.addf("workload.transactional.topics", "one topic: name at least 2, since every transaction of two or more records spans two topics")
		}
	}
	pr := w.Processors
	if pr.Count < 0 {
		c.addf("workload.processors.count", "%d: want 0 or more", pr.Count)
	}
	if pr.Count > 0 {
		okIn := c.knownTopic("workload.processors.input", pr.Input)
		okOut := c.knownTopic("workload.processors.output", pr.Output)
		if okIn && okOut && pr.Input == pr.Output && pr.Writes == 0 {
			c.addf("workload.processors.output", "%q is also the input: a processor that writes one output per input needs two topics "+
				"(set writes for transactions that read and write one topic)", pr.Output)
		}
	}
	if pr.Writes < 0 {
		c.addf("workload.processors.writes", "%d: want 0 or more", pr.Writes)
	}
	switch pr.Isolation {
	case "", kafkaconf.ReadCommitted:
	case kafkaconf.ReadUncommitted:
		if pr.Writes == 0 {
			c.addf("workload.processors.isolation", "read_uncommitted needs writes: read-process-write is exactly-once only at read_committed")
		}
	default:
		c.addf("workload.processors.isolation", "%q: want read_committed or read_uncommitted", pr.Isolation)
	}
	if pr.SkipRewind && pr.Count == 0 {
		c.addf("workload.processors.skip_rewind", "set, but no processor runs (count is 0)")
	}
	if pr.CrashAfterCommit && pr.CrashEvery <= 0 {
		c.addf("workload.processors.crash_after_commit", "set, but crash_every is not: it says when the crashes come, not how often")
	}
	if pr.CrashEvery < 0 {
		c.addf("workload.processors.crash_every", "%s: want 0 or more", pr.CrashEvery)
	}
	cs := w.Consumers
	if cs.ReadCommitted < 0 {
		c.addf("workload.consumers.read_committed", "%d: want 0 or more", cs.ReadCommitted)
	}
	if cs.ReadUncommitted < 0 {
		c.addf("workload.consumers.read_uncommitted", "%d: want 0 or more", cs.ReadUncommitted)
	}
	for i, t := range cs.Topics {
		c.knownTopic(fmt.Sprintf("workload.consumers.topics[%d]", i), t)
	}
	g := w.Group
	if g.Count < 0 {
		c.addf("workload.group.count", "%d: want 0 or more", g.Count)
	}
	if g.Count > 0 {
		if g.Name == "" {
			c.addf("workload.group.name", "missing")
		}
		for i, t := range g.Topics {
			c.knownTopic(fmt.Sprintf("workload.group.topics[%d]", i), t)
		}
	}
	if g.RestartEvery < 0 {
		c.addf("workload.group.restart_every", "%s: want 0 or more", g.RestartEvery)
	}
	switch {
	case g.StallEvery < 0:
		c.addf("workload.group.stall_every", "%s: want 0 or more", g.StallEvery)
	case g.MaxPollInterval < 0:
		c.addf("workload.group.max_poll_interval", "%s: want 0 or more", g.MaxPollInterval)
	case g.StallEvery > 0 && g.MaxPollInterval == 0:
		c.addf("workload.group.max_poll_interval", "missing: a member stalls for twice it (stall_every %s), so that the group drops it", g.StallEvery)
	case g.StallEvery > 0:
		if kc, ok := kafkaconf.LookupClient(c.s.Client.Name); ok && !kc.Has(kafkaconf.CapMaxPollInterval) {
			c.addf("workload.group.stall_every", "%s: %s has no max.poll.interval.ms, so a stalled member stays in its group: run it with a client that has it (java)",
				g.StallEvery, kc.Name)
		}
	}
	if len(w.Producers) == 0 && w.Transactional.Count == 0 && w.Processors.Count == 0 {
		c.addf("workload", "no producers, transactional producers or processors: nothing would be written")
	}
	c.share(w.Share)
	names := map[string]bool{}
	for i, sk := range w.Sinks {
		path := fmt.Sprintf("workload.sinks[%d]", i)
		if _, err := sink.Parse(string(sk.Mode)); err != nil {
			c.addf(path+".mode", "%v", err)
		}
		if sk.Count < 0 {
			c.addf(path+".count", "%d: want 0 or more", sk.Count)
		}
		if sk.CrashEvery < 0 {
			c.addf(path+".crash_every", "%s: want 0 or more", sk.CrashEvery)
		}
		if err := sink.CheckName(sk.Name); err != nil {
			c.addf(path+".name", "%v", err)
		}
		if names[sk.Name] {
			c.addf(path+".name", "%q: another sink has this name", sk.Name)
		}
		names[sk.Name] = true
		c.knownTopic(path+".topic", sk.Topic)
		if in, ok := sk.Mode.Info(); ok {
			switch {
			case in.Relays && sk.Outbox == sk.Topic:
				c.addf(path+".outbox", "%q is the topic the sink consumes: it would consume its own output", sk.Outbox)
			case in.Relays:
				c.knownTopic(path+".outbox", sk.Outbox)
			case sk.Outbox != "":
				c.addf(path+".outbox", "set, but mode %s has no relay (only outbox publishes)", sk.Mode)
			}
		}
	}
}

func (c *checker) schedule() {
	f := c.s.Faults
	switch f.Kind {
	case ScheduleNone:
		if len(f.Timeline) > 0 {
			c.addf("faults.timeline", "set, but faults.kind is none")
		}
		if f.Periodic != nil {
			c.addf("faults.periodic", "set, but faults.kind is none")
		}
	case ScheduleTimeline:
		if len(f.Timeline) == 0 {
			c.addf("faults.timeline", "no step: give at least one, or make faults.kind none")
		}
		if f.Periodic != nil {
			c.addf("faults.periodic", "set, but faults.kind is timeline")
		}
	case SchedulePeriodic:
		if f.Periodic == nil {
			c.addf("faults.periodic", "missing: faults.kind periodic needs interval and set")
		}
		if len(f.Timeline) > 0 {
			c.addf("faults.timeline", "set, but faults.kind is periodic")
		}
	default:
		c.addf("faults.kind", "%q: want none, timeline or periodic", f.Kind)
	}
	for i, st := range f.Timeline {
		p := fmt.Sprintf("faults.timeline[%d]", i)
		if st.At < 0 {
			c.addf(p+".at", "%s: want 0 or more", st.At)
		} else if st.At >= c.s.Duration && c.s.Duration > 0 {
			c.addf(p+".at", "%s is not before the end of the run (duration %s)", st.At, c.s.Duration)
		}
		spec, ok := c.fault(p, st.Fault, true)
		switch {
		case st.For < 0:
			c.addf(p+".duration", "%s: want 0 or more", st.For)
		case !ok:
		case spec.Heals && st.For == 0:
			c.addf(p+".duration", "missing: %s lasts until healed, so give it a duration", st.Name)
		case !spec.Heals && st.For != 0:
			c.addf(p+".duration", "%s: %s ends by itself and takes no duration", st.For, st.Name)
		}
	}
	if pd := f.Periodic; pd != nil {
		p := "faults.periodic"
		if pd.Interval <= 0 {
			c.addf(p+".interval", "%s: want a positive duration", pd.Interval)
		}
		if pd.Quiet < 0 || pd.Quiet >= 1 {
			c.addf(p+".quiet", "%g: want 0 to below 1", pd.Quiet)
		}
		if pd.Hold <= 0 || (pd.Interval > 0 && pd.Hold > pd.Interval) {
			c.addf(p+".hold", "%s: want a positive duration up to the interval %s", pd.Hold, pd.Interval)
		}
		if pd.Start < 0 {
			c.addf(p+".start", "%s: want 0 or more", pd.Start)
		} else if c.s.Duration > 0 && pd.Start >= c.s.Duration {
			c.addf(p+".start", "%s is not before the end of the run (duration %s)", pd.Start, c.s.Duration)
		}
		if len(pd.Set) == 0 {
			c.addf(p+".set", "no fault: give at least one to draw from")
		}
		for i, ft := range pd.Set {
			c.fault(fmt.Sprintf("%s.set[%d]", p, i), ft, true)
		}
	}
}

// faultNames returns the catalogue's names as strings.
func faultNames() []string {
	var out []string
	for _, n := range FaultNames() {
		out = append(out, string(n))
	}
	return out
}

func roleNames(rs []Role) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// fault checks one fault at path; top is false for the parts of a compound.
func (c *checker) fault(path string, f Fault, top bool) (FaultSpec, bool) {
	spec, ok := LookupFault(f.Name)
	if !ok {
		if f.Name == "" {
			c.addf(path+".fault", "missing: want one of %s", strings.Join(faultNames(), ", "))
		} else {
			c.addf(path+".fault", "%q: want one of %s%s", f.Name, strings.Join(faultNames(), ", "), suggest(string(f.Name), faultNames()))
		}
		return spec, false
	}
	if nodes := c.s.Topology.Nodes; nodes < spec.MinNodes {
		c.addf(path+".fault", "%s needs at least %d brokers (topology.nodes %d)", f.Name, spec.MinNodes, nodes)
	}
	if spec.Kind == KindService {
		want := f.Params.store()
		if !slices.Contains(c.s.Workload.Stores(), want) {
			c.addf(path+".fault", "%s acts on %s, and no sink of the workload writes to it (workload.sinks)", f.Name, want)
		}
		if f.Name == FaultServiceKill && want == sink.Ledger {
			c.addf(path+".fault", "service-kill of the ledger: it keeps its entries in memory, so every effect before the kill would be lost and judged missing; cut its link instead (sink-cut)")
		}
	}
	switch spec.Target {
	case TargetNone:
		if f.Target != nil {
			c.addf(path+".target", "%s takes no target", f.Name)
		}
	case TargetRequired:
		if f.Target == nil {
			c.addf(path+".target", "missing: %s needs a target with a role (%s)", f.Name, strings.Join(roleNames(spec.Roles), ", "))
		}
	}
	if f.Target != nil && spec.Target != TargetNone {
		c.target(path+".target", *f.Target, spec)
	}
	c.params(path+".params", f, spec)
	if spec.Kind == KindDisk {
		c.checkDisk(path+".params", f)
	}
	if f.Name == FaultCompound {
		if !top {
			c.addf(path+".fault", "a compound cannot be a part of a compound")
		}
		if len(f.Parts) < 2 {
			c.addf(path+".parts", "%d parts: a compound needs at least 2", len(f.Parts))
		}
		for i, part := range f.Parts {
			pp := fmt.Sprintf("%s.parts[%d]", path, i)
			if part.Name == FaultNone {
				c.addf(pp+".fault", "none cannot be a part of a compound")
				continue
			}
			c.fault(pp, part, false)
		}
	} else if len(f.Parts) > 0 {
		c.addf(path+".parts", "only a compound has parts (this is %s)", f.Name)
	}
	return spec, true
}

func (c *checker) target(path string, t Target, spec FaultSpec) {
	var rs RoleSpec
	found := false
	for _, r := range RoleSpecs() {
		if r.Role == t.Role {
			rs, found = r, true
		}
	}
	if !found {
		all := roleNames(Roles())
		if t.Role == "" {
			c.addf(path+".role", "missing: want one of %s", strings.Join(all, ", "))
		} else {
			c.addf(path+".role", "%q: want one of %s%s", t.Role, strings.Join(all, ", "), suggest(string(t.Role), all))
		}
		return
	}
	if spec.Name != "" && !slices.Contains(spec.Roles, t.Role) {
		c.addf(path+".role", "%s: %s aims at %s only", t.Role, spec.Name, strings.Join(roleNames(spec.Roles), ", "))
	}
	uses := func(field string) bool { return slices.Contains(rs.Uses, field) }
	for _, u := range []struct {
		field string
		set   bool
	}{{"topic", t.Topic != ""}, {"partition", t.Partition != 0}, {"node", t.Node != 0}, {"txn_id", t.TxnID != ""}, {"group", t.Group != ""}} {
		if u.set && !uses(u.field) {
			c.addf(path+"."+u.field, "set, but role %s does not use it", t.Role)
		}
	}
	w := c.s.Workload
	switch t.Role {
	case RoleLeaderOf, RoleFollowerOf, RoleFollowersOf, RoleReplicasOf:
		if c.knownTopic(path+".topic", t.Topic) {
			tp, _ := c.topic(t.Topic)
			if t.Partition < 0 || t.Partition >= tp.Partitions {
				c.addf(path+".partition", "%d: topic %s has partitions 0 to %d", t.Partition, t.Topic, tp.Partitions-1)
			} else if (t.Role == RoleFollowerOf || t.Role == RoleFollowersOf) && tp.ReplicationFactor < 2 {
				c.addf(path+".role", "%s: topic %s has replication_factor %d, so no follower", t.Role, t.Topic, tp.ReplicationFactor)
			}
		}
	case RoleNode:
		n := t.Node
		okBroker := n >= 1 && n <= c.s.Topology.Nodes
		okController := c.s.Topology.DedicatedControllers && n >= 101 && n <= 103
		if !okBroker && !okController {
			want := fmt.Sprintf("a broker 1 to %d", c.s.Topology.Nodes)
			if c.s.Topology.DedicatedControllers {
				want += " or a controller 101 to 103"
			}
			c.addf(path+".node", "%d: want %s", n, want)
		}
	case RoleTxnCoordinator:
		if !w.Uses().Transactions {
			c.addf(path+".role", "txn-coordinator: the workload has no transactional producer or processor")
		}
	case RoleGroupCoordinator:
		if !w.Uses().Groups && t.Group == "" {
			c.addf(path+".role", "group-coordinator: the workload has no consumer group (a group, a processor or a sink)")
		}
	case RoleShareCoordinator:
		if !w.Uses().ShareGroups {
			c.addf(path+".role", "share-coordinator: the workload has no share group (workload.share)")
		}
	}
}

func (c *checker) params(path string, f Fault, spec FaultSpec) {
	p := f.Params
	set := map[string]bool{
		ParamLinks: p.Links != "", ParamCut: p.Cut != "", ParamDelay: p.Delay != 0, ParamJitter: p.Jitter != 0,
		ParamRateKBps: p.RateKBps != 0, ParamAfter: p.After != 0, ParamBytes: p.Bytes != 0, ParamHold: p.Hold,
		ParamTo: p.To != nil, ParamGate: p.Gate != 0, ParamService: p.Service != "",
		ParamAPI: p.API != "", ParamNth: p.Nth != 0, ParamUntil: p.Until != "", ParamFeature: p.Feature != "", ParamLevel: p.Level != nil,
		ParamVersion: p.Version != "", ParamPath: p.Path != "", ParamOp: p.Op != "", ParamOnce: p.Once,
	}
	for _, name := range slices.Sorted(maps.Keys(set)) {
		if !set[name] || slices.Contains(spec.Params, name) {
			continue
		}
		if len(spec.Params) == 0 {
			c.addf(path+"."+name, "%s takes no params", f.Name)
		} else {
			c.addf(path+"."+name, "%s does not take %s; it takes %s", f.Name, name, strings.Join(spec.Params, ", "))
		}
	}
	for _, name := range spec.Required {
		if !set[name] {
			c.addf(path+"."+name, "missing: %s needs %s", f.Name, name)
		}
	}
	if p.Links != "" && slices.Contains(spec.Params, ParamLinks) {
		switch p.Links {
		case LinksClient, LinksNode:
		case LinksFetch:
			if f.Target != nil && !slices.Contains(partitionRoles(), f.Target.Role) {
				c.addf(path+".links", "fetch: the fetch links are a partition's, so the target's role must be one of %s", strings.Join(roleNames(partitionRoles()), ", "))
			}
		default:
			c.addf(path+".links", "%q: want client, fetch or node", p.Links)
		}
	}
	if p.Service != "" && p.Service != ServicePostgres && p.Service != ServiceLedger {
		c.addf(path+".service", "%q: want postgres or ledger", p.Service)
	}
	if p.API != "" {
		if _, err := kafkatoxic.ParseRequest(p.API); err != nil {
			c.addf(path+".api", "%v", err)
		}
	}
	if p.Nth < 0 {
		c.addf(path+".nth", "%d: want 0 (every one) or more", p.Nth)
	}
	if p.Until != "" {
		if _, err := kafkatoxic.ParseRequest(p.Until); err != nil {
			c.addf(path+".until", "%v", err)
		}
		if p.Nth < 1 {
			c.addf(path+".until", "until ends the hold of one request: set nth to 1 or more (nth 0 holds every one)")
		}
	}
	if p.Feature != "" {
		if _, err := kafkaconf.ParseFeature(string(p.Feature)); err != nil {
			c.addf(path+".feature", "%v", err)
		}
	}
	if p.Version != "" {
		if _, err := kafkaconf.ParseKafkaVersion(string(p.Version)); err != nil {
			c.addf(path+".version", "%v", err)
		} else if from := c.s.Kafka.Version.Or(); !from.Less(p.Version) {
			c.addf(path+".version", "%s: the cluster runs Kafka %s (kafka.version); an upgrade goes to a newer release", p.Version, from)
		}
	}
	if p.Level != nil && *p.Level < 0 {
		c.addf(path+".level", "%d: want a level of 0 or more", *p.Level)
	}
	if p.Cut != "" && p.Cut != CutBlackhole && p.Cut != CutRefuse {
		c.addf(path+".cut", "%q: want blackhole or refuse", p.Cut)
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{{ParamDelay, p.Delay}, {ParamJitter, p.Jitter}, {ParamAfter, p.After}, {ParamGate, p.Gate}} {
		if d.v < 0 {
			c.addf(path+"."+d.name, "%s: want 0 or more", d.v)
		}
	}
	if p.RateKBps < 0 {
		c.addf(path+".rate_kbps", "%d: want a positive rate", p.RateKBps)
	}
	if p.Bytes < 0 {
		c.addf(path+".bytes", "%d: want 0 or more", p.Bytes)
	}
	if p.To != nil && slices.Contains(spec.Params, ParamTo) {
		c.target(path+".to", *p.To, FaultSpec{Roles: nodeRoles()})
	}
}

// suggest returns " (did you mean X?)" for the candidate closest to s (at most two edits away,
// or starting with s), or "".
func suggest(s string, candidates []string) string {
	s = strings.ToLower(s)
	best, bestD := "", 3
	for _, cand := range candidates {
		if d := editDistance(s, cand); d < bestD {
			best, bestD = cand, d
		}
	}
	if best == "" && len(s) >= 3 {
		for _, cand := range candidates {
			if strings.HasPrefix(cand, s) {
				best = cand
				break
			}
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func groupProtocolList(ps []kafkaconf.GroupProtocol) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return strings.Join(out, " and ")
}

// share checks a share group's settings against what Kafka takes, and the client's share
// consumer.
func (c *checker) share(sh Share) {
	const path = "workload.share"
	if sh.Members < 0 {
		c.addf(path+".members", "%d: want 0 or more", sh.Members)
	}
	if sh.Members <= 0 {
		return
	}
	for i, t := range sh.Topics {
		c.knownTopic(fmt.Sprintf("%s.topics[%d]", path, i), t)
	}
	if m := sh.Mix; m.Accept < 0 || m.Release < 0 || m.Reject < 0 || m.Accept+m.Release+m.Reject == 0 {
		c.addf(path+".mix", "accept %d, release %d, reject %d: weights are 0 or more, and not all 0", m.Accept, m.Release, m.Reject)
	}
	if sh.CrashEvery < 0 {
		c.addf(path+".crash_every", "%s: want 0 or more", sh.CrashEvery)
	}
	if sh.LockDuration != 0 && sh.LockDuration.Std() < time.Second {
		c.addf(path+".lock_duration", "%s: Kafka takes 1s or more (and its brokers 15s or more unless group.share.min.record.lock.duration.ms is lowered)", sh.LockDuration)
	}
	if sh.DeliveryLimit != 0 && (sh.DeliveryLimit < 2 || sh.DeliveryLimit > 10) {
		c.addf(path+".delivery_limit", "%d: Kafka takes 2 to 10", sh.DeliveryLimit)
	}
	if kc, ok := kafkaconf.LookupClient(c.s.Client.Name); ok && !kc.Has(kafkaconf.CapShareGroups) {
		c.addf(path, "%s has no share-group consumer (KIP-932): run share groups with a client that has one (franz-go)", kc.Name)
	}
}
