// Package kafkatoxic is a Toxiproxy toxic that understands Kafka's framing: on the stream from
// client to broker it counts the requests of one API key and drops, or holds, the N-th of them.
//
// Toxiproxy's own toxics move bytes: latency, bandwidth, a cut. Some of Kafka's bugs need one
// *request* held while a later one, on another connection, overtakes it — an EndTxn delayed past
// the client's timeout and applied after the next transaction began (KAFKA-17754) — which no
// byte-level toxic can aim at. This toxic reads each request's size and API key (every Kafka
// request starts with int32 size, int16 api_key, int16 api_version, int32 correlation_id) and
// acts on whole requests; everything else passes unchanged, in order.
//
// It runs inside Verity's Toxiproxy stand-in (cmd/verity-toxiproxy), registered as Type. The
// official Toxiproxy image does not have it.
//
// It imports nothing of Verity's.
package kafkatoxic

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Type is the toxic's name in Toxiproxy's API.
const Type = "kafka_request"

// Actions on the matching request.
const (
	// Drop discards the request: the broker never sees it, and the client waits for an answer
	// that does not come (its request timeout).
	Drop = "drop"
	// Hold keeps the request, and everything after it on its connection (a TCP stream keeps
	// its order), until Delay has passed or the toxic is removed; then sends them on.
	Hold = "hold"
	// DropResponse lets the request through and closes the connection right behind it: the
	// broker reads and carries out the request (its bytes arrive before the close), and its
	// answer has no connection to go back on. The client learns nothing of the outcome. A
	// response carries no API key, so it is the request that is aimed at.
	DropResponse = "drop-response"
)

// maxFrame bounds a request's size: a larger one means the stream is not Kafka's plaintext
// protocol (TLS, SASL handshake bytes), which then passes untouched.
const maxFrame = 100 << 20

// Toxic acts on the Nth request that its Request names among those of every connection of its
// proxy's stream (counted from 1, in the order they complete; 0: every one). Its attributes are
// what Toxiproxy's API takes as JSON.
type Toxic struct {
	Request
	Nth    int    `json:"nth"`
	Action string `json:"action"`
	// Delay, in milliseconds, ends a hold; 0 holds until the toxic is removed. With Until it is
	// how long the request that ended the hold waits instead.
	Delay int64 `json:"delay"`
	// Until ends a hold of the Nth request when a request it names crosses another connection
	// of the proxy after it: what was held goes on at once, and that request waits Delay on its
	// own connection, so that the held one reaches the broker first. A request overtakes its
	// successor, as when a client's retry and next request go over new connections while the
	// first attempt is still in the network (KAFKA-17754).
	Until *Request `json:"until,omitempty"`

	mu      sync.Mutex
	seen    int
	hits    int
	fired   bool
	trigger chan struct{} // closed when the Until request came
}

// Attributes are t's settings as Toxiproxy's API takes them.
func (t *Toxic) Attributes() map[string]any {
	b, _ := json.Marshal(t) // numbers and strings: it cannot fail
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// Register adds the toxic to Toxiproxy's registry.
func Register() { toxics.Register(Type, new(Toxic)) }

// connState is one connection's: the bytes of a request not yet complete, and what is held.
type connState struct {
	buf         []byte
	held        []byte
	holding     bool
	release     *time.Timer // ends a hold with a delay; nil: held until removed
	onUntil     bool        // the hold ends when the Until request comes, not by a delay
	passthrough bool
	eof         bool // the client closed its side while a request was held
}

// NewState gives each connection its own buffer (toxics.StatefulToxic).
func (t *Toxic) NewState() any { return new(connState) }

// Hits is how many requests the toxic has acted on.
func (t *Toxic) Hits() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hits
}

