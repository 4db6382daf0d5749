package kafkatoxic

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// frame is a real request as a client writes it: franz-go's encoding of req with its header.
func frame(t *testing.T, req kmsg.Request, correlation int32) []byte {
	t.Helper()
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("verity-test")).AppendRequest(nil, req, correlation)
}

func produce(t *testing.T, c int32) []byte {
	r := kmsg.NewPtrProduceRequest()
	r.Version, r.Acks, r.TimeoutMillis = 9, -1, 3000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "t"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = bytes.Repeat([]byte{7}, 300)
	tp.Partitions = append(tp.Partitions, p)
	r.Topics = append(r.Topics, tp)
	return frame(t, r, c)
}

func endTxn(t *testing.T, c int32) []byte {
	r := kmsg.NewPtrEndTxnRequest()
	r.Version, r.TransactionalID, r.Commit = 3, "txn-1", true
	return frame(t, r, c)
}

// correlations lists the correlation ids of the requests in b, in order.
func correlations(t *testing.T, b []byte) []int32 {
	t.Helper()
	var out []int32
	for len(b) > 0 {
		if len(b) < 12 {
			t.Fatalf("a torn request at the end: %x", b)
		}
		size := int(binary.BigEndian.Uint32(b))
		out = append(out, int32(binary.BigEndian.Uint32(b[8:12])))
		b = b[4+size:]
	}
	return out
}

// pipe runs the toxic on one connection, fed stream in chunks of chunk bytes; it returns what
// came out by the time quiet passed without output, and the stub.
type pipe struct {
	in   chan *stream.StreamChunk
	out  chan *stream.StreamChunk
	stub *toxics.ToxicStub
	done chan struct{}
}

func start(tx *Toxic) *pipe {
	p := &pipe{in: make(chan *stream.StreamChunk), out: make(chan *stream.StreamChunk, 100), done: make(chan struct{})}
	p.stub = toxics.NewToxicStub(p.in, p.out)
	p.stub.State = tx.NewState()
	go func() { defer close(p.done); tx.Pipe(p.stub) }()
	return p
}

func (p *pipe) write(b []byte, chunk int) {
	for len(b) > 0 {
		n := min(chunk, len(b))
		p.in <- &stream.StreamChunk{Data: bytes.Clone(b[:n]), Timestamp: time.Now()}
		b = b[n:]
	}
}

// read collects the output until nothing came for quiet.
func (p *pipe) read(quiet time.Duration) []byte {
	var got []byte
	for {
		select {
		case c := <-p.out:
			got = append(got, c.Data...)
		case <-time.After(quiet):
			return got
		}
	}
}

func TestDropsTheNthRequestOfItsKey(t *testing.T) {
	for _, chunk := range []int{1, 7, 4096} { // a request split over reads, or several in one
		tx := &Toxic{APIKey: int16(kmsg.Produce), Nth: 2, Action: Drop}
		p := start(tx)
		var all []byte
		for c := int32(1); c <= 4; c++ {
			all = append(all, produce(t, c)...)
			all = append(all, endTxn(t, 100+c)...)
		}
		p.write(all, chunk)
		got := correlations(t, p.read(50*time.Millisecond))
		want := []int32{1, 101, 102, 3, 103, 4, 104} // the second Produce (correlation 2) dropped
		if !slices.Equal(got, want) {
			t.Errorf("chunks of %d: requests %v, want %v", chunk, got, want)
		}
		if tx.Hits() != 1 {
			t.Errorf("chunks of %d: %d hits", chunk, tx.Hits())
		}
	}
}

func TestHoldsUntilRemovedAndKeepsTheOrder(t *testing.T) {
	tx := &Toxic{APIKey: int16(kmsg.EndTxn), Nth: 1, Action: Hold}
	p := start(tx)
	p.write(append(append(produce(t, 1), endTxn(t, 2)...), produce(t, 3)...), 4096)
	if got := correlations(t, p.read(50*time.Millisecond)); !slices.Equal(got, []int32{1}) {
		t.Fatalf("before the heal: %v, want the Produce before the held EndTxn only", got)
	}
	// Removing the toxic: Toxiproxy interrupts it, then calls Cleanup.
	p.stub.Interrupt <- struct{}{}
	<-p.done
	tx.Cleanup(p.stub)
	if got := correlations(t, p.read(50*time.Millisecond)); !slices.Equal(got, []int32{2, 3}) {
		t.Errorf("after the heal: %v, want the held EndTxn, then what followed it", got)
	}
}

