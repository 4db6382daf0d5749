// Package results is the typed form of results.json (docs/results.md): what a check found,
// judged, and the verdict. It imports the history's header type and the guarantee table's
// vocabulary (anomaly names, judgements) and nothing of the checkers, so the report and CI tools
// can read results without pulling them in.
package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/metrics"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// Version is the value of the "verity_results" field. Version 2 gives each anomaly one
// judgement ("judgement") where version 1 also had "permitted"; Read reads both.
const Version = 2

// FileName is the name results are written under in a run's directory.
const FileName = "results.json"

// Verdict is the run's outcome.
type Verdict string

const (
	Pass    Verdict = "pass"
	Fail    Verdict = "fail"
	Unknown Verdict = "unknown"
)

// Results is results.json. Fields past Timings are additions the format allows.
type Results struct {
	Version    int                           `json:"verity_results"`
	Verdict    Verdict                       `json:"verdict"`
	Scenario   string                        `json:"scenario"`
	Seed       int64                         `json:"seed"`
	Config     history.Config                `json:"config"`
	Deviations []string                      `json:"deviations"`
	Anomalies  map[guarantee.Anomaly]Anomaly `json:"anomalies"`
	Stats      Stats                         `json:"stats"`
	Timings    Timings                       `json:"timings"`

	// UnknownReasons says why the verdict could not be pass or fail ("final reads of t-3 are
	// incomplete"); empty unless the verdict is unknown.
	UnknownReasons []string `json:"unknown_reasons,omitempty"`
	// UnknownCauses are the reasons' causes, each once (AddUnknown writes both).
	UnknownCauses []UnknownCause `json:"unknown_causes,omitempty"`
	// Assumed lists settings the config did not give, judged at Kafka 4.3's default.
	Assumed []string `json:"assumed,omitempty"`
	// Overrides lists settings forced from outside the history (the CLI's flags).
	Overrides []string `json:"overrides,omitempty"`
	// Notes are remarks on the check itself (a config field the checker could not read, …).
	Notes []string `json:"notes,omitempty"`
	// RunNotes and RunUnknownReasons are what the run itself, not the check, said: how it
	// departed from the scenario, why it could not be judged (a cluster that did not
	// recover). Notes and UnknownReasons include them; `verity report` keeps them when it
	// judges the history again.
	RunNotes          []string       `json:"run_notes,omitempty"`
	RunUnknownReasons []string       `json:"run_unknown_reasons,omitempty"`
	RunUnknownCauses  []UnknownCause `json:"run_unknown_causes,omitempty"`
	// Faults are the fault kinds that took effect (the history's nemesis events).
	Faults []string `json:"faults,omitempty"`
	// History describes the file that was checked.
	History *HistoryInfo `json:"history,omitempty"`
	// Run says what ran: written by a run (verity run, matrix), absent from a check of a
	// history alone.
	Run *RunInfo `json:"run,omitempty"`
	// BrokerMetrics is what the broker metrics sampled during the run said; absent when none
	// were sampled (the run's notes say why).
	BrokerMetrics *BrokerMetrics `json:"broker_metrics,omitempty"`
	// Liveness is what the history shows of the clients' progress; absent from results written
	// before it was judged.
	Liveness *Liveness `json:"liveness,omitempty"`
}

// FromVerityRun reports whether a Verity run wrote the history r was judged from: every run
// names its scenario in the history's header (config "scenario", copied to Scenario), and a
// history another tool wrote names none. Only a run's history can be repeated with `verity
// run`; any history can be judged again with `verity check`.
func (r *Results) FromVerityRun() bool { return r.Scenario != "" }