// matches counts a request (got, as requestOf reads it) that the toxic names and says whether
// to act on it.
func (t *Toxic) matches(got Request) bool {
	if !t.Request.names(got) || (t.Action != Drop && t.Action != Hold && t.Action != DropResponse) {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen++
	if t.Nth == 0 || t.seen == t.Nth {
		t.hits++
		return true
	}
	return false
}

// triggers says whether got ends the hold (Until): the first request Until names after a hold
// began.
func (t *Toxic) triggers(got Request) bool {
	if t.Until == nil || t.Action != Hold || !t.Until.names(got) {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hits == 0 || t.fired {
		return false
	}
	t.fired = true
	close(t.triggerC())
	return true
}

// triggerC is closed when the Until request comes; t.mu held.
func (t *Toxic) triggerC() chan struct{} {
	if t.trigger == nil {
		t.trigger = make(chan struct{})
	}
	return t.trigger
}

// untilC is what a hold that ends on Until waits for; nil for any other hold.
func (t *Toxic) untilC(st *connState) <-chan struct{} {
	if !st.holding || !st.onUntil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.triggerC()
}

// Pipe moves whole requests from the stub's input to its output, acting on the matching one.
// Toxiproxy interrupts it when the toxic chain changes; the connection's state outlives it.
func (t *Toxic) Pipe(stub *toxics.ToxicStub) {
	st, ok := stub.State.(*connState)
	if !ok {
		st = new(connState)
		stub.State = st
	}
	for {
		var release <-chan time.Time
		if st.holding && st.release != nil {
			release = st.release.C
		}
		input := stub.Input
		if st.eof {
			input = nil
		}
		select {
		case <-stub.Interrupt:
			return
		case <-t.untilC(st):
			if !t.release(stub, st) {
				return
			}
			if st.eof {
				stub.Close()
				return
			}
		case <-release:
			if !t.release(stub, st) {
				return
			}
			if st.eof {
				stub.Close()
				return
			}
		case c := <-input:
			switch {
			case c == nil && st.holding:
				// The client went away (it gave up waiting): what is held still goes to
				// the broker when the hold ends, as a request delayed in the network would.
				st.eof = true
			case c == nil:
				stub.Close()
				return
			case !t.take(stub, st, c):
				return
			}
		}
	}
}

// take adds a chunk to the connection's bytes and sends on every whole request it completes;
// false when the output is closed.
func (t *Toxic) take(stub *toxics.ToxicStub, st *connState, c *stream.StreamChunk) bool {
	if st.passthrough {
		return send(stub, c.Data, c.Timestamp)
	}
	st.buf = append(st.buf, c.Data...)
	for len(st.buf) >= 6 {
		size := int64(int32(binary.BigEndian.Uint32(st.buf)))
		if size < 2 || size > maxFrame {
			st.passthrough = true
			rest := st.buf
			st.buf = nil
			if st.holding {
				st.held = append(st.held, rest...)
				return true
			}
			return send(stub, rest, c.Timestamp)
		}
		if int64(len(st.buf)) < 4+size {
			return true // the rest of the request is still to come
		}
		frame := bytes.Clone(st.buf[:4+size])
		st.buf = st.buf[4+size:]
		if st.holding {
			st.held = append(st.held, frame...)
			continue
		}
		got := requestOf(frame)
		switch {
		case t.triggers(got):
			if t.Delay <= 0 {
				if !send(stub, frame, c.Timestamp) {
					return false
				}
				continue
			}
			st.holding, st.held = true, frame
			st.release = time.NewTimer(time.Duration(t.Delay) * time.Millisecond)
		case !t.matches(got):
			if !send(stub, frame, c.Timestamp) {
				return false
			}
		case t.Action == Drop:
		case t.Action == DropResponse:
			send(stub, frame, c.Timestamp)
			stub.Close()
			return false
		case t.Action == Hold && t.Until != nil:
			st.holding, st.held, st.onUntil = true, frame, true
		case t.Action == Hold:
			st.holding, st.held = true, frame
			if t.Delay > 0 {
				st.release = time.NewTimer(time.Duration(t.Delay) * time.Millisecond)
			}
		}
	}
	return true
}

// release sends on what the connection held; false when the output is closed.
func (t *Toxic) release(stub *toxics.ToxicStub, st *connState) bool {
	held := st.held
	if st.release != nil {
		st.release.Stop()
	}
	st.holding, st.held, st.release, st.onUntil = false, nil, nil, false
	if len(held) == 0 {
		return true
	}
	return send(stub, held, time.Now())
}

// Cleanup releases what is held when the toxic is removed (a heal): the held requests reach
// the broker then, late.
func (t *Toxic) Cleanup(stub *toxics.ToxicStub) {
	st, ok := stub.State.(*connState)
	if !ok {
		return
	}
	t.release(stub, st)
	if len(st.buf) > 0 {
		send(stub, st.buf, time.Now())
		st.buf = nil
	}
}

// send writes data as one chunk; false when the output no longer takes it.
func send(stub *toxics.ToxicStub, data []byte, at time.Time) bool {
	return stub.WriteOutput(&stream.StreamChunk{Data: data, Timestamp: at}, 5*time.Second) == nil
}

// End is which end of a transaction an EndTxn request asks for.
type End string

// Ends of a transaction; "" is either.
const (
	EndCommit End = "commit"
	EndAbort  End = "abort"
)

// Request names requests: an API key and, for EndTxn, which end ("": either).
type Request struct {
	Key int16 `json:"api_key"`
	End End   `json:"end,omitempty"`
}

// names says whether r names got, a request as requestOf read it.
func (r Request) names(got Request) bool {
	return r.Key == got.Key && (r.End == "" || r.End == got.End)
}

// String is the request's name as ParseRequest reads it.
func (r Request) String() string {
	if r.End != "" {
		return fmt.Sprintf("%s(%s)", kmsg.NameForKey(r.Key), r.End)
	}
	return kmsg.NameForKey(r.Key)
}

// ParseRequest reads a request's name: a Kafka API as ParseAPI reads it, or EndTxn(commit) or
// EndTxn(abort) for one end of a transaction.
func ParseRequest(name string) (Request, error) {
	api, end, narrowed := strings.Cut(name, "(")
	k, err := ParseAPI(api)
	if err != nil || !narrowed {
		return Request{Key: k}, err
	}
	e := End(strings.TrimSuffix(end, ")"))
	if k != int16(kmsg.EndTxn) || !strings.HasSuffix(end, ")") || (e != EndCommit && e != EndAbort) {
		return Request{}, fmt.Errorf("Kafka request %q: only EndTxn is narrowed, to EndTxn(commit) or EndTxn(abort)", name)
	}
	return Request{Key: k, End: e}, nil
}

// requestOf reads a whole request (with its size): its API key and, for an EndTxn it can read,
// its end.
func requestOf(frame []byte) Request {
	r := Request{Key: int16(binary.BigEndian.Uint16(frame[4:6]))}
	if r.Key == int16(kmsg.EndTxn) {
		r.End, _ = endOf(frame)
	}
	return r
}

// endOf reads which end an EndTxn request asks for: its header (key, version, correlation id,
// client id, and tagged fields from the flexible versions on), then its body.
func endOf(frame []byte) (End, bool) {
	if len(frame) < 14 || int16(binary.BigEndian.Uint16(frame[4:6])) != int16(kmsg.EndTxn) {
		return "", false
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = int16(binary.BigEndian.Uint16(frame[6:8]))
	b := frame[12:]
	if n := int(int16(binary.BigEndian.Uint16(b))); n > 0 {
		if len(b) < 2+n {
			return "", false
		}
		b = b[2+n:]
	} else {
		b = b[2:]
	}
	if req.IsFlexible() {
		tags, n := binary.Uvarint(b)
		if n <= 0 {
			return "", false
		}
		b = b[n:]
		for range tags {
			_, n := binary.Uvarint(b)
			if n <= 0 {
				return "", false
			}
			b = b[n:]
			size, m := binary.Uvarint(b)
			if m <= 0 || uint64(len(b)-m) < size {
				return "", false
			}
			b = b[m+int(size):]
		}
	}
	if err := req.ReadFrom(b); err != nil {
		return "", false
	}
	if req.Commit {
		return EndCommit, true
	}
	return EndAbort, true
}

// ParseAPI reads a Kafka API's name as Kafka's protocol spells it ("Produce", "EndTxn",
// "AddPartitionsToTxn", …) and gives its key.
func ParseAPI(name string) (int16, error) {
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		if n := kmsg.NameForKey(k); n != "" && n == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("Kafka API %q: want a request's name as Kafka spells it (Produce, Fetch, EndTxn, AddPartitionsToTxn, TxnOffsetCommit, WriteTxnMarkers, …)", name)
}
