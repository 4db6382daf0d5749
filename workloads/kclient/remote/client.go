package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// Client is a kclient.Client that a program serves: every method is a request on the program's
// standard input, answered on its standard output.
type Client struct {
	info ClientInfo
	log  *slog.Logger

	wmu sync.Mutex // guards enc and the writes
	enc *json.Encoder

	mu        sync.Mutex
	nextID    uint64
	pending   map[uint64]chan Message
	producers map[string]*producer
	handles   atomic.Uint64

	done    chan struct{} // closed when the program's output ends
	readErr error         // why it ended; set before done closes
	closeFn func() error
}

var _ kclient.Client = (*Client)(nil)

// ErrGone is the error of every request once the program's output has ended.
var ErrGone = errors.New("the client program has ended")

// Start runs the program cmd (its name and arguments) and says hello: the protocol version and
// the cluster. Its standard error goes to stderr (nil: discarded). Close ends it.
func Start(ctx context.Context, cmd []string, hello HelloArgs, stderr io.Writer, log *slog.Logger) (*Client, error) {
	if len(cmd) == 0 {
		return nil, errors.New("no client program given")
	}
	p := exec.Command(cmd[0], cmd[1:]...)
	p.Stderr = stderr
	in, err := p.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("client program %s: %w", cmd[0], err)
	}
	out, err := p.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("client program %s: %w", cmd[0], err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("starting the client program %s: %w", cmd[0], err)
	}
	c := dial(out, in, log)
	c.closeFn = func() error {
		_ = in.Close()
		return waitExit(p, c.done, 30*time.Second)
	}
	if err := c.hello(ctx, hello); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("client program %s: %w", cmd[0], err)
	}
	return c, nil
}

// waitExit waits for p to exit after its input closed, and kills it after bound: a program must
// stop when its input ends.
func waitExit(p *exec.Cmd, output <-chan struct{}, bound time.Duration) error {
	exited := make(chan error, 1)
	go func() { <-output; exited <- p.Wait() }()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("the client program exited: %w", err)
		}
		return nil
	case <-t.C:
		_ = p.Process.Signal(os.Kill)
		<-exited
		return fmt.Errorf("the client program did not stop within %s of its input's end; killed", bound)
	}
}

