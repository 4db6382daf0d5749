package results

import (
	"fmt"
	"slices"

	"github.com/verity-kafka/verity/history"
)

// Liveness is what the history shows of its clients' progress (docs/liveness.md): how long each
// went without progress while work was available to it, how soon each fault's touched clients
// progressed again, and the clients stuck after the last heal. Kafka documents no bound on any
// of these, so they never change the safety verdict; a bound the scenario states is judged into
// the liveness verdict, and through it the run's outcome.
type Liveness struct {
	Verdict LivenessVerdict `json:"verdict"`
	Bounds  LivenessBounds  `json:"bounds"`
	// Reasons say why the verdict is fail or unknown, and what was left unjudged.
	Reasons []string `json:"reasons,omitempty"`
	// HorizonMS is where the workload phase ended (the first heal-all, else the first final
	// read): progress after it is not judged.
	HorizonMS float64 `json:"horizon_ms"`
	// LastHealMS is the last heal completed before the horizon; stuck time counts from it.
	LastHealMS *float64 `json:"last_heal_ms,omitempty"`
	// Gated: the history has ISR observations, and stuck time counts only while they showed the
	// partition able to serve.
	Gated    bool                                `json:"availability_gated"`
	Clients  []ClientLiveness                    `json:"clients"`
	Faults   []FaultRecovery                     `json:"faults,omitempty"`
	Recovery *Recovery                           `json:"recovery,omitempty"`
	Findings map[LivenessFamily]LivenessFindings `json:"findings"`
	Series   *ProgressSeries                     `json:"series,omitempty"`
}

// LivenessVerdict judges the stated bounds: not-stated when the scenario states none.
type LivenessVerdict string

const (
	LivenessPass      LivenessVerdict = "pass"
	LivenessFail      LivenessVerdict = "fail"
	LivenessUnknown   LivenessVerdict = "unknown"
	LivenessNotStated LivenessVerdict = "not-stated"
)

// LivenessBounds are the stated bounds (nil when not stated) and the fixed ones the check used.
type LivenessBounds struct {
	history.LivenessBounds
	// StuckAfterMS is how long a client may make no progress after the last heal, while work
	// is available and its partition can serve, before it is reported stuck.
	StuckAfterMS int64 `json:"stuck_after_ms"`
	// MinStallMS is the shortest stretch without progress counted as a stall.
	MinStallMS int64 `json:"min_stall_ms"`
}

// LivenessFamily names a liveness finding.
type LivenessFamily string

const (
	StuckProducer  LivenessFamily = "stuck-producer"
	StuckConsumer  LivenessFamily = "stuck-consumer"
	StuckProcessor LivenessFamily = "stuck-processor"
	StuckSink      LivenessFamily = "stuck-sink"
	// MaxStall and RecoverWithin are breaches of a stated bound.
	MaxStall      LivenessFamily = "max-stall"
	RecoverWithin LivenessFamily = "recover-within"
)

// LivenessFamilies lists every family, stuck ones first.
func LivenessFamilies() []LivenessFamily {
	return []LivenessFamily{StuckProducer, StuckConsumer, StuckProcessor, StuckSink, MaxStall, RecoverWithin}
}

// BoundFamilies lists the families that break a stated bound: they fail the liveness verdict.
func BoundFamilies() []LivenessFamily { return []LivenessFamily{MaxStall, RecoverWithin} }

// StuckFamilies lists the families of a client stuck after the last heal.
func StuckFamilies() []LivenessFamily {
	return []LivenessFamily{StuckProducer, StuckConsumer, StuckProcessor, StuckSink}
}

// ClientKind is what a client does, which decides what its progress is.
type ClientKind string

const (
	KindProducer  ClientKind = "producer"
	KindConsumer  ClientKind = "consumer"
	KindProcessor ClientKind = "processor"
	KindSink      ClientKind = "sink"
)

// ClientKinds lists the kinds in the order reports show them.
func ClientKinds() []ClientKind {
	return []ClientKind{KindProducer, KindConsumer, KindProcessor, KindSink}
}

// StuckFamily is the family of a client of kind k stuck after the last heal.
func (k ClientKind) StuckFamily() LivenessFamily {
	switch k {
	case KindProducer:
		return StuckProducer
	case KindConsumer:
		return StuckConsumer
	case KindProcessor:
		return StuckProcessor
	}
	return StuckSink
}

// ClientLiveness is one client: a producer process, a consumer (a group, or a process outside
// any group), a processor group, or a sink.
type ClientLiveness struct {
	Client    string     `json:"client"`
	Kind      ClientKind `json:"kind"`
	Processes []int      `json:"processes"`
	// Partitions are the partitions it wrote or read, "topic-partition".
	Partitions []string `json:"partitions"`
	// Progress counts its progress events; LastProgressMS is the last before the horizon.
	Progress       int64   `json:"progress"`
	LastProgressMS float64 `json:"last_progress_ms"`
	// Stalls are its longest stalls, longest first (at most MaxStalls).
	Stalls []ClientStall `json:"stalls"`
}

// MaxStalls is the most stalls kept per client.
const MaxStalls = 20

// ClientStall is a stretch of a client's partition with work available and no progress.
type ClientStall struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	FromMS    float64 `json:"from_ms"`
	ToMS      float64 `json:"to_ms"`
	// StuckMS is the part after the last heal during which the partition could serve.
	StuckMS float64 `json:"stuck_ms,omitempty"`
	// Recovered: it ended with progress before the horizon.
	Recovered bool `json:"recovered"`
	// Ops are the evidence: the last progress before it, the op that showed work, the op
	// that ended it.
	Ops []int64 `json:"ops"`
}

// Len is the stall's length in ms.
func (s ClientStall) Len() float64 { return s.ToMS - s.FromMS }