// OnlyKnown names the known issues that explain every forbidden finding of a failed run, in
// the table's order of families; nil when the run did not fail or some forbidden finding is
// not explained by one (a new break, which the run must not hide behind a known one).
func (r *Results) OnlyKnown() []guarantee.KnownIssue {
	if r.Verdict != Fail {
		return nil
	}
	var out []guarantee.KnownIssue
	for _, a := range guarantee.Anomalies() {
		an := r.Anomalies[a]
		forbidden := an.ForbiddenCount()
		if forbidden == 0 {
			continue
		}
		if an.Known < forbidden {
			return nil
		}
		for _, k := range an.KnownIssues {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// BrokerMetrics sums up a run's metrics.jsonl and checks its alerts against the ISR watch:
// an alert that stayed silent while the condition it watches held is a finding (it does not
// change the verdict, which judges Kafka's delivery guarantees, not its monitoring).
type BrokerMetrics struct {
	File       string `json:"file"`
	Source     string `json:"source"`
	IntervalMS int64  `json:"interval_ms"`
	// Samples counts the node samples; Unanswered those in which the node did not answer.
	Samples    int             `json:"samples"`
	Unanswered int             `json:"unanswered"`
	Alerts     metrics.Outcome `json:"alerts"`
}

// RunInfo identifies a run and what it ran on, so that results can be compared and traced.
type RunInfo struct {
	// ID is the run id every container, network and volume of its cluster was labelled with
	// (io.verity.run); a matrix's runs on one cluster share it.
	ID string `json:"id"`
	// VerityVersion is the binary's module version and commit (BuildVersion).
	VerityVersion string `json:"verity_version"`
	// Started is when the run started (RFC 3339), the history header's "started".
	Started string `json:"started"`
	// KafkaImage and ToxiproxyImage are the image references the nodes ran; the ids are the
	// images' sha256 ids (a locally built image has no registry digest).
	KafkaImage       string `json:"kafka_image"`
	KafkaImageID     string `json:"kafka_image_id,omitempty"`
	ToxiproxyImage   string `json:"toxiproxy_image"`
	ToxiproxyImageID string `json:"toxiproxy_image_id,omitempty"`
	// Host is the machine the nodes ran on, as its Docker engine reports it.
	Host HostInfo `json:"host"`
}

// HostInfo describes the machine the nodes ran on; zero values where the engine did not say.
type HostInfo struct {
	Cores         int    `json:"cores"`
	MemoryBytes   int64  `json:"memory_bytes"`
	EngineVersion string `json:"engine_version,omitempty"`
}

// BuildVersion is this binary's module version and the commit it was built from, as the Go
// toolchain recorded them: "(devel) 3c478d0f1a2b 2026-12-01T14:54:00Z, go1.26.8".
func BuildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (the binary carries no build information)"
	}
	parts := []string{bi.Main.Version}
	var rev, when string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		parts = append(parts, rev[:min(len(rev), 12)])
	} else {
		parts = append(parts, "(no commit recorded: built with -buildvcs=false or outside git)")
	}
	if when != "" {
		parts = append(parts, when)
	}
	if dirty {
		parts = append(parts, "with uncommitted changes")
	}
	return strings.Join(parts, " ") + ", " + bi.GoVersion
}

// HistoryInfo describes the history a result was computed from.
type HistoryInfo struct {
	Path string `json:"path,omitempty"`
	Ops  int64  `json:"ops"`
	// TornLine is the 1-based line number of a torn last line that was skipped, 0 if none.
	TornLine int `json:"torn_line,omitempty"`
}

// Anomaly is one family's entry: how many were found and how the guarantee table judged them.
// When the findings of one family were judged by different rows (a run with an acks=all and an
// acks=1 producer), Judgement and Why are the worst row's, and ByRule breaks the count down.
// With no finding, they say what the table holds for the run's settings.
type Anomaly struct {
	Count int `json:"count"`
	// Judgement is forbidden, permitted or unknown (no documented guarantee covers the
	// configuration: such findings keep the verdict from pass without failing it).
	Judgement guarantee.Judgement `json:"judgement"`
	Why       string              `json:"why"`
	Examples  []Example           `json:"examples,omitempty"`
	// Forbidden counts the findings judged forbidden.
	Forbidden int `json:"forbidden,omitempty"`
	// Known counts the forbidden findings a known issue explains (guarantee.KnownIssues), and
	// KnownIssues names those issues: the findings still fail the run.
	Known       int                    `json:"known,omitempty"`
	KnownIssues []guarantee.KnownIssue `json:"known_issues,omitempty"`
	// ByRule splits Count by the table row that judged each finding, when more than one did.
	ByRule []RuleCount `json:"by_rule,omitempty"`
	// Unchecked is set when the family could not be checked at all, with the reason.
	Unchecked string `json:"unchecked,omitempty"`
}

