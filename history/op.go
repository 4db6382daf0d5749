// Package history is the op model of a Verity run and its JSONL file format (history.jsonl),
// as docs/history.md describes it. It imports nothing of Verity's but kafkaconf (the settings
// the header states): the workloads write it, the checkers read it, and other tools may read
// the file it describes.
//
// Writer records a run: safe for concurrent use, it assigns each event its i and t and appends
// it to the file at once, so a run killed half-way leaves a checkable prefix. Reader streams a
// history back, validating each line; both encode and decode op lines by hand (no reflection),
// because a run records and a checker reads millions of them. Op also round-trips through
// encoding/json, with the same result.
package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/verity-kafka/verity/kafkaconf"
)

// Version is the value of the header's "verity_history" field.
const Version = 1

// Type is an event's place in an operation: an invoke, then exactly one completion.
type Type string

const (
	Invoke Type = "invoke"
	OK     Type = "ok"   // definitely happened
	Fail   Type = "fail" // definitely did not happen
	Info   Type = "info" // outcome unknown
)

// Operation names (the "f" field) of client ops. Nemesis ops use the fault's name.
const (
	FSend      = "send"
	FTxn       = "txn"
	FPoll      = "poll"
	FAssign    = "assign"
	FSubscribe = "subscribe"
	FFinalRead = "final-read"
	FRPW       = "rpw"
	FCrash     = "crash"
	// FEffect is a sink's application of one record outside Kafka, FSinkRead the final state
	// of a sink's store, FPublish an outbox relay's publish of one outbox row (docs/history.md).
	FEffect   = "effect"
	FSinkRead = "sink-read"
	FPublish  = "publish"
	// FDataLoss notes that a consumer's client found the log truncated under its position
	// (KIP-320) and moved the position (value DataLoss). Like any op of the process that is not
	// a read, it starts the consumer's positions afresh.
	FDataLoss = "data-loss"
)

// Nemesis events that undo faults or mark the end of a run rather than being faults: a heal of
// links, a start of stopped nodes or of a killed service, a resume of paused nodes, the heal of
// everything at the run's end, and the healthy cluster after it.
const (
	FHeal         = "heal"
	FStart        = "start"
	FResume       = "resume"
	FServiceStart = "service-start"
	FHealAll      = "heal-all"
	FHealthy      = "healthy"
)

// EndsAFault reports whether nemesis event f undoes faults or ends the run rather than being a
// fault.
func EndsAFault(f string) bool {
	switch f {
	case FHeal, FStart, FResume, FServiceStart, FHealAll, FHealthy:
		return true
	}
	return false
}

// Isolation levels as they appear in poll and final-read payloads (kafkaconf's names).
const (
	ReadCommitted   = string(kafkaconf.ReadCommitted)
	ReadUncommitted = string(kafkaconf.ReadUncommitted)
)

// NemesisProcess is the "p" of every fault event.
const NemesisProcess = "nemesis"

// Process is the "p" field: a client instance number, or the nemesis.
// It marshals as a JSON number for clients and as the string "nemesis" for the nemesis.
type Process struct {
	ID      int
	Nemesis bool
}

// Client returns the process of client instance id.
func Client(id int) Process { return Process{ID: id} }

// NemesisP is the process of fault events.
func NemesisP() Process { return Process{Nemesis: true} }

func (p Process) String() string {
	if p.Nemesis {
		return NemesisProcess
	}
	return strconv.Itoa(p.ID)
}

func (p Process) MarshalJSON() ([]byte, error) {
	if p.Nemesis {
		return []byte(`"nemesis"`), nil
	}
	return strconv.AppendInt(nil, int64(p.ID), 10), nil
}

func (p *Process) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s != NemesisProcess {
			return fmt.Errorf("process %q: want an integer or %q", s, NemesisProcess)
		}
		*p = NemesisP()
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return fmt.Errorf("process %s: want an integer or %q", b, NemesisProcess)
	}
	*p = Client(n)
	return nil
}

// Record is one Kafka record as the history sees it. Offset is nil until the broker has
// assigned one (an invoked send); acks=0 sends complete with offset -1 (unknown). Partition
// is NoPartition while it is not known.
type Record struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    *int64 `json:"offset,omitempty"`
	Key       string `json:"key,omitempty"`
	Value     string `json:"value"`
}

// NoPartition is the partition of a record whose partition is not known: a send the client
// places only later (its partitioner runs inside send), or a failure whose error names none.
// Every record states its partition, so that a partition left out is never read as 0.
const NoPartition int32 = -1

// PartitionName names a topic-partition the way Kafka's tools do ("orders-3"), and one whose
// partition is not known so that it cannot be mistaken for a partition ("orders (no partition)").
func PartitionName(topic string, partition int32) string {
	if partition == NoPartition {
		return topic + " (no partition)"
	}
	return topic + "-" + strconv.Itoa(int(partition))
}

