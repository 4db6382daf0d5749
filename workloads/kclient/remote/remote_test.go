package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify/results/schematest"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// fake is a kclient.Client of pure logic: what the program side hands it, it answers from
// scripts, and it remembers what it was told.
type fake struct {
	mu       sync.Mutex
	hello    HelloArgs
	closed   []string
	recorded []history.Record
	sought   []map[string]map[int32]int64
	offsets  []history.Record
	rewound  []history.Type
	specs    []any
}

var code19 = int16(19)

func (f *fake) note(s string) {
	f.mu.Lock()
	f.closed = append(f.closed, s)
	f.mu.Unlock()
}

func (f *fake) Name() kafkaconf.ClientName { return "fake" }
func (f *fake) Partitions(_ context.Context, _ string, topics []string) (map[string][]int32, error) {
	if slices := topics; len(slices) == 1 && slices[0] == "missing" {
		return nil, errors.New("topic missing: no partitions known yet")
	}
	out := map[string][]int32{}
	for _, t := range topics {
		out[t] = []int32{0, 1, 2}
	}
	return out, nil
}
func (f *fake) TxnProtocol(context.Context) (kafkaconf.TxnProtocol, error) {
	return kafkaconf.TxnProtocolV2, nil
}

func (f *fake) OpenProducer(_ context.Context, s kclient.ProducerSpec) (kclient.Producer, map[string][]int32, []string, error) {
	f.mu.Lock()
	f.specs = append(f.specs, s)
	f.mu.Unlock()
	if s.Compression == "bogus" {
		return nil, nil, nil, &kclient.PermanentError{Err: errors.New("compression bogus refused")}
	}
	return &fakeProducer{f: f, ready: make(chan struct{}, 1)}, map[string][]int32{"t": {0, 1}}, []string{"linger ignored"}, nil
}

// fakeProducer acknowledges values that start with "ok" at offsets 0, 1, …; refuses the others
// with NOT_ENOUGH_REPLICAS.
type fakeProducer struct {
	f       *fake
	mu      sync.Mutex
	pending []kclient.Answer
	next    int64
	ready   chan struct{}
}

func (p *fakeProducer) Hand(_ context.Context, s kclient.Send) bool {
	p.mu.Lock()
	a := kclient.Answer{Tag: s.Tag, Partition: s.Record.Partition}
	if strings.HasPrefix(s.Record.Value, "ok") {
		a.Offset, a.Outcome = p.next, kclient.Outcome{Type: history.OK}
		p.next++
	} else {
		a.Offset = -1
		a.Err = &kclient.Error{Name: "NOT_ENOUGH_REPLICAS", Code: &code19, Text: "kafka server: NOT_ENOUGH_REPLICAS: refused"}
		a.Outcome = kclient.Outcome{Type: history.Fail, Rule: "NOT_ENOUGH_REPLICAS", Why: "refused before the append"}
	}
	p.pending = append(p.pending, a)
	p.mu.Unlock()
	select {
	case p.ready <- struct{}{}:
	default:
	}
	return true
}
func (p *fakeProducer) Ready() <-chan struct{} { return p.ready }
func (p *fakeProducer) Take(buf []kclient.Answer) []kclient.Answer {
	p.mu.Lock()
	defer p.mu.Unlock()
	buf = append(buf, p.pending...)
	p.pending = nil
	return buf
}
func (p *fakeProducer) Retries() int64 { return 3 }
func (p *fakeProducer) Close()         { p.f.note("producer") }

func (f *fake) OpenTxn(_ context.Context, s kclient.TxnSpec) (kclient.Txn, error) {
	f.mu.Lock()
	f.specs = append(f.specs, s)
	f.mu.Unlock()
	return &fakeTxn{f: f}, nil
}

// fakeTxn acknowledges records until one whose value is "fail", then fails with that error;
// its commit fails (not sent) after a failed send, and is ok otherwise.
type fakeTxn struct {
	f      *fake
	failed bool
}

func (t *fakeTxn) Begin() error { t.failed = false; return nil }
func (t *fakeTxn) Send(recs []history.Record, _ time.Time) error {
	for i := range recs {
		if recs[i].Value == "fail" {
			t.failed = true
			return errors.New("record failed")
		}
		recs[i] = recs[i].At(int64(100 + i))
	}
	return nil
}
func (t *fakeTxn) Commit() (history.Type, string) {
	if t.failed {
		return history.Fail, kclient.TxnNotSent + "a record failed"
	}
	return history.OK, ""
}
func (t *fakeTxn) Abort() error          { return nil }
func (t *fakeTxn) Ready() (bool, string) { return !t.failed, "after a failed send" }
func (t *fakeTxn) Close()                { t.f.note("txn") }

