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
	"fmt"
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

// Toxic acts on the Nth request with API key APIKey among those of every connection of its
// proxy's stream (counted from 1, in the order they complete; 0: every one). Its attributes
// are what Toxiproxy's API takes as JSON.
type Toxic struct {
	APIKey int16  `json:"api_key"`
	Nth    int    `json:"nth"`
	Action string `json:"action"`
	// Delay, in milliseconds, ends a hold; 0 holds until the toxic is removed.
	Delay int64 `json:"delay"`

	mu   sync.Mutex
	seen int
	hits int
}

// Register adds the toxic to Toxiproxy's registry.
func Register() { toxics.Register(Type, new(Toxic)) }

// connState is one connection's: the bytes of a request not yet complete, and what is held.
type connState struct {
	buf         []byte
	held        []byte
	holding     bool
	release     *time.Timer // ends a hold with a delay; nil: held until removed
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

// matches counts a request of the toxic's API key and says whether to act on it.
func (t *Toxic) matches(apiKey int16) bool {
	if apiKey != t.APIKey || (t.Action != Drop && t.Action != Hold && t.Action != DropResponse) {
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
		switch {
		case st.holding:
			st.held = append(st.held, frame...)
		case !t.matches(int16(binary.BigEndian.Uint16(frame[4:6]))):
			if !send(stub, frame, c.Timestamp) {
				return false
			}
		case t.Action == Drop:
		case t.Action == DropResponse:
			send(stub, frame, c.Timestamp)
			stub.Close()
			return false
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
	st.holding, st.held, st.release = false, nil, nil
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