// Recovery is how soon the clients a fault touched progressed again: from its injection and
// from its heal, over their stalls in force across the fault. Zero: none stalled.
type Recovery struct {
	FromInjectionMS float64  `json:"from_injection_ms"`
	FromHealMS      *float64 `json:"from_heal_ms,omitempty"`
	// Recovered is false when a stall was still open at the horizon: the times are then the
	// least they could be.
	Recovered bool `json:"recovered"`
}

// FaultRecovery is one fault and its touched clients' and partitions' recovery.
type FaultRecovery struct {
	Label      string           `json:"label"`
	F          string           `json:"f"`
	Nodes      []int            `json:"nodes,omitempty"`
	InjectedMS float64          `json:"injected_ms"`
	HealedMS   *float64         `json:"healed_ms,omitempty"`
	HealedBy   string           `json:"healed_by"`
	Ops        []int64          `json:"ops"`
	Recovery   Recovery         `json:"recovery"`
	Clients    []ClientRecovery `json:"clients"`
	// Partitions are the partitions on which some client stalled across the fault, each with
	// the worst of its clients' recovery there.
	Partitions []PartitionRecovery `json:"partitions,omitempty"`
}

// PartitionRecovery is one partition's recovery from one fault: the worst of its clients'.
type PartitionRecovery struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Recovery
}

// ClientRecovery is one client's recovery from one fault.
type ClientRecovery struct {
	Client string     `json:"client"`
	Kind   ClientKind `json:"kind"`
	Recovery
}

// LivenessFindings are one family's findings.
type LivenessFindings struct {
	Count    int               `json:"count"`
	Examples []LivenessFinding `json:"examples"`
}

// LivenessFinding is one client that broke a bound or was stuck, with its evidence.
type LivenessFinding struct {
	Client    string     `json:"client"`
	Kind      ClientKind `json:"kind"`
	Topic     string     `json:"topic"`
	Partition int32      `json:"partition"`
	FromMS    float64    `json:"from_ms"`
	ToMS      float64    `json:"to_ms"`
	StuckMS   float64    `json:"stuck_ms,omitempty"`
	Recovered bool       `json:"recovered"`
	// Bound is the stated bound it broke ("max_stall 25s"); empty for a stuck client, which
	// breaks no stated bound.
	Bound string  `json:"bound,omitempty"`
	Ops   []int64 `json:"ops"`
	Note  string  `json:"note"`
}

// ProgressSeries are the report's plots, in buckets of BucketMS from the run's start: per
// partition the acknowledged offsets no reader had reached ("unseen"), per reader its lag
// (offsets available to it that it had not read), per client its progress events.
type ProgressSeries struct {
	BucketMS int64    `json:"bucket_ms"`
	Unseen   []Series `json:"unseen"`
	Lag      []Series `json:"lag"`
	Progress []Series `json:"progress"`
}

// Series is one line of a plot: a value per bucket (the bucket's largest for unseen and lag,
// its count for progress).
type Series struct {
	Name   string  `json:"name"`
	Values []int64 `json:"values"`
}

// Outcome is a run's result in one word: the safety verdict, and a liveness failure when the
// run kept every safety promise but broke a stated bound.
type Outcome string

const (
	OutcomePass         Outcome = "pass"
	OutcomeFail         Outcome = "fail"
	OutcomeUnknown      Outcome = "unknown"
	OutcomeLivenessFail Outcome = "fail (liveness)"
)

// Outcome is r's outcome: a safety fail or unknown first; then a broken stated bound; then a
// stated bound that could not be judged (unknown, never pass).
func (r *Results) Outcome() Outcome {
	var l LivenessVerdict
	if r.Liveness != nil {
		l = r.Liveness.Verdict
	}
	return OutcomeOf(r.Verdict, l)
}

// OutcomeOf is the outcome of a run whose safety verdict is v and liveness verdict l (empty
// when results.json has no liveness part).
func OutcomeOf(v Verdict, l LivenessVerdict) Outcome {
	switch v {
	case Fail:
		return OutcomeFail
	case Unknown:
		return OutcomeUnknown
	case Pass:
	default:
		return OutcomeUnknown
	}
	switch l {
	case LivenessFail:
		return OutcomeLivenessFail
	case LivenessUnknown:
		return OutcomeUnknown
	}
	return OutcomePass
}

// OutcomeOrder is every outcome, worst first: a table names outcomes in this order, and a
// command over many runs ends with the first one any run had.
var OutcomeOrder = []Outcome{OutcomeFail, OutcomeLivenessFail, OutcomeUnknown, OutcomePass}

// WorstOutcome is the worst of os by OutcomeOrder; pass when os is empty. An outcome not in
// OutcomeOrder counts as unknown.
func WorstOutcome(os ...Outcome) Outcome {
	worst := len(OutcomeOrder) - 1
	for _, o := range os {
		i := slices.Index(OutcomeOrder, o)
		if i < 0 {
			i = slices.Index(OutcomeOrder, OutcomeUnknown)
		}
		worst = min(worst, i)
	}
	return OutcomeOrder[worst]
}

// Breaches summarises the stated bounds l's run broke, one line per family with its first
// finding ("max_stall 25s broken: producer 3 on verity-0 from 20.1 s: 40.1 s without
// progress, …"); nil when none.
func (l *Liveness) Breaches() []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, f := range BoundFamilies() {
		fs := l.Findings[f]
		if fs.Count == 0 || len(fs.Examples) == 0 {
			continue
		}
		e := fs.Examples[0]
		s := fmt.Sprintf("%s broken: %s", e.Bound, e.Note)
		if fs.Count > 1 {
			s += fmt.Sprintf(", and %d more", fs.Count-1)
		}
		out = append(out, s)
	}
	return out
}