func (f *fake) OpenConsumer(_ context.Context, s kclient.ConsumerSpec) (kclient.Consumer, error) {
	f.mu.Lock()
	f.specs = append(f.specs, s)
	f.mu.Unlock()
	return &fakeConsumer{f: f}, nil
}

// fakeConsumer returns an assignment, two records and a truncation, then nothing.
type fakeConsumer struct {
	f     *fake
	polls int
}

func (c *fakeConsumer) Poll(ctx context.Context, wait time.Duration, max int) []kclient.Event {
	c.polls++
	if c.polls > 1 {
		return nil
	}
	return []kclient.Event{
		{Kind: kclient.EventAssigned, Claims: kclient.Claims{Generation: 4, Member: "m", Partitions: map[string][]int32{"t": {0}}}},
		{Kind: kclient.EventRecord, Record: history.Record{Topic: "t", Value: "1-1"}.At(7), Epoch: 2, Handle: "client's own 1"},
		{Kind: kclient.EventRecord, Record: history.Record{Topic: "t", Value: "1-2", Key: "k"}.At(8), Epoch: 2, Handle: "client's own 2"},
		{Kind: kclient.EventDataLoss, Loss: kclient.Loss{Topic: "t", Offset: 9, Epoch: 2, ResetTo: 5, ResetEpoch: 3}},
	}
}
func (c *fakeConsumer) Recorded(recs []kclient.Event) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	for _, ev := range recs {
		if ev.Handle == nil {
			panic("recorded without the client's handle")
		}
		c.f.recorded = append(c.f.recorded, ev.Record)
	}
}
func (c *fakeConsumer) Seek(_ context.Context, at map[string]map[int32]int64) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if _, ok := at["gone"]; ok {
		return errors.New("topic gone is not subscribed")
	}
	c.f.sought = append(c.f.sought, at)
	return nil
}
func (c *fakeConsumer) Close() { c.f.note("consumer") }

func (f *fake) OpenMember(_ context.Context, s kclient.MemberSpec) (kclient.Member, error) {
	return &fakeMember{fakeTxn: fakeTxn{f: f}}, nil
}

type fakeMember struct{ fakeTxn }

// Poll: a poll of 99 records finds the client closed.
func (m *fakeMember) Poll(ctx context.Context, max int, until time.Time) ([]kclient.Event, error) {
	if max == 99 {
		return nil, &kclient.ReplaceError{Reason: "the client closed"}
	}
	return []kclient.Event{{Kind: kclient.EventRevoked},
		{Kind: kclient.EventRecord, Record: history.Record{Topic: "in", Partition: 1, Value: "0-1"}.At(3), Epoch: -1}}, nil
}
func (m *fakeMember) AddOffsets(in []history.Record) error {
	m.f.mu.Lock()
	m.f.offsets = append(m.f.offsets, in...)
	m.f.mu.Unlock()
	return nil
}
func (m *fakeMember) Rewind(t history.Type) error {
	m.f.mu.Lock()
	m.f.rewound = append(m.f.rewound, t)
	m.f.mu.Unlock()
	return nil
}
func (m *fakeMember) Close() { m.f.note("member") }

// tee keeps every line written through it, for the schema.
type tee struct {
	w     io.WriteCloser
	mu    sync.Mutex
	lines bytes.Buffer
}

func (t *tee) Write(b []byte) (int, error) {
	t.mu.Lock()
	t.lines.Write(b)
	t.mu.Unlock()
	return t.w.Write(b)
}
func (t *tee) Close() error { return t.w.Close() }

// pair connects a Client to Serve over pipes, with f behind the server. The returned func
// closes the client and waits for Serve to return.
func pair(t *testing.T, f *fake) (*Client, *tee, *tee, func()) {
	t.Helper()
	toProg, fromVerity := io.Pipe()
	toVerity, fromProg := io.Pipe()
	reqs, msgs := &tee{w: fromVerity}, &tee{w: fromProg}
	served := make(chan error, 1)
	go func() {
		served <- Serve(context.Background(), toProg, msgs, ClientInfo{Name: "fake", Library: "fake.example/kafka", Version: "1.0"},
			func(h HelloArgs) (kclient.Client, error) { f.hello = h; return f, nil }, nil)
		_ = fromProg.Close()
	}()
	c, err := Dial(t.Context(), toVerity, reqs, HelloArgs{Brokers: []string{"b1:9092"}, TxnProtocolCap: kafkaconf.TxnProtocolV1}, nil)
	require.NoError(t, err)
	return c, reqs, msgs, func() {
		require.NoError(t, c.Close())
		select {
		case err := <-served:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return within 10 s of its input's end")
		}
	}
}