// Why a record or final read without its partition is refused: the reader says what to write.
var (
	errRecordNoPartition = errors.New(`a record without "partition": every record states one; write "partition": -1 when it is not known`)
	errScanNoPartition   = errors.New(`a final read without "partition": it states the partition it scanned`)
)

// checkPartition refuses a partition number that is neither a partition nor NoPartition.
func checkPartition(p int32) error {
	if p < NoPartition {
		return fmt.Errorf(`"partition" %d: a partition is 0 or more, or -1 when it is not known`, p)
	}
	return nil
}

// UnmarshalJSON decodes a record with Reader's own decoder, so that encoding/json reads a
// record as Reader does: one without a partition (or with only null) is refused, since 0 is a
// partition, and member names match exactly.
func (r *Record) UnmarshalJSON(b []byte) error {
	d := decoder{buf: b, ints: make([]int64, 1)} // room for the record's offset
	if err := d.whole(d.record(r)); err != nil {
		return err
	}
	return checkPartition(r.Partition)
}

// At returns a copy of r with its offset set.
func (r Record) At(offset int64) Record {
	r.Offset = &offset
	return r
}

// Header is line 1 of history.jsonl.
type Header struct {
	Version int    `json:"verity_history"`
	Started string `json:"started"` // RFC 3339
	Seed    int64  `json:"seed"`
	// Config holds the settings the run's producers and topics ran with (Config's docs); it
	// is read strictly, so a header the checker cannot read fully is an error at line 1.
	Config Config `json:"config,omitzero"`
}

// Op is one event line of history.jsonl. Value holds the payload that matches F; exactly one of
// the typed payload pointers below is set when an Op is built in Go, and the reader fills the one
// that F names.
type Op struct {
	Index   int64   `json:"i"`
	Time    int64   `json:"t"` // nanoseconds since the run started (monotonic)
	Process Process `json:"p"`
	Type    Type    `json:"type"`
	F       string  `json:"f"`
	Of      *int64  `json:"of,omitempty"` // an async completion: the i of its invoke
	Value   Payload `json:"value"`
	Error   string  `json:"error,omitempty"`
}

// Payload is the op's value. Only the field that matches the op's F is set; Raw keeps any
// other payload (nemesis targets, assign/subscribe arguments, crash reasons) as it was written.
//
// A Payload marshals as its one set field, or as null when none is set. It has no UnmarshalJSON
// of its own because the JSON does not say which field it is: Op.UnmarshalJSON and Reader pick the
// typed field that the op's F names ("send" -> Send, "txn" -> Txn, "poll" -> Poll, "final-read" ->
// FinalRead, "rpw" -> RPW) and keep every other f's value in Raw.
type Payload struct {
	Send      *Record    // send
	Txn       *Txn       // txn
	Poll      *Poll      // poll
	FinalRead *FinalRead // final-read
	RPW       *RPW       // rpw
	Raw       json.RawMessage
}

// Txn is the payload of a transactional producer's op. A transaction that reads also holds
// the records its member polled for it (Reads, in the order polled, with their offsets) at its
// consumer's isolation level; their offsets went into the transaction with its records.
type Txn struct {
	TxnID   string   `json:"txn_id"`
	Records []Record `json:"records"`
	Intent  string   `json:"intent"` // "commit" or "abort"
	// Reads are the records the transaction polled; nil for one that only sends.
	Reads []Record `json:"reads,omitempty"`
	// Isolation is the isolation level of Reads; empty takes the header's.
	Isolation string `json:"isolation,omitempty"`
	// EndT is when the client was asked to end the transaction (commit or abort), in
	// nanoseconds since the run started as an event's t; 0 when not recorded.
	EndT int64 `json:"end_t,omitempty"`
}

// Transaction intents.
const (
	IntentCommit = "commit"
	IntentAbort  = "abort"
)

// Poll is the payload of a consumer poll: the records in the order the client returned them.
type Poll struct {
	Isolation string   `json:"isolation"`
	Group     string   `json:"group,omitempty"`
	Records   []Record `json:"records"`
}

// FinalRead is a complete scan of [From, End) of one partition after the faults healed.
// Incomplete marks a scan that did not reach its end before its deadline.
type FinalRead struct {
	Topic      string   `json:"topic"`
	Partition  int32    `json:"partition"`
	Isolation  string   `json:"isolation"`
	From       int64    `json:"from"`
	End        int64    `json:"end"`
	Records    []Record `json:"records"`
	Incomplete bool     `json:"incomplete,omitempty"`
}

