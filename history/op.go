// Package history is the op model of a Verity run and its JSONL file format (history.jsonl),
// as fixed in shared/design/history.md. It imports nothing else of Verity's: the workloads write
// it, the checkers read it, and other tools may read the file it describes.
package history

import (
	"encoding/json"
	"fmt"
	"strconv"
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
)

// Isolation levels as they appear in poll and final-read payloads.
const (
	ReadCommitted   = "read_committed"
	ReadUncommitted = "read_uncommitted"
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
// assigned one (an invoked send); acks=0 sends complete with offset -1 (unknown).
type Record struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    *int64 `json:"offset,omitempty"`
	Key       string `json:"key,omitempty"`
	Value     string `json:"value"`
}

// At returns a copy of r with its offset set.
func (r Record) At(offset int64) Record {
	r.Offset = &offset
	return r
}

// Header is line 1 of history.jsonl.
type Header struct {
	Version int             `json:"verity_history"`
	Started string          `json:"started"` // RFC 3339
	Seed    int64           `json:"seed"`
	Config  json.RawMessage `json:"config,omitempty"` // the resolved scenario
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
type Payload struct {
	Send      *Record    // send
	Txn       *Txn       // txn
	Poll      *Poll      // poll
	FinalRead *FinalRead // final-read
	RPW       *RPW       // rpw
	Raw       json.RawMessage
}

// Txn is the payload of a transactional producer's op.
type Txn struct {
	TxnID   string   `json:"txn_id"`
	Records []Record `json:"records"`
	Intent  string   `json:"intent"` // "commit" or "abort"
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

// RPW is one read-process-write step: the input records consumed and the output produced, in
// one transaction.
type RPW struct {
	Input  []Record `json:"input"`
	Output []Record `json:"output"`
	TxnID  string   `json:"txn_id"`
}

// Faults is the payload of a nemesis event: the concrete targets it hit.
type Faults struct {
	Nodes []int          `json:"nodes,omitempty"`
	Links [][2]string    `json:"links,omitempty"`
	Toxic map[string]any `json:"toxic,omitempty"`
	Note  string         `json:"note,omitempty"`
}