// ForbiddenCount is how many findings the guarantee table forbade: Forbidden when the checker
// split the count, else all of Count when the family is judged forbidden (results written
// before findings were counted apart).
func (a Anomaly) ForbiddenCount() int {
	switch {
	case a.Count == 0 || a.Unchecked != "":
		return 0
	case a.Forbidden > 0:
		return a.Forbidden
	case a.Judgement == guarantee.Forbidden:
		return a.Count
	}
	return 0
}

// RuleCount is the number of findings one row of the guarantee table judged.
type RuleCount struct {
	Count      int                  `json:"count"`
	Judgement  guarantee.Judgement  `json:"judgement"`
	Why        string               `json:"why"`
	KnownIssue guarantee.KnownIssue `json:"known_issue,omitempty"`
}

// Example is one finding with the op indices (history "i") that prove it.
type Example struct {
	Value     string              `json:"value,omitempty"`
	Ops       []int64             `json:"ops"`
	Topic     string              `json:"topic,omitempty"`
	Partition *int32              `json:"partition,omitempty"`
	Offsets   []int64             `json:"offsets,omitempty"`
	Process   *int                `json:"process,omitempty"`
	Judgement guarantee.Judgement `json:"judgement"`
	// KnownIssue is the known issue that explains the finding, when one does.
	KnownIssue guarantee.KnownIssue `json:"known_issue,omitempty"`
	Note       string               `json:"note,omitempty"`
	// Cycle is a dependency cycle's witness (G0, G1c…), edge by edge, from each transaction's
	// op to the next one's; the last edge returns to the first op.
	Cycle []CycleStep `json:"cycle,omitempty"`
}

// EdgeKind is what one edge of a dependency cycle rests on.
type EdgeKind string

// The edge kinds.
const (
	EdgeWR       EdgeKind = "wr"       // the first wrote a record the second read
	EdgeWW       EdgeKind = "ww"       // the first's record directly precedes the second's in a partition
	EdgeProcess  EdgeKind = "process"  // the second is the same process's next transaction
	EdgeRealtime EdgeKind = "realtime" // the first completed before the second began
)

// CycleStep is one edge of a cycle: from the op of one transaction to the op of the next. Value
// is the record the edge rests on (wr: the one read; ww: the earlier one), Isolation the
// reader's (wr).
type CycleStep struct {
	From      int64    `json:"from"`
	To        int64    `json:"to"`
	Kind      EdgeKind `json:"kind"`
	Value     string   `json:"value,omitempty"`
	Isolation string   `json:"isolation,omitempty"`
}

// Outcomes counts one kind of op by completion.
type Outcomes struct {
	OK      int64 `json:"ok"`
	Fail    int64 `json:"fail"`
	Info    int64 `json:"info"`
	Pending int64 `json:"pending,omitempty"` // invoked, never completed
}

// Percentiles are latencies in milliseconds.
type Percentiles struct {
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999,omitempty"`
	Max   float64 `json:"max,omitempty"`
	Count int64   `json:"count,omitempty"`
}

// Window is a span of time, in milliseconds since the run started, during which writes to a
// partition failed or went unanswered.
type Window struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	StartMs   float64 `json:"start_ms"`
	EndMs     float64 `json:"end_ms"`
	Failed    int64   `json:"failed"` // writes that completed fail or info inside it
}

// PartitionStats describes one partition's final log.
type PartitionStats struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Records counts distinct records in the final reads (any isolation).
	Records int64 `json:"records"`
	// Committed counts records the read_committed final reads showed (-1: none done).
	Committed int64 `json:"committed"`
	From      int64 `json:"from"`
	End       int64 `json:"end"`
	Complete  bool  `json:"complete"`
}