// UnmarshalJSON decodes a final read with Reader's own decoder, as Record's does.
func (fr *FinalRead) UnmarshalJSON(b []byte) error {
	d := decoder{buf: b}
	if err := d.whole(d.finalRead(fr)); err != nil {
		return err
	}
	return (&Payload{FinalRead: fr}).checkPartitions()
}

// RPW is one read-process-write step: the input records consumed and the output produced, in
// one transaction.
type RPW struct {
	Input  []Record `json:"input"`
	Output []Record `json:"output"`
	TxnID  string   `json:"txn_id"`
	// EndT is as Txn's.
	EndT int64 `json:"end_t,omitempty"`
}

// Crash is the payload of a crash op: why the instance ended, and which instance it was when
// its process alone does not say (a transactional one's transactional.id; a sink's member, or
// its outbox relay, by the sink's name).
type Crash struct {
	Reason string `json:"reason"`
	TxnID  string `json:"txn_id,omitempty"`
	Sink   string `json:"sink,omitempty"`
	Relay  bool   `json:"relay,omitempty"`
}

// DataLoss is the payload of a data-loss op: a log truncated under a consumer's position, as
// its client reported it.
type DataLoss struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Offset is the consumer's position (the next offset it would have read), Epoch the
	// leader epoch it had read it at.
	Offset int64 `json:"offset"`
	Epoch  int32 `json:"epoch"`
	// ResetTo is where the client resumes: where the leader's log now diverges from what the
	// consumer read, or, when the client could not locate that, the start it was opened with
	// (the oldest offset, or the newest when it starts at the end), at ResetEpoch.
	ResetTo    int64 `json:"reset_to"`
	ResetEpoch int32 `json:"reset_epoch"`
}

// FStrayTxnProduce is the nemesis event of a transactional record written outside any
// transaction its coordinator knows (its completion's Faults.Records hold the record).
const FStrayTxnProduce = "stray-txn-produce"

// Faults is the payload of a nemesis event: the concrete targets it hit.
type Faults struct {
	Nodes []int          `json:"nodes,omitempty"`
	Links [][2]string    `json:"links,omitempty"`
	Toxic map[string]any `json:"toxic,omitempty"`
	Note  string         `json:"note,omitempty"`
	// Records are records the fault itself wrote (stray-txn-produce), with their offsets.
	Records []Record `json:"records,omitempty"`
}

// MarshalJSON encodes the one set field (Raw verbatim but compacted), or null when none is set.
// It is an error to set more than one field, since a reader could only ever see one of them.
func (p Payload) MarshalJSON() ([]byte, error) {
	return appendPayload(nil, "", &p)
}

