package kafkatoxic

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
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
		tx := &Toxic{Request: Request{Key: int16(kmsg.Produce)}, Nth: 2, Action: Drop}
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
	tx := &Toxic{Request: Request{Key: int16(kmsg.EndTxn)}, Nth: 1, Action: Hold}
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
	tx := &Toxic{Request: Request{Key: int16(kmsg.EndTxn)}, Nth: 0, Action: Hold, Delay: 100}
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
	tx := &Toxic{Request: Request{Key: int16(kmsg.Produce)}, Action: Drop}
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
	tx := &Toxic{Request: Request{Key: int16(kmsg.EndTxn)}, Nth: 1, Action: Hold, Delay: 100}
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
		tx := &Toxic{Request: Request{Key: int16(kmsg.EndTxn)}, Nth: 1, Action: DropResponse}
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

func endTxnV(t *testing.T, c int32, version int16, commit bool) []byte {
	r := kmsg.NewPtrEndTxnRequest()
	r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = version, "txn-1", 42, 3, commit
	return frame(t, r, c)
}

// Every version of EndTxn, flexible or not, says which end it asks for.
func TestEndOfEveryEndTxnVersion(t *testing.T) {
	for v := int16(0); v <= kmsg.NewPtrEndTxnRequest().MaxVersion(); v++ {
		for _, commit := range []bool{true, false} {
			want := EndAbort
			if commit {
				want = EndCommit
			}
			if got, ok := endOf(endTxnV(t, 1, v, commit)); !ok || got != want {
				t.Errorf("EndTxn v%d commit=%v: %q, %v", v, commit, got, ok)
			}
		}
	}
	if _, ok := endOf(produce(t, 1)); ok {
		t.Error("a Produce read as an EndTxn")
	}
	if _, ok := endOf(endTxnV(t, 1, 3, true)[:16]); ok {
		t.Error("a torn EndTxn was read")
	}
}

// A hold narrowed to commits lets aborts pass, and a hold that ends on another request lets the
// held one go first, the other after its delay: the held commit overtakes the abort.
func TestHoldUntilAnotherRequestOvertakesIt(t *testing.T) {
	tx := &Toxic{Request: Request{Key: int16(kmsg.EndTxn), End: EndCommit}, Nth: 1, Action: Hold, Delay: 200, Until: &Request{Key: int16(kmsg.EndTxn), End: EndAbort}}
	first, second := start(tx), start(tx)
	first.write(endTxnV(t, 1, 3, true), 4096)
	if got := first.read(30 * time.Millisecond); len(got) != 0 {
		t.Fatalf("the commit went on before the abort came: %v", correlations(t, got))
	}
	second.write(endTxnV(t, 2, 3, true), 4096) // a commit again (a retry): not the nth, passes
	if got := correlations(t, second.read(30*time.Millisecond)); !slices.Equal(got, []int32{2}) {
		t.Fatalf("the retried commit: %v, want it through at once", got)
	}
	second.write(endTxnV(t, 3, 3, false), 4096) // the abort ends the hold
	if got := correlations(t, first.read(50*time.Millisecond)); !slices.Equal(got, []int32{1}) {
		t.Fatalf("after the abort came: %v, want the held commit", got)
	}
	if got := second.read(30 * time.Millisecond); len(got) != 0 {
		t.Fatalf("the abort did not wait its delay: %v", correlations(t, got))
	}
	if got := correlations(t, second.read(400*time.Millisecond)); !slices.Equal(got, []int32{3}) {
		t.Errorf("after the delay: %v, want the abort", got)
	}
	second.write(endTxnV(t, 4, 3, false), 4096) // the trigger fires once
	if got := correlations(t, second.read(30*time.Millisecond)); !slices.Equal(got, []int32{4}) {
		t.Errorf("a later abort: %v, want it through at once", got)
	}
}

// An abort before any commit was held does not end a hold that has not begun.
func TestUntilCountsOnlyAfterTheHold(t *testing.T) {
	tx := &Toxic{Request: Request{Key: int16(kmsg.EndTxn), End: EndCommit}, Nth: 1, Action: Hold, Delay: 200, Until: &Request{Key: int16(kmsg.EndTxn), End: EndAbort}}
	p := start(tx)
	p.write(endTxnV(t, 1, 3, false), 4096)
	if got := correlations(t, p.read(30*time.Millisecond)); !slices.Equal(got, []int32{1}) {
		t.Fatalf("an abort before the hold: %v, want it through at once", got)
	}
	p.write(endTxnV(t, 2, 3, true), 4096)
	if got := p.read(100 * time.Millisecond); len(got) != 0 {
		t.Errorf("the commit was not held: %v", correlations(t, got))
	}
}

func TestParseRequest(t *testing.T) {
	for name, want := range map[string]Request{"EndTxn": {Key: int16(kmsg.EndTxn)}, "EndTxn(commit)": {Key: int16(kmsg.EndTxn), End: EndCommit},
		"EndTxn(abort)": {Key: int16(kmsg.EndTxn), End: EndAbort}, "Produce": {Key: int16(kmsg.Produce)}} {
		if got, err := ParseRequest(name); err != nil || got != want || got.String() != name {
			t.Errorf("ParseRequest(%q) = %+v (%s), %v", name, got, got, err)
		}
	}
	for _, bad := range []string{"Produce(commit)", "EndTxn(commit", "EndTxn(maybe)", "endtxn(abort)"} {
		if _, err := ParseRequest(bad); err == nil {
			t.Errorf("ParseRequest(%q) took it", bad)
		}
	}
}

// The attributes Toxiproxy's API gets are the toxic's own settings, read back the same.
func TestAttributesRoundTrip(t *testing.T) {
	in := &Toxic{Request: Request{Key: int16(kmsg.EndTxn), End: EndCommit}, Nth: 1, Action: Hold, Delay: 1000, Until: &Request{Key: int16(kmsg.EndTxn), End: EndAbort}}
	b, err := json.Marshal(in.Attributes())
	if err != nil {
		t.Fatal(err)
	}
	var out Toxic
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Request != in.Request || out.Nth != 1 || out.Action != Hold || out.Delay != 1000 || out.Until == nil || *out.Until != *in.Until {
		t.Errorf("read back %s nth %d action %q delay %d until %v", out.Request, out.Nth, out.Action, out.Delay, out.Until)
	}
	if _, ok := (&Toxic{Action: Drop}).Attributes()["until"]; ok {
		t.Error("a toxic without Until names one")
	}
}