// Stats are the run's statistics. On the wire the per-kind outcome counts sit beside the other
// fields ("send": {...}, "txn": {...}, "unknown_later_seen": 3, ...), as history.md shows, so
// Stats has its own JSON methods.
type Stats struct {
	// Ops counts client ops by f ("send", "txn", "poll", "rpw", "final-read", ...).
	Ops map[string]Outcomes
	// Nemesis counts fault events by f.
	Nemesis map[string]int64
	// UnknownSends counts sends whose outcome was info (or never came).
	UnknownSends int64
	// UnknownLaterSeen counts those that a later read showed were written.
	UnknownLaterSeen int64
	// UnavailableMs is the time during which writes to at least one partition failed.
	UnavailableMs  float64
	Unavailability []Window
	// LatencyMs is the latency of ok sends (of ok txns when there are none).
	LatencyMs  Percentiles
	LatencyByF map[string]Percentiles
	Partitions []PartitionStats
	// Errors counts the fail and info completions of client ops by the error they carried
	// (ErrorClass), most first.
	Errors []ErrorCount
	// Stalls are, per partition written to, the longest stretch with no acknowledgement: from
	// the invoke of the first write not acknowledged to the acknowledgement that ended it (or
	// the last moment a write was still pending). A send that hung and was then acknowledged
	// counts, as it does not in UnavailableMs. Longest first; LongestStallMs is the first's length.
	Stalls         []Stall
	LongestStallMs float64
	// Resumes classifies where group members resumed their partitions, by reader and cause.
	Resumes []ResumeCount
	// Share is what a share group's members were delivered and acknowledged; nil without one.
	Share *ShareStats
}

// ShareStats counts a share group's deliveries and acknowledgements (docs/share-groups.md).
type ShareStats struct {
	// Records is how many records the members were delivered, Deliveries how many deliveries
	// (a record delivered three times counts three).
	Records    int64 `json:"records"`
	Deliveries int64 `json:"deliveries"`
	// ByCount counts deliveries by the delivery count the broker reported ("1", "2", ...).
	ByCount map[string]int64 `json:"by_count"`
	// Redeliveries counts the deliveries after a record's first by why its previous holder's
	// hold ended, a cause the documents permit (ShareCauses), or "unexplained" when the history
	// shows none (a finding of share-double-acquire when judged certain, else a delivery the
	// history missed).
	Redeliveries map[ShareCause]int64 `json:"redeliveries"`
	// Acks counts acknowledged records by type and the commit's outcome.
	Acks map[string]Outcomes `json:"acks"`
	// ArchivedUnseen counts records the group moved past whose deliveries the history shows
	// stop below the limit, but that polls of unknown outcome (a member stopped while a fetch
	// was in flight) could have taken to it: archived at the limit, as documented.
	ArchivedUnseen int64 `json:"archived_unseen,omitempty"`
}

// ShareCause is why a record was delivered again.
type ShareCause string

const (
	ShareAfterRelease     ShareCause = "release"      // its holder released it (commit ok)
	ShareAfterUnknownAck  ShareCause = "unknown-ack"  // its holder's acknowledgement failed or its outcome is unknown
	ShareAfterCrash       ShareCause = "crash"        // its holder crashed (its connection closed)
	ShareAfterLockExpired ShareCause = "lock-expired" // the lock duration had passed since its holder's poll
	ShareAfterFault       ShareCause = "fault"        // a fault took effect, or the leader changed, meanwhile
	ShareUnexplained      ShareCause = "unexplained"  // none of these shows in the history
)

// ShareCauses lists the causes of a redelivery, in the order tables show them.
func ShareCauses() []ShareCause {
	return []ShareCause{ShareAfterRelease, ShareAfterUnknownAck, ShareAfterCrash, ShareAfterLockExpired, ShareAfterFault, ShareUnexplained}
}

// Stall is a partition's longest stretch without an acknowledged write while one was pending,
// in milliseconds since the run started.
type Stall struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	StartMs   float64 `json:"start_ms"`
	EndMs     float64 `json:"end_ms"`
}

