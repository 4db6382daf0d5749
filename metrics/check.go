package metrics

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Observation is what the run's ISR watch saw of one partition at one time (the history's "isr"
// events).
type Observation struct {
	Index     int64 // the op's index in the history
	TimeMS    int64
	Topic     string
	Partition int32
	Leader    int32 // -1: no leader
	ISR       []int
	Replicas  []int
	MinISR    int // 0: not known
}

// alert is a gauge that a broker raises for the partitions it leads while a condition on the
// partition holds; Check looks for stretches in which the watch saw the condition and the
// leader's gauge stayed at zero. A new alert is one entry in alerts.
type alert struct {
	metric Name
	holds  func(o Observation) bool
	what   func(o Observation) string
}

var alerts = []alert{
	{UnderMinISR,
		func(o Observation) bool { return o.MinISR > 0 && len(o.ISR) < o.MinISR },
		func(o Observation) string { return fmt.Sprintf("ISR %v below min.insync.replicas %d", o.ISR, o.MinISR) }},
	{UnderReplicated,
		func(o Observation) bool { return len(o.Replicas) > 0 && len(o.ISR) < len(o.Replicas) },
		func(o Observation) string { return fmt.Sprintf("ISR %v smaller than replicas %v", o.ISR, o.Replicas) }},
}

// AlertMetrics lists the gauges Check judges as alerts.
func AlertMetrics() []Name {
	out := make([]Name, len(alerts))
	for i, a := range alerts {
		out[i] = a.metric
	}
	return out
}

// Finding is an alert that would not have fired: the watch saw the condition for the whole
// window, and every sample of the leader's gauge in it was zero.
type Finding struct {
	Metric    Name   `json:"metric"`
	Node      int    `json:"node"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	FromMS    int64  `json:"from_ms"`
	ToMS      int64  `json:"to_ms"`
	// Samples is how many samples of the leader in the window read zero.
	Samples int `json:"samples"`
	// Ops are the history's "isr" observations that show the condition: the first and the last
	// of the window.
	Ops  []int64 `json:"ops"`
	Text string  `json:"text"`
}

// Outcome is what Check made of the samples.
type Outcome struct {
	// Checked counts the stretches long enough to judge in which the leader answered.
	Checked int `json:"checked"`
	// Fired counts those in which the leader's gauge was above zero at least once.
	Fired int `json:"fired"`
	// Unsampled counts stretches long enough to judge in which the leader never answered
	// (stopped, paused, cut off from the sampler): nothing can be said of its alert.
	Unsampled int       `json:"unsampled"`
	Findings  []Finding `json:"findings,omitempty"`
}

// stretch is a run of observations of one partition, one leader, in which a condition held.
type stretch struct {
	leader     int32
	from, to   int64 // ms
	first, end Observation
}

// Check compares the samples with the observations (in history order) for every alert. A
// stretch is judged from its first observation to the next observation that ends it, less a
// grace of two sampling intervals at each end for the metadata to reach the watch and the
// leader at different times; it needs two samples of the leader inside to be judged.
func Check(samples []Sample, obs []Observation, interval time.Duration) Outcome {
	grace := 2 * interval.Milliseconds()
	byNode := map[int][]Sample{}
	for _, s := range samples {
		byNode[s.Node] = append(byNode[s.Node], s)
	}
	for _, ss := range byNode {
		slices.SortStableFunc(ss, func(a, b Sample) int { return cmp.Compare(a.TimeMS, b.TimeMS) })
	}
	var out Outcome
	for _, a := range alerts {
		for _, st := range stretches(obs, a.holds) {
			from, to := st.from+grace, st.to-grace
			if to-from < 2*interval.Milliseconds() {
				continue
			}
			answered, raised := 0, false
			for _, s := range byNode[int(st.leader)] {
				if s.TimeMS < from || s.TimeMS > to || s.Error != "" {
					continue
				}
				v, ok := s.Values[a.metric]
				if !ok {
					continue
				}
				answered++
				raised = raised || v > 0
			}
			switch {
			case answered < 2:
				out.Unsampled++
			case raised:
				out.Checked++
				out.Fired++
			default:
				out.Checked++
				m, _ := Lookup(a.metric)
				out.Findings = append(out.Findings, Finding{
					Metric: a.metric, Node: int(st.leader), Topic: st.first.Topic, Partition: st.first.Partition,
					FromMS: st.from, ToMS: st.to, Samples: answered, Ops: []int64{st.first.Index, st.end.Index},
					Text: fmt.Sprintf("%s (%s) stayed 0 on broker %d, the leader of %s-%d, in all %d samples from %.1f s to %.1f s, while the ISR watch saw %s",
						m.MBean, m.Attribute, st.leader, st.first.Topic, st.first.Partition, answered,
						float64(from)/1000, float64(to)/1000, a.what(st.first)),
				})
			}
		}
	}
	return out
}

// stretches finds, per partition, the runs of observations with one leader in which holds is
// true. A stretch ends at the first later observation of its partition that breaks it, or at
// the last observation of the history.
func stretches(obs []Observation, holds func(Observation) bool) []stretch {
	type key struct {
		topic string
		p     int32
	}
	open := map[key]*stretch{}
	var out []stretch
	var last int64
	for _, o := range obs {
		last = max(last, o.TimeMS)
		k := key{o.Topic, o.Partition}
		st := open[k]
		if st != nil && (o.Leader != st.leader || !holds(o)) {
			st.to = o.TimeMS
			out = append(out, *st)
			delete(open, k)
			st = nil
		}
		if st == nil && o.Leader >= 0 && holds(o) {
			open[k] = &stretch{leader: o.Leader, from: o.TimeMS, first: o, end: o}
			continue
		}
		if st != nil {
			st.end = o
		}
	}
	for _, st := range open {
		st.to = last
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b stretch) int {
		return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.first.Topic, b.first.Topic), cmp.Compare(a.first.Partition, b.first.Partition))
	})
	return out
}