// Every request and its answer make the round trip with their meaning: partitions, warnings,
// tags, outcomes with Kafka's error names and codes, acknowledged records, commit outcomes,
// poll events with handles that reach the client's own records, a member's events and
// offsets, an instance that must be replaced; and every line on both sides is a message the
// schema accepts.
func TestRoundTrip(t *testing.T) {
	f := &fake{}
	c, reqs, msgs, stop := pair(t, f)
	ctx := t.Context()
	require.Equal(t, kafkaconf.ClientName("fake"), c.Name())
	require.Equal(t, HelloArgs{Versions: []int{1}, Brokers: []string{"b1:9092"}, TxnProtocolCap: kafkaconf.TxnProtocolV1}, f.hello)

	parts, err := c.Partitions(ctx, "id", []string{"a", "b"})
	require.NoError(t, err)
	require.Equal(t, map[string][]int32{"a": {0, 1, 2}, "b": {0, 1, 2}}, parts)
	_, err = c.Partitions(ctx, "id", []string{"missing"})
	require.ErrorContains(t, err, "no partitions known yet")
	p, err := c.TxnProtocol(ctx)
	require.NoError(t, err)
	require.Equal(t, kafkaconf.TxnProtocolV2, p)

	spec := kclient.ProducerSpec{ClientID: "verity-producer-p1", Settings: kafkaconf.Producer{Acks: kafkaconf.AcksAll, Idempotent: true,
		MaxInFlight: 5, Retries: 7}, RetryBackoff: 100 * time.Millisecond, RequestTimeout: 10 * time.Second, DeliveryTimeout: 30 * time.Second,
		Linger: 5 * time.Millisecond, Compression: kafkaconf.CompressionZstd, Topics: []string{"t"}}
	prod, pparts, warns, err := c.OpenProducer(ctx, spec)
	require.NoError(t, err)
	require.Equal(t, map[string][]int32{"t": {0, 1}}, pparts)
	require.Equal(t, []string{"linger ignored"}, warns)
	got := f.specs[0].(kclient.ProducerSpec)
	got.Log = nil // the program's own
	require.Equal(t, spec, got, "the spec crosses the wire whole")
	type tag struct{ n int }
	tags := []*tag{{1}, {2}, {3}}
	for i, v := range []string{"ok-1", "no-2", "ok-3"} {
		require.True(t, prod.Hand(ctx, kclient.Send{Record: history.Record{Topic: "t", Partition: 1, Value: v}, Tag: tags[i]}))
	}
	var as []kclient.Answer
	for len(as) < 3 {
		select {
		case <-prod.Ready():
			as = prod.Take(as)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of 3 answers", len(as))
		}
	}
	byTag := map[*tag]kclient.Answer{}
	for _, a := range as {
		byTag[a.Tag.(*tag)] = a
	}
	require.Equal(t, history.OK, byTag[tags[0]].Outcome.Type)
	require.Equal(t, int64(0), byTag[tags[0]].Offset)
	require.Equal(t, int64(1), byTag[tags[2]].Offset)
	refused := byTag[tags[1]]
	require.Equal(t, kclient.Outcome{Type: history.Fail, Rule: "NOT_ENOUGH_REPLICAS", Why: "refused before the append"}, refused.Outcome)
	var ke *kclient.Error
	require.ErrorAs(t, refused.Err, &ke)
	require.Equal(t, "NOT_ENOUGH_REPLICAS", ke.Name)
	require.Equal(t, int16(19), *ke.Code)
	require.Equal(t, int64(3), prod.Retries())
	prod.Close()

	bogus := spec
	bogus.Compression = "bogus"
	_, _, _, err = c.OpenProducer(ctx, bogus)
	require.True(t, kclient.IsPermanent(err), "a refused configuration stays permanent: %v", err)

	txnSpec := kclient.TxnSpec{ClientID: "c", TxnID: "x", Timeout: 30 * time.Second, RequestTimeout: 10 * time.Second,
		Settings: kafkaconf.Producer{Acks: kafkaconf.AcksAll, Idempotent: true, MaxInFlight: 5, Retries: 3}}
	tx, err := c.OpenTxn(ctx, txnSpec)
	require.NoError(t, err)
	require.NoError(t, tx.Begin())
	recs := []history.Record{{Topic: "a", Value: "1"}, {Topic: "b", Partition: 2, Value: "2"}}
	require.NoError(t, tx.Send(recs, time.Now().Add(time.Second)))
	require.Equal(t, int64(100), *recs[0].Offset)
	require.Equal(t, int64(101), *recs[1].Offset)
	require.Equal(t, int32(2), recs[1].Partition)
	typ, text := tx.Commit()
	require.Equal(t, history.OK, typ, text)
	require.NoError(t, tx.Begin())
	recs = []history.Record{{Topic: "a", Value: "1"}, {Topic: "a", Value: "fail"}}
	require.ErrorContains(t, tx.Send(recs, time.Now().Add(time.Second)), "record failed")
	require.NotNil(t, recs[0].Offset, "what was acknowledged before the error is kept")
	require.Nil(t, recs[1].Offset)
	typ, text = tx.Commit()
	require.Equal(t, history.Fail, typ)
	require.True(t, strings.HasPrefix(text, kclient.TxnNotSent), text)
	ok, why := tx.Ready()
	require.False(t, ok)
	require.Equal(t, "after a failed send", why)
	tx.Close()

	cons, err := c.OpenConsumer(ctx, kclient.ConsumerSpec{ClientID: "c", Isolation: kafkaconf.ReadCommitted,
		Assign: map[string]map[int32]kclient.Position{"t": {0: {Offset: -1, Epoch: -1}, 3: {Offset: 10, Epoch: 2}}}})
	require.NoError(t, err)
	require.Equal(t, map[string]map[int32]kclient.Position{"t": {0: {Offset: -1, Epoch: -1}, 3: {Offset: 10, Epoch: 2}}},
		f.specs[len(f.specs)-1].(kclient.ConsumerSpec).Assign)
	evs := cons.Poll(ctx, time.Second, 10)
	require.Len(t, evs, 4)
	require.Equal(t, kclient.EventAssigned, evs[0].Kind)
	require.Equal(t, kclient.Claims{Generation: 4, Member: "m", Partitions: map[string][]int32{"t": {0}}}, evs[0].Claims)
	require.Equal(t, "k", evs[2].Record.Key)
	require.Equal(t, int32(2), evs[2].Epoch)
	require.Equal(t, kclient.Loss{Topic: "t", Offset: 9, Epoch: 2, ResetTo: 5, ResetEpoch: 3}, evs[3].Loss)
	cons.Recorded(evs[1:3])
	require.Empty(t, cons.Poll(ctx, time.Second, 10), "recorded is answered before the next poll")
	f.mu.Lock()
	require.Equal(t, []string{"1-1", "1-2"}, []string{f.recorded[0].Value, f.recorded[1].Value})
	f.mu.Unlock()
	cons.Close()

	gspec := kclient.ConsumerSpec{ClientID: "g", Isolation: kafkaconf.ReadUncommitted, Group: "sink", Topics: []string{"t"}, StorePositions: true}
	cons, err = c.OpenConsumer(ctx, gspec)
	require.NoError(t, err)
	gotC := f.specs[len(f.specs)-1].(kclient.ConsumerSpec)
	gotC.Log = nil
	require.Equal(t, gspec, gotC, "the spec crosses the wire whole")
	require.NoError(t, cons.Seek(ctx, map[string]map[int32]int64{"t": {0: 12, 1: 0}}))
	require.ErrorContains(t, cons.Seek(ctx, map[string]map[int32]int64{"gone": {1: 5}}), "topic gone is not subscribed")
	f.mu.Lock()
	require.Equal(t, []map[string]map[int32]int64{{"t": {0: 12, 1: 0}}}, f.sought)
	f.mu.Unlock()
	cons.Close()

	m, err := c.OpenMember(ctx, kclient.MemberSpec{Txn: txnSpec, Group: "g", Input: "in"})
	require.NoError(t, err)
	evs, err = m.Poll(ctx, 5, time.Now().Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, []kclient.EventKind{kclient.EventRevoked, kclient.EventRecord}, []kclient.EventKind{evs[0].Kind, evs[1].Kind})
	require.NoError(t, m.AddOffsets([]history.Record{evs[1].Record}))
	require.NoError(t, m.Rewind(history.Info))
	_, err = m.Poll(ctx, 99, time.Time{})
	var rep *kclient.ReplaceError
	require.ErrorAs(t, err, &rep, "an instance to replace stays one across the wire")
	m.Close()
	f.mu.Lock()
	require.Equal(t, int64(3), *f.offsets[0].Offset)
	require.Equal(t, []history.Type{history.Info}, f.rewound)
	require.Equal(t, []string{"producer", "txn", "consumer", "consumer", "member"}, f.closed)
	f.mu.Unlock()

	stop()
	for _, side := range []*tee{reqs, msgs} {
		for _, line := range strings.Split(strings.TrimSpace(side.lines.String()), "\n") {
			schematest.Valid(t, schematest.ClientProtocol, []byte(line))
		}
	}
}