// Dial speaks the protocol over r (the program's output) and w (its input) and says hello.
// Close closes w.
func Dial(ctx context.Context, r io.Reader, w io.WriteCloser, hello HelloArgs, log *slog.Logger) (*Client, error) {
	c := dial(r, w, log)
	c.closeFn = w.Close
	if err := c.hello(ctx, hello); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

func dial(r io.Reader, w io.Writer, log *slog.Logger) *Client {
	c := &Client{log: kit.OrDiscard(log), enc: json.NewEncoder(w), pending: map[uint64]chan Message{},
		producers: map[string]*producer{}, done: make(chan struct{})}
	go c.read(r)
	return c
}

func (c *Client) hello(ctx context.Context, a HelloArgs) error {
	a.Versions = []int{Version}
	var res HelloResult
	if err := c.call(ctx, OpHello, "", a, &res); err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	if res.Version != Version {
		return fmt.Errorf("hello: the program chose version %d; Verity speaks %d", res.Version, Version)
	}
	if res.Client.Name == "" {
		return errors.New("hello: the program names no client")
	}
	c.info = res.Client
	return nil
}

// Info is what the program said it is.
func (c *Client) Info() ClientInfo { return c.info }

// Close closes the program's input and waits for it to stop.
func (c *Client) Close() error {
	if c.closeFn == nil {
		return nil
	}
	return c.closeFn()
}

// read dispatches the program's lines until its output ends.
func (c *Client) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var err error
	for sc.Scan() {
		var m Message
		if err = json.Unmarshal(sc.Bytes(), &m); err != nil {
			err = fmt.Errorf("the program wrote a line that is not a message: %w: %.200s", err, sc.Text())
			break
		}
		if m.V != Version {
			err = fmt.Errorf("the program wrote a message of version %d: %.200s", m.V, sc.Text())
			break
		}
		if m.Event != "" {
			c.event(m)
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch == nil {
			c.log.Warn("the client program answered a request nobody waits for", "id", m.ID)
			continue
		}
		ch <- m
	}
	if err == nil {
		err = sc.Err()
	}
	c.readErr = ErrGone
	if err != nil {
		c.readErr = fmt.Errorf("%w: %w", ErrGone, err)
		c.log.Error("reading the client program's output", "err", err)
	}
	close(c.done)
}

func (c *Client) event(m Message) {
	if m.Event != EventAnswers {
		c.log.Warn("the client program sent an unknown event", "event", m.Event)
		return
	}
	c.mu.Lock()
	p := c.producers[m.Handle]
	c.mu.Unlock()
	if p == nil {
		return // a producer closed already
	}
	p.retries.Store(m.Retries)
	p.q.Push(m.Answers...)
}

// send writes a request.
func (c *Client) send(req Request) error {
	req.V = Version
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.enc.Encode(req); err != nil {
		return fmt.Errorf("writing to the client program: %w", err)
	}
	return nil
}

// call sends a request and waits for its reply, decoding the result into res; a reply with an
// error returns it (and still decodes a result it carries).
func (c *Client) call(ctx context.Context, op Op, handle string, args, res any) error {
	var raw json.RawMessage
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return fmt.Errorf("%s: encoding: %w", op, err)
		}
		raw = b
	}
	ch := make(chan Message, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.send(Request{ID: id, Op: op, Handle: handle, Args: raw}); err != nil {
		return err
	}
	var m Message
	select {
	case m = <-ch:
	case <-c.done:
		return c.readErr
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	if res != nil && len(m.Result) > 0 {
		if err := json.Unmarshal(m.Result, res); err != nil {
			return fmt.Errorf("%s: the program's result: %w", op, err)
		}
	}
	if m.Error != nil {
		return m.Error.err()
	}
	return nil
}

// err is e as the error a kclient.Client returns.
func (e *Error) err() error {
	ke := &kclient.Error{Name: e.Name, Code: e.Code, Text: e.Text}
	switch {
	case e.Permanent:
		return &kclient.PermanentError{Err: ke}
	case e.Replace:
		return &kclient.ReplaceError{Reason: e.Text}
	}
	return ke
}

func (c *Client) handle(kind string) string {
	return kind + strconv.FormatUint(c.handles.Add(1), 10)
}

func (c *Client) Name() kafkaconf.ClientName { return kafkaconf.ClientName(c.info.Name) }

func (c *Client) Partitions(ctx context.Context, clientID string, topics []string) (map[string][]int32, error) {
	var res PartitionsResult
	err := c.call(ctx, OpPartitions, "", PartitionsArgs{ClientID: clientID, Topics: topics}, &res)
	return res.Partitions, err
}

func (c *Client) TxnProtocol(ctx context.Context) (kafkaconf.TxnProtocol, error) {
	var res TxnProtocolResult
	err := c.call(ctx, OpTxnProtocol, "", nil, &res)
	return res.TxnProtocol, err
}

// closeBound bounds the wait for an instance's close.
const closeBound = 15 * time.Second

// closeInstance asks the program to close handle, waiting at most closeBound.
func (c *Client) closeInstance(handle string) {
	ctx, cancel := context.WithTimeout(context.Background(), closeBound)
	defer cancel()
	if err := c.call(ctx, OpClose, handle, nil, nil); err != nil && !errors.Is(err, ErrGone) {
		c.log.Warn("closing an instance of the client program", "handle", handle, "err", err)
	}
}

// producer is a producer the program runs; its answers come as events.
type producer struct {
	c       *Client
	handle  string
	q       *kit.Queue[Answer]
	taken   []Answer
	retries atomic.Int64
	mu      sync.Mutex
	tags    map[uint64]any
	next    uint64
}

func (c *Client) OpenProducer(ctx context.Context, s kclient.ProducerSpec) (kclient.Producer, map[string][]int32, []string, error) {
	p := &producer{c: c, handle: c.handle("p"), q: kit.NewQueue[Answer](), tags: map[uint64]any{}}
	c.mu.Lock()
	c.producers[p.handle] = p
	c.mu.Unlock()
	var res ProducerOpenResult
	err := c.call(ctx, OpProducerOpen, p.handle, ProducerSpec{ClientID: s.ClientID, Settings: wireSettings(s.Settings),
		RetryBackoff: Duration(s.RetryBackoff), RequestTimeout: Duration(s.RequestTimeout), DeliveryTimeout: Duration(s.DeliveryTimeout),
		Linger: Duration(s.Linger), BatchMessages: s.BatchMessages, BatchBytes: s.BatchBytes, Compression: s.Compression, Topics: s.Topics}, &res)
	if err != nil {
		c.mu.Lock()
		delete(c.producers, p.handle)
		c.mu.Unlock()
		return nil, nil, res.Warnings, err
	}
	return p, res.Partitions, res.Warnings, nil
}

// Hand writes the record to the program; the pipe's backpressure is the program's.
func (p *producer) Hand(ctx context.Context, s kclient.Send) bool {
	if ctx.Err() != nil {
		return false
	}
	p.mu.Lock()
	p.next++
	tag := p.next
	p.tags[tag] = s.Tag
	p.mu.Unlock()
	b, err := json.Marshal(SendArgs{Tag: tag, Record: wireRecord(s.Record)})
	if err == nil {
		err = p.c.send(Request{Op: OpProducerSend, Handle: p.handle, Args: b})
	}
	if err != nil {
		// Never reached the program: answered here, as a client answers a record it failed
		// before sending.
		p.q.Push(Answer{Tag: tag, Outcome: OutcomeFail, Rule: "not-handed", Why: "the record never reached the client program",
			Error: &Error{Name: "error", Text: err.Error()}})
	}
	return true
}

func (p *producer) Ready() <-chan struct{} { return p.q.Ready() }

func (p *producer) Take(buf []kclient.Answer) []kclient.Answer {
	p.taken = p.q.Take(p.taken[:0])
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.taken {
		tag, ok := p.tags[a.Tag]
		if !ok {
			continue // an answer for no record handed over, or a second one
		}
		delete(p.tags, a.Tag)
		ka := kclient.Answer{Tag: tag, Partition: a.Partition, Offset: a.Offset}
		if a.Error != nil {
			ka.Err = a.Error.err()
		}
		t, err := a.Outcome.history()
		if err != nil || (t == history.OK && a.Error != nil) {
			// An answer that breaks the rules is unknown, never ok.
			t, a.Rule, a.Why = history.Info, "malformed-answer", fmt.Sprintf("the client program answered outcome %q with error %v", a.Outcome, a.Error)
		}
		ka.Outcome = kclient.Outcome{Type: t, Rule: a.Rule, Why: a.Why}
		buf = append(buf, ka)
	}
	clear(p.taken)
	return buf
}

func (p *producer) Retries() int64 { return p.retries.Load() }

func (p *producer) Close() {
	p.q.Drop()
	p.c.closeInstance(p.handle)
	p.c.mu.Lock()
	delete(p.c.producers, p.handle)
	p.c.mu.Unlock()
}

// txn is a transactional producer, or a member's producer side, the program runs.
type txn struct {
	c      *Client
	handle string
}

func (c *Client) OpenTxn(ctx context.Context, s kclient.TxnSpec) (kclient.Txn, error) {
	t := &txn{c: c, handle: c.handle("t")}
	if err := c.call(ctx, OpTxnOpen, t.handle, wireTxnSpec(s), nil); err != nil {
		return nil, err
	}
	return t, nil
}

func wireTxnSpec(s kclient.TxnSpec) TxnSpec {
	return TxnSpec{ClientID: s.ClientID, TxnID: s.TxnID, Settings: wireSettings(s.Settings), Timeout: Duration(s.Timeout),
		RequestTimeout: Duration(s.RequestTimeout)}
}

func (t *txn) Begin() error { return t.c.call(context.Background(), OpBegin, t.handle, nil, nil) }

func (t *txn) Send(recs []history.Record, deadline time.Time) error {
	a := TxnSendArgs{Records: make([]Record, len(recs)), Within: Duration(max(time.Until(deadline), 0))}
	for i, r := range recs {
		a.Records[i] = wireRecord(r)
	}
	var res TxnSendResult
	err := t.c.call(context.Background(), OpTxnSend, t.handle, a, &res)
	for i, ack := range res.Acked {
		if ack != nil && i < len(recs) {
			recs[i].Partition = ack.Partition
			recs[i] = recs[i].At(ack.Offset)
		}
	}
	return err
}

// Commit: the program's outcome; a commit whose answer never came is unknown.
func (t *txn) Commit() (history.Type, string) {
	var res CommitResult
	if err := t.c.call(context.Background(), OpCommit, t.handle, nil, &res); err != nil {
		return history.Info, "commit: " + err.Error()
	}
	typ, err := res.Outcome.history()
	if err != nil {
		return history.Info, "commit: the client program answered " + err.Error()
	}
	return typ, res.Text
}

func (t *txn) Abort() error { return t.c.call(context.Background(), OpAbort, t.handle, nil, nil) }

func (t *txn) Ready() (bool, string) {
	var res ReadyResult
	if err := t.c.call(context.Background(), OpReady, t.handle, nil, &res); err != nil {
		return false, err.Error()
	}
	return res.Ready, res.Why
}

func (t *txn) Close() { t.c.closeInstance(t.handle) }

// consumer is a consumer the program runs.
type consumer struct {
	c      *Client
	handle string
}

func (c *Client) OpenConsumer(ctx context.Context, s kclient.ConsumerSpec) (kclient.Consumer, error) {
	cs := ConsumerSpec{ClientID: s.ClientID, Isolation: s.Isolation, FromNewest: s.FromNewest, Group: s.Group, Topics: s.Topics,
		GroupProtocol: s.GroupProtocol, StorePositions: s.StorePositions}
	if s.MaxPollInterval > 0 {
		d := Duration(s.MaxPollInterval)
		cs.MaxPollInterval = &d
	}
	if len(s.Assign) > 0 {
		cs.Assign = byText(s.Assign, func(pos kclient.Position) Position { return Position{Offset: pos.Offset, Epoch: pos.Epoch} })
	}
	cons := &consumer{c: c, handle: c.handle("c")}
	if err := c.call(ctx, OpConsumerOpen, cons.handle, cs, nil); err != nil {
		return nil, err
	}
	return cons, nil
}

func (cons *consumer) Poll(ctx context.Context, wait time.Duration, max int) []kclient.Event {
	w := Duration(wait)
	var res PollResult
	if err := cons.c.call(ctx, OpConsumerPoll, cons.handle, PollArgs{Max: max, Wait: &w}, &res); err != nil {
		if ctx.Err() == nil {
			cons.c.log.Warn("polling the client program", "handle", cons.handle, "err", err)
			_ = kit.Sleep(ctx, wait) // a poll that failed takes its time, as an empty one would
		}
		return nil
	}
	return kevents(res.Events)
}

func (cons *consumer) Recorded(recs []kclient.Event) {
	if len(recs) == 0 {
		return
	}
	a := RecordedArgs{Handles: make([]uint64, 0, len(recs))}
	for _, ev := range recs {
		if h, ok := ev.Handle.(uint64); ok {
			a.Handles = append(a.Handles, h)
		}
	}
	b, err := json.Marshal(a)
	if err == nil {
		err = cons.c.send(Request{Op: OpRecorded, Handle: cons.handle, Args: b})
	}
	if err != nil {
		cons.c.log.Warn("telling the client program what was recorded", "err", err)
	}
}

// Seek asks the program to place the partitions an assignment added.
func (cons *consumer) Seek(ctx context.Context, at map[string]map[int32]int64) error {
	return cons.c.call(ctx, OpSeek, cons.handle, SeekArgs{Offsets: byText(at, func(off int64) int64 { return off })}, nil)
}

func (cons *consumer) Close() { cons.c.closeInstance(cons.handle) }

// kevents are the wire's events as kclient's; an event the protocol does not know is dropped.
func kevents(evs []Event) []kclient.Event {
	out := make([]kclient.Event, 0, len(evs))
	for _, ev := range evs {
		switch {
		case ev.Kind == KindRecord && ev.Record != nil && ev.Record.Offset != nil:
			epoch := int32(-1)
			if ev.Epoch != nil {
				epoch = *ev.Epoch
			}
			out = append(out, kclient.Event{Kind: kclient.EventRecord, Record: ev.Record.history(), Epoch: epoch, Handle: ev.Handle})
		case ev.Kind == KindAssigned && ev.Claims != nil:
			out = append(out, kclient.Event{Kind: kclient.EventAssigned, Claims: kclient.Claims{Generation: ev.Claims.Generation,
				Member: ev.Claims.Member, Partitions: ev.Claims.Partitions}})
		case ev.Kind == KindRevoked:
			out = append(out, kclient.Event{Kind: kclient.EventRevoked})
		case ev.Kind == KindDataLoss && ev.Loss != nil:
			l := ev.Loss
			out = append(out, kclient.Event{Kind: kclient.EventDataLoss, Loss: kclient.Loss{Topic: l.Topic, Partition: l.Partition,
				Offset: l.Offset, Epoch: l.Epoch, ResetTo: l.ResetTo, ResetEpoch: l.ResetEpoch}})
		}
	}
	return out
}

// member is a read-process-write member the program runs.
type member struct {
	txn
}

func (c *Client) OpenMember(ctx context.Context, s kclient.MemberSpec) (kclient.Member, error) {
	m := &member{txn{c: c, handle: c.handle("m")}}
	if err := c.call(ctx, OpMemberOpen, m.handle, MemberSpec{Txn: wireTxnSpec(s.Txn), ConsumerClientID: s.ConsumerClientID,
		Group: s.Group, Input: s.Input, GroupProtocol: s.GroupProtocol, Isolation: s.Isolation}, nil); err != nil {
		return nil, err
	}
	return m, nil
}

// memberPollSlice bounds one member.poll request: a poll without a bound is asked in slices,
// so that the end of ctx and a close are never held behind a program's wait.
const memberPollSlice = time.Second

func (m *member) Poll(ctx context.Context, most int, until time.Time) ([]kclient.Event, error) {
	for {
		w := memberPollSlice
		if !until.IsZero() {
			w = min(max(time.Until(until), 0), memberPollSlice)
		}
		wd := Duration(w)
		var res PollResult
		err := m.c.call(ctx, OpMemberPoll, m.handle, PollArgs{Max: most, Wait: &wd}, &res)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, nil
		case err != nil:
			return kevents(res.Events), err
		case len(res.Events) > 0, ctx.Err() != nil, !until.IsZero() && !time.Now().Before(until):
			return kevents(res.Events), nil
		}
	}
}

func (m *member) AddOffsets(in []history.Record) error {
	a := AddOffsetsArgs{Records: make([]Record, len(in))}
	for i, r := range in {
		a.Records[i] = wireRecord(r)
	}
	return m.c.call(context.Background(), OpAddOffsets, m.handle, a, nil)
}

func (m *member) Rewind(t history.Type) error {
	return m.c.call(context.Background(), OpRewind, m.handle, RewindArgs{Outcome: wireOutcome(t)}, nil)
}