// ErrorCount is how many completions of one kind and outcome carried one class of error, and
// when the first and the last came, in seconds since the run started.
type ErrorCount struct {
	F       string  `json:"f"`
	Outcome string  `json:"outcome"` // fail or info
	Error   string  `json:"error"`   // ErrorClass of the op's error text
	Count   int64   `json:"count"`
	FirstS  float64 `json:"first_s"`
	LastS   float64 `json:"last_s"`
	// ByPartition splits the count of sends by partition ("topic-partition").
	ByPartition map[string]int64 `json:"by_partition,omitempty"`
}

// Field names of Stats besides the per-kind outcome counts.
const (
	keyNemesis          = "nemesis"
	keyUnknownSends     = "unknown_sends"
	keyUnknownLaterSeen = "unknown_later_seen"
	keyUnavailableMs    = "unavailable_ms"
	keyUnavailability   = "unavailability"
	keyLatency          = "latency_ms"
	keyLatencyByF       = "latency_ms_by_f"
	keyPartitions       = "partitions"
	keyErrors           = "errors"
	keyStalls           = "stalls"
	keyLongestStall     = "longest_stall_ms"
	keyResumes          = "resumes"
	keyShare            = "share"
)

// MarshalJSON writes the per-kind counts beside the other fields, with "send", "txn" and
// "poll" always present.
func (s Stats) MarshalJSON() ([]byte, error) {
	m := map[string]any{
		keyUnknownSends:     s.UnknownSends,
		keyUnknownLaterSeen: s.UnknownLaterSeen,
		keyUnavailableMs:    s.UnavailableMs,
		keyLatency:          s.LatencyMs,
	}
	for _, f := range []string{"send", "txn", "poll"} {
		m[f] = Outcomes{}
	}
	for f, o := range s.Ops {
		if slices.Contains([]string{keyNemesis, keyUnknownSends, keyUnknownLaterSeen, keyUnavailableMs,
			keyUnavailability, keyLatency, keyLatencyByF, keyPartitions, keyErrors, keyStalls, keyLongestStall, keyResumes, keyShare}, f) {
			return nil, fmt.Errorf("an op named %q clashes with a stats field", f)
		}
		m[f] = o
	}
	if len(s.Nemesis) > 0 {
		m[keyNemesis] = s.Nemesis
	}
	if len(s.Unavailability) > 0 {
		m[keyUnavailability] = s.Unavailability
	}
	if len(s.LatencyByF) > 0 {
		m[keyLatencyByF] = s.LatencyByF
	}
	if len(s.Partitions) > 0 {
		m[keyPartitions] = s.Partitions
	}
	if len(s.Errors) > 0 {
		m[keyErrors] = s.Errors
	}
	if len(s.Stalls) > 0 {
		m[keyStalls] = s.Stalls
		m[keyLongestStall] = s.LongestStallMs
	}
	if len(s.Resumes) > 0 {
		m[keyResumes] = s.Resumes
	}
	if s.Share != nil {
		m[keyShare] = s.Share
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes; an object-valued field it does not know is taken
// as an op kind's outcome counts.
func (s *Stats) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = Stats{}
	fields := map[string]any{
		keyNemesis:          &s.Nemesis,
		keyUnknownSends:     &s.UnknownSends,
		keyUnknownLaterSeen: &s.UnknownLaterSeen,
		keyUnavailableMs:    &s.UnavailableMs,
		keyUnavailability:   &s.Unavailability,
		keyLatency:          &s.LatencyMs,
		keyLatencyByF:       &s.LatencyByF,
		keyPartitions:       &s.Partitions,
		keyErrors:           &s.Errors,
		keyStalls:           &s.Stalls,
		keyLongestStall:     &s.LongestStallMs,
		keyResumes:          &s.Resumes,
		keyShare:            &s.Share,
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if dst, ok := fields[k]; ok {
			if err := json.Unmarshal(v, dst); err != nil {
				return fmt.Errorf("stats field %q: %w", k, err)
			}
			continue
		}
		if len(bytes.TrimSpace(v)) == 0 || bytes.TrimSpace(v)[0] != '{' {
			continue // a scalar added by a later version
		}
		var o Outcomes
		if err := json.Unmarshal(v, &o); err != nil {
			return fmt.Errorf("stats field %q: %w", k, err)
		}
		if s.Ops == nil {
			s.Ops = map[string]Outcomes{}
		}
		s.Ops[k] = o
	}
	return nil
}

// Timings are durations in seconds; the checker fills CheckS, the run the others.
type Timings struct {
	ClusterReadyS float64 `json:"cluster_ready_s"`
	RunS          float64 `json:"run_s"`
	CheckS        float64 `json:"check_s"`
}

// Write writes r as indented JSON to dir/results.json, through a temporary file so that a
// reader never sees half a file.
func Write(dir string, r *Results) (string, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding results: %w", err)
	}
	b = append(b, '\n')
	path := filepath.Join(dir, FileName)
	tmp, err := os.CreateTemp(dir, ".results-*.json")
	if err != nil {
		return "", fmt.Errorf("writing results to %s: %w", dir, err)
	}
	// CreateTemp makes the file private; results are for CI tools and people to read.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// Read reads a results.json, of this version or version 1.
func Read(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	switch r.Version {
	case Version:
	case 1:
		if err := judgeVersion1(b, &r); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		r.Version = Version
	default:
		return nil, fmt.Errorf("decoding %s: verity_results %d: this reader reads versions 1 and %d", path, r.Version, Version)
	}
	return &r, nil
}

// judgeVersion1 fills the judgement of a version-1 anomaly that gave only "permitted".
func judgeVersion1(b []byte, r *Results) error {
	var v1 struct {
		Anomalies map[guarantee.Anomaly]struct {
			Permitted bool            `json:"permitted"`
			Judgement json.RawMessage `json:"judgement"`
		} `json:"anomalies"`
	}
	if err := json.Unmarshal(b, &v1); err != nil {
		return err
	}
	for name, a := range v1.Anomalies {
		if len(a.Judgement) > 0 {
			continue
		}
		e := r.Anomalies[name]
		e.Judgement = guarantee.Forbidden
		if a.Permitted {
			e.Judgement = guarantee.Permitted
		}
		r.Anomalies[name] = e
	}
	return nil
}

// ResumeReader is the kind of group member a resume is counted for.
type ResumeReader string

// The readers whose resumes are classified.
const (
	// ResumeProcessor: a transactional processor, whose group's commits the history records
	// (its transactions' reads).
	ResumeProcessor ResumeReader = "processor"
	// ResumeConsumer: a consumer in a group, whose commits the history does not record.
	ResumeConsumer ResumeReader = "consumer"
)

// ResumeCause is what reset a member's positions before it resumed.
type ResumeCause string

// The causes of a resume.
const (
	ResumeStart    ResumeCause = "start"     // its first read
	ResumeAssign   ResumeCause = "assign"    // a rebalance's assignment
	ResumeCrash    ResumeCause = "crash"     // a new instance
	ResumeAbort    ResumeCause = "abort"     // its transaction did not commit, and it rewound
	ResumeDataLoss ResumeCause = "data-loss" // its client moved its position (KIP-320)
	ResumeOther    ResumeCause = "other"     // a subscribe, a seek, another op of its process
)

// ResumeCount classifies the resumes of one kind of reader after one cause: where each
// member's first record of a partition lay against its group's committed offset
// (docs/guarantees.md, "Where a consumer resumes").
type ResumeCount struct {
	Reader         ResumeReader `json:"reader"`
	Cause          ResumeCause  `json:"cause"`
	AtCommitted    int64        `json:"at_committed"`
	RewoundFurther int64        `json:"rewound_further"`
	SkippedAhead   int64        `json:"skipped_ahead"`
	// Unclassified: the history does not fix the committed offset (a consumer's group that
	// had read nothing yet: its reset policy is not in the history).
	Unclassified int64 `json:"unclassified,omitempty"`
	// Superseded: another member had been assigned the partition since the member's latest
	// assign (the coordinator had dropped it): not judged.
	Superseded int64 `json:"superseded,omitempty"`
}