func TestHoldEndsAfterItsDelay(t *testing.T) {
	tx := &Toxic{APIKey: int16(kmsg.EndTxn), Nth: 0, Action: Hold, Delay: 100}
	p := start(tx)
	p.write(endTxn(t, 1), 4096)
	if got := p.read(30 * time.Millisecond); len(got) != 0 {
		t.Fatalf("released early: %v", correlations(t, got))
	}
	if got := correlations(t, p.read(300*time.Millisecond)); !slices.Equal(got, []int32{1}) {
		t.Errorf("after the delay: %v", got)
	}
}

// Bytes that are not Kafka's framing (a TLS record: 0x16 0x03 …) pass untouched.
func TestOtherBytesPass(t *testing.T) {
	tx := &Toxic{APIKey: int16(kmsg.Produce), Action: Drop}
	p := start(tx)
	tls := append([]byte{0x16, 0x03, 0x01, 0x02, 0x00}, bytes.Repeat([]byte{1}, 600)...)
	p.write(tls, 100)
	if got := p.read(50 * time.Millisecond); !bytes.Equal(got, tls) {
		t.Errorf("%d bytes out of %d", len(got), len(tls))
	}
}

// A client that gives up and closes its connection does not take the held request with it: it
// reaches the broker when the hold ends, and then the connection closes.
func TestHeldRequestOutlivesItsClient(t *testing.T) {
	tx := &Toxic{APIKey: int16(kmsg.EndTxn), Nth: 1, Action: Hold, Delay: 100}
	p := start(tx)
	p.write(endTxn(t, 7), 4096)
	close(p.in)
	if got := p.read(30 * time.Millisecond); len(got) != 0 {
		t.Fatalf("released early: %v", correlations(t, got))
	}
	<-p.done
	var got []byte
	for c := range p.out { // closed once the held request is out
		got = append(got, c.Data...)
	}
	if ids := correlations(t, got); !slices.Equal(ids, []int32{7}) {
		t.Errorf("after the client left: %v", ids)
	}
}

// drop-response lets the aimed-at request through whole and closes the connection right after
// it: the bytes behind it on the connection never go, and the output is closed.
func TestDropResponseClosesBehindTheRequest(t *testing.T) {
	for _, chunk := range []int{1, 4096} {
		tx := &Toxic{APIKey: int16(kmsg.EndTxn), Nth: 1, Action: DropResponse}
		p := start(tx)
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			p.write(append(append(produce(t, 1), endTxn(t, 2)...), produce(t, 3)...), chunk)
		}()
		<-p.done
		for drained := false; !drained; { // what the client still writes goes nowhere
			select {
			case <-p.in:
			case <-wrote:
				drained = true
			}
		}
		var got []byte
		for c := range p.out { // closed by the toxic
			got = append(got, c.Data...)
		}
		if ids := correlations(t, got); !slices.Equal(ids, []int32{1, 2}) {
			t.Errorf("chunks of %d: %v, want the Produce and the EndTxn, nothing after", chunk, ids)
		}
		if tx.Hits() != 1 {
			t.Errorf("chunks of %d: %d hits", chunk, tx.Hits())
		}
	}
}

func TestParseAPI(t *testing.T) {
	for name, key := range map[string]kmsg.Key{"Produce": kmsg.Produce, "EndTxn": kmsg.EndTxn, "WriteTxnMarkers": kmsg.WriteTxnMarkers,
		"AddPartitionsToTxn": kmsg.AddPartitionsToTxn, "TxnOffsetCommit": kmsg.TxnOffsetCommit, "Fetch": kmsg.Fetch} {
		if k, err := ParseAPI(name); err != nil || k != int16(key) {
			t.Errorf("ParseAPI(%q) = %d, %v; want %d", name, k, err, key)
		}
	}
	if _, err := ParseAPI("endtxn"); err == nil {
		t.Error("a misspelt API was taken")
	}
}