// UnmarshalJSON decodes one event line's object, including the payload that F selects (see
// Payload). It applies the same checks as Reader to a single line: i, p, type and f are
// required, type must be one of the four Types, and of must name an earlier i.
func (op *Op) UnmarshalJSON(b []byte) error {
	// The payload's type depends on f, which may come after value in the object, so value is
	// kept raw and decoded once the whole object has been read.
	var aux struct {
		Index   *int64          `json:"i"`
		Time    int64           `json:"t"`
		Process *Process        `json:"p"`
		Type    Type            `json:"type"`
		F       string          `json:"f"`
		Of      *int64          `json:"of"`
		Value   json.RawMessage `json:"value"`
		Error   string          `json:"error"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	switch {
	case aux.Index == nil:
		return errors.New(`missing "i"`)
	case aux.Process == nil:
		return errors.New(`missing "p"`)
	case aux.Type == "":
		return errors.New(`missing "type"`)
	case aux.F == "":
		return errors.New(`missing "f"`)
	}
	v, err := unmarshalPayload(aux.F, aux.Value)
	if err != nil {
		return fmt.Errorf("%s value: %w", aux.F, err)
	}
	o := Op{
		Index:   *aux.Index,
		Time:    aux.Time,
		Process: *aux.Process,
		Type:    aux.Type,
		F:       aux.F,
		Of:      aux.Of,
		Value:   v,
		Error:   aux.Error,
	}
	if err := o.check(); err != nil {
		return err
	}
	*op = o
	return nil
}

// unmarshalPayload decodes an op's value with encoding/json into the field that f selects.
func unmarshalPayload(f string, raw json.RawMessage) (Payload, error) {
	var p Payload
	if len(raw) == 0 || string(raw) == "null" {
		return p, nil
	}
	var err error
	switch f {
	case FSend:
		p.Send = new(Record)
		err = json.Unmarshal(raw, p.Send)
	case FTxn:
		p.Txn = new(Txn)
		err = json.Unmarshal(raw, p.Txn)
	case FPoll:
		p.Poll = new(Poll)
		err = json.Unmarshal(raw, p.Poll)
	case FFinalRead:
		p.FinalRead = new(FinalRead)
		err = json.Unmarshal(raw, p.FinalRead)
	case FRPW:
		p.RPW = new(RPW)
		err = json.Unmarshal(raw, p.RPW)
	default:
		// json.RawMessage.UnmarshalJSON already copied the bytes out of the input.
		p.Raw = raw
	}
	if err != nil {
		return Payload{}, err
	}
	return p, nil
}

// validType reports whether t is one of the four event types of the format.
func validType(t Type) bool {
	switch t {
	case Invoke, OK, Fail, Info:
		return true
	}
	return false
}

// check validates what a single op line must satisfy on its own, wherever it comes from (the
// writer, the reader, encoding/json). Order across lines (i strictly increasing) is the
// reader's and writer's business.
func (op *Op) check() error {
	if err := op.checkShape(); err != nil {
		return err
	}
	return op.checkOf()
}

// checkShape is the part of check that does not depend on i, so that the writer can run it
// before it takes its lock and assigns i.
func (op *Op) checkShape() error {
	switch {
	case !validType(op.Type):
		return fmt.Errorf("unknown type %q (want invoke, ok, fail or info)", op.Type)
	case op.F == "":
		return errors.New(`missing "f"`)
	case op.Of != nil && op.Type == Invoke:
		return fmt.Errorf(`"of" on an invoke (of %d)`, *op.Of)
	}
	if err := op.Value.checkPartitions(); err != nil {
		return fmt.Errorf("%s value: %w", op.F, err)
	}
	return nil
}

// checkPartitions checks the partition of every record of the payload, and of a final read.
func (v *Payload) checkPartitions() error {
	switch {
	case v.Send != nil:
		return checkPartition(v.Send.Partition)
	case v.Txn != nil:
		if err := checkRecordPartitions("reads", v.Txn.Reads); err != nil {
			return err
		}
		return checkRecordPartitions("records", v.Txn.Records)
	case v.Poll != nil:
		return checkRecordPartitions("records", v.Poll.Records)
	case v.FinalRead != nil:
		if err := checkPartition(v.FinalRead.Partition); err != nil {
			return err
		}
		return checkRecordPartitions("records", v.FinalRead.Records)
	case v.RPW != nil:
		if err := checkRecordPartitions("input", v.RPW.Input); err != nil {
			return err
		}
		return checkRecordPartitions("output", v.RPW.Output)
	}
	return nil
}

func checkRecordPartitions(list string, rs []Record) error {
	for i := range rs {
		if err := checkPartition(rs[i].Partition); err != nil {
			return fmt.Errorf("%q: record %d: %w", list, i, err)
		}
	}
	return nil
}

// checkOf checks i and that of names an earlier op: a completion cannot precede its invoke.
func (op *Op) checkOf() error {
	switch {
	case op.Index < 0:
		return fmt.Errorf("negative i %d", op.Index)
	case op.Of != nil && (*op.Of < 0 || *op.Of >= op.Index):
		return fmt.Errorf(`"of" %d does not name an earlier op than i %d`, *op.Of, op.Index)
	}
	return nil
}

// Clone returns a deep copy of op that shares no memory with it: what a caller of Reader.Next
// uses to keep an op beyond the next call.
func (op Op) Clone() Op {
	if op.Of != nil {
		of := *op.Of
		op.Of = &of
	}
	v := &op.Value
	if v.Send != nil {
		r := cloneRecord(*v.Send)
		v.Send = &r
	}
	if v.Txn != nil {
		t := *v.Txn
		t.Records = cloneRecords(t.Records)
		t.Reads = cloneRecords(t.Reads)
		v.Txn = &t
	}
	if v.Poll != nil {
		p := *v.Poll
		p.Records = cloneRecords(p.Records)
		v.Poll = &p
	}
	if v.FinalRead != nil {
		fr := *v.FinalRead
		fr.Records = cloneRecords(fr.Records)
		v.FinalRead = &fr
	}
	if v.RPW != nil {
		r := *v.RPW
		r.Input = cloneRecords(r.Input)
		r.Output = cloneRecords(r.Output)
		v.RPW = &r
	}
	if v.Raw != nil {
		v.Raw = append(json.RawMessage{}, v.Raw...)
	}
	return op
}

func cloneRecord(r Record) Record {
	if r.Offset != nil {
		return r.At(*r.Offset)
	}
	return r
}

// cloneRecords keeps nil and empty apart, as encoding/json does (null and []). The offsets get
// one backing array between them rather than an allocation each.
func cloneRecords(rs []Record) []Record {
	if rs == nil {
		return nil
	}
	out := make([]Record, len(rs))
	offs := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r
		if r.Offset != nil {
			offs[i] = *r.Offset
			out[i].Offset = &offs[i]
		}
	}
	return out
}