// A program's input that ends closes every instance still open, and Serve returns.
func TestServeClosesWhatIsLeftOpen(t *testing.T) {
	f := &fake{}
	c, _, _, stop := pair(t, f)
	_, err := c.OpenTxn(t.Context(), kclient.TxnSpec{TxnID: "x"})
	require.NoError(t, err)
	_, err = c.OpenConsumer(t.Context(), kclient.ConsumerSpec{Group: "g", Topics: []string{"t"}, Isolation: kafkaconf.ReadUncommitted})
	require.NoError(t, err)
	stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.ElementsMatch(t, []string{"txn", "consumer"}, f.closed)
}

// What the program refuses, it refuses with a named error and goes on.
func TestServeRefusesBadRequests(t *testing.T) {
	var out bytes.Buffer
	in := strings.Join([]string{
		`{"v":1,"id":1,"op":"partitions","args":{"client_id":"x","topics":["t"]}}`,
		`{"v":1,"id":2,"op":"hello","args":{"versions":[2]}}`,
		`{"v":1,"id":3,"op":"hello","args":{"versions":[1],"brokers":["b:9092"]}}`,
		`{"v":2,"id":4,"op":"partitions"}`,
		`{"v":1,"id":5,"op":"fly"}`,
		`{"v":1,"id":6,"op":"txn.begin"}`,
		`{"v":1,"id":7,"op":"txn.begin","handle":"t9"}`,
		`not json`,
		`{"v":1,"id":8,"op":"txn.open","handle":"t1","args":{"client_id":"c","txn_id":"x","settings":{"acks":"all","idempotent":true,"max_in_flight":5,"retries":3},"timeout":"30s","request_timeout":"10000ms"}}`,
		`{"v":1,"id":9,"op":"txn.open","handle":"t1","args":{}}`,
		`{"v":1,"id":10,"op":"consumer.poll","handle":"t1","args":{"max":1}}`,
		`{"v":1,"id":11,"op":"close","handle":"t1"}`,
	}, "\n")
	f := &fake{}
	err := Serve(t.Context(), strings.NewReader(in), &out, ClientInfo{Name: "fake"}, func(HelloArgs) (kclient.Client, error) { return f, nil }, nil)
	require.NoError(t, err)
	names := map[uint64]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		schematest.Valid(t, schematest.ClientProtocol, []byte(line))
		var m struct {
			ID    uint64 `json:"id"`
			Error *Error `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		if m.Error != nil {
			names[m.ID] = m.Error.Name
		} else {
			names[m.ID] = "ok"
		}
	}
	require.Equal(t, map[uint64]string{0: "bad_request", 1: "no_hello", 2: "bad_version", 3: "ok", 4: "bad_version", 5: "unknown_op",
		6: "bad_request", 7: "unknown_instance", 8: "ok", 9: "bad_request", 10: "bad_request", 11: "ok"}, names)
	require.Equal(t, []string{"txn"}, f.closed)
	require.Equal(t, 30*time.Second, f.specs[0].(kclient.TxnSpec).Timeout)
}

func TestParseDuration(t *testing.T) {
	for s, want := range map[string]time.Duration{"250ms": 250 * time.Millisecond, "1.5s": 1500 * time.Millisecond, "30s": 30 * time.Second,
		"2m": 2 * time.Minute, "1h": time.Hour, "0ms": 0} {
		got, err := ParseDuration(s)
		require.NoError(t, err, s)
		require.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "5", "ms", "-1s", "1e3ms", "1.5.s", "10 s", "1d"} {
		_, err := ParseDuration(s)
		require.Error(t, err, "%q", s)
	}
	b, err := Duration(1500 * time.Millisecond).MarshalText()
	require.NoError(t, err)
	require.Equal(t, "1500ms", string(b))
}

// Partition maps cross the wire keyed by the partition's number as text, and back; a key that is
// no number is refused with the field it came in.
func TestPartitionKeys(t *testing.T) {
	in := map[string]map[int32]int64{"t": {0: 5, 12: 7}, "u": {}}
	wire := byText(in, func(v int64) int64 { return v })
	require.Equal(t, map[string]map[string]int64{"t": {"0": 5, "12": 7}, "u": {}}, wire)
	back, err := byNumber("offsets", wire, func(v int64) int64 { return v })
	require.NoError(t, err)
	require.Equal(t, in, back)
	_, err = byNumber("offsets", map[string]map[string]int64{"t": {"one": 1}}, func(v int64) int64 { return v })
	require.EqualError(t, err, `offsets: partition "one" of t is not a number`)
}
