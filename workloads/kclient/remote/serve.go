package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// queueLen bounds the requests waiting for one instance. A producer whose client pushes back
// fills its queue, and then the program stops reading: Verity's writes block, which is the
// backpressure its Hand promises.
const queueLen = 1024

// Build makes the client a program serves, for the cluster hello names.
type Build func(HelloArgs) (kclient.Client, error)

// Serve answers the requests read from r with the client build makes, writing replies and events
// to w, until r ends (then it closes every instance still open and returns nil) or ctx ends.
// Requests for one instance are handled in order, each instance on a goroutine of its own, so
// that one instance's wait (a commit, a poll) holds no other back.
func Serve(ctx context.Context, r io.Reader, w io.Writer, info ClientInfo, build Build, log *slog.Logger) error {
	s := &server{ctx: ctx, info: info, build: build, log: kit.OrDiscard(log), enc: json.NewEncoder(w),
		inst: map[string]*instance{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() && ctx.Err() == nil {
		s.handle(sc.Bytes())
	}
	s.closeAll()
	s.wg.Wait()
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading requests: %w", err)
	}
	return ctx.Err()
}

type server struct {
	ctx   context.Context
	info  ClientInfo
	build Build
	log   *slog.Logger
	cl    kclient.Client
	mu    sync.Mutex // guards enc
	enc   *json.Encoder
	inst  map[string]*instance // only the reading goroutine touches it
	wg    sync.WaitGroup
}

type instance struct {
	q        chan Request
	producer kclient.Producer
	txn      kclient.Txn
	consumer kclient.Consumer
	member   kclient.Member
	share    kclient.ShareConsumer
	// polled are the handles of the records a consumer's polls returned, until recorded or
	// polled past.
	polled map[uint64]kclient.Event
	nextID uint64
	stop   chan struct{} // closed when the producer's answers need no more forwarding
}

func (s *server) write(m Message) {
	m.V = Version
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enc.Encode(m); err != nil {
		s.log.Warn("writing a reply", "err", err)
	}
}

func (s *server) reply(id uint64, result any, err error) {
	m := Message{ID: id, Error: s.wireError(err)}
	if result != nil {
		b, merr := json.Marshal(result)
		if merr != nil {
			m.Error = &Error{Name: "internal", Text: "encoding the result: " + merr.Error()}
		} else {
			m.Result = b
		}
	}
	s.write(m)
}

// refuse answers a request the protocol does not allow.
func (s *server) refuse(id uint64, name, format string, args ...any) {
	s.write(Message{ID: id, Error: &Error{Name: name, Text: fmt.Sprintf(format, args...)}})
}

// wireError is err as an Error: its Kafka name and code when the client can tell them.
func (s *server) wireError(err error) *Error {
	if err == nil {
		return nil
	}
	e := &Error{Name: "error", Text: err.Error()}
	var ke *kclient.Error
	if errors.As(err, &ke) {
		e.Name, e.Code, e.Text = ke.Name, ke.Code, ke.Text
	} else if d, ok := s.cl.(kclient.Describer); ok {
		e.Text = d.ErrorText(err)
		if name, code, ok := d.ErrorName(err); ok {
			e.Name, e.Code = name, &code
		}
	}
	e.Permanent = kclient.IsPermanent(err)
	var rep *kclient.ReplaceError
	e.Replace = errors.As(err, &rep)
	return e
}

func (s *server) handle(line []byte) {
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		s.refuse(0, "bad_request", "not a request: %v", err)
		return
	}
	if req.V != Version {
		s.refuse(req.ID, "bad_version", "version %d: this program speaks %d", req.V, Version)
		return
	}
	info, ok := LookupOp(req.Op)
	switch {
	case !ok:
		s.refuse(req.ID, "unknown_op", "unknown op %q", req.Op)
		return
	case req.Op == OpHello:
		s.hello(req)
		return
	case s.cl == nil:
		s.refuse(req.ID, "no_hello", "%s before hello", req.Op)
		return
	case !info.Instance:
		s.wg.Go(func() { s.global(req) })
		return
	case req.Handle == "":
		s.refuse(req.ID, "bad_request", "%s names no instance (handle)", req.Op)
		return
	}
	in := s.inst[req.Handle]
	switch {
	case info.Opens && in != nil:
		s.refuse(req.ID, "bad_request", "instance %s is open already", req.Handle)
		return
	case info.Opens:
		in = &instance{q: make(chan Request, queueLen), polled: map[uint64]kclient.Event{}, stop: make(chan struct{})}
		s.inst[req.Handle] = in
		s.wg.Go(func() { s.run(req.Handle, in) })
	case in == nil:
		s.refuse(req.ID, "unknown_instance", "no instance %s is open", req.Handle)
		return
	}
	if req.Op == OpClose {
		delete(s.inst, req.Handle)
	}
	in.q <- req
}

func (s *server) hello(req Request) {
	var a HelloArgs
	if err := json.Unmarshal(req.Args, &a); err != nil {
		s.refuse(req.ID, "bad_request", "hello: %v", err)
		return
	}
	if s.cl != nil {
		s.refuse(req.ID, "bad_request", "hello twice")
		return
	}
	if !slices.Contains(a.Versions, Version) {
		s.refuse(req.ID, "bad_version", "versions %v: this program speaks %d", a.Versions, Version)
		return
	}
	cl, err := s.build(a)
	if err != nil {
		s.reply(req.ID, nil, err)
		return
	}
	s.cl = cl
	s.reply(req.ID, HelloResult{Version: Version, Client: s.info}, nil)
}

func (s *server) global(req Request) {
	switch req.Op {
	case OpPartitions:
		var a PartitionsArgs
		if err := json.Unmarshal(req.Args, &a); err != nil {
			s.refuse(req.ID, "bad_request", "%s: %v", req.Op, err)
			return
		}
		parts, err := s.cl.Partitions(s.ctx, a.ClientID, a.Topics)
		s.reply(req.ID, PartitionsResult{Partitions: parts}, err)
	case OpTxnProtocol:
		p, err := s.cl.TxnProtocol(s.ctx)
		s.reply(req.ID, TxnProtocolResult{TxnProtocol: p}, err)
	case OpShareConfigure, OpShareStartOffsets:
		s.shareGlobal(req)
	}
}

// closeAll closes every instance still open: Verity's input ended.
func (s *server) closeAll() {
	for h, in := range s.inst {
		in.q <- Request{V: Version, Op: OpClose, Handle: h}
		delete(s.inst, h)
	}
}

// run handles one instance's requests in order until it is closed.
func (s *server) run(handle string, in *instance) {
	for req := range in.q {
		if req.Op == OpClose {
			s.close(in)
			if req.ID != 0 {
				s.reply(req.ID, struct{}{}, nil)
			}
			return
		}
		err := s.do(handle, in, req)
		if isOpen(req.Op) && !in.open() {
			// A failed open leaves nothing to close: the instance's goroutine ends.
			if err != nil {
				s.write(Message{ID: req.ID, Error: &Error{Name: "bad_request", Text: fmt.Sprintf("%s: %v", req.Op, err), Permanent: true}})
			}
			return
		}
		if err != nil {
			e := &Error{Name: "bad_request", Text: fmt.Sprintf("%s: %v", req.Op, err)}
			// An open whose arguments the program refuses fails the same way every time.
			e.Permanent = isOpen(req.Op)
			s.write(Message{ID: req.ID, Error: e})
		}
	}
}

// open says whether the instance holds a client.
func (in *instance) open() bool {
	return in.producer != nil || in.txn != nil || in.consumer != nil || in.member != nil || in.share != nil
}

func isOpen(op Op) bool {
	info, _ := LookupOp(op)
	return info.Opens
}

func (s *server) close(in *instance) {
	switch {
	case in.producer != nil:
		in.producer.Close()
		close(in.stop)
	case in.txn != nil:
		in.txn.Close()
	case in.consumer != nil:
		in.consumer.Close()
	case in.member != nil:
		in.member.Close()
	case in.share != nil:
		in.share.Close()
	}
}

// do handles one request; an error is a request the instance cannot take (its arguments, or an
// op of another kind of instance).
func (s *server) do(handle string, in *instance, req Request) error {
	args := func(v any) error { return json.Unmarshal(req.Args, v) }
	txn := in.txn
	if in.member != nil {
		txn = in.member
	}
	switch req.Op {
	case OpProducerOpen:
		var sp ProducerSpec
		if err := args(&sp); err != nil {
			return err
		}
		p, parts, warns, err := s.cl.OpenProducer(s.ctx, sp.kclient(s.log))
		if err == nil {
			in.producer = p
			s.wg.Go(func() { s.answers(handle, in) })
		}
		s.reply(req.ID, ProducerOpenResult{Partitions: parts, Warnings: warns}, err)
	case OpProducerSend:
		var a SendArgs
		if in.producer == nil {
			return errors.New("not a producer")
		}
		if err := args(&a); err != nil {
			return err
		}
		in.producer.Hand(s.ctx, kclient.Send{Record: a.Record.history(), Tag: a.Tag})
	case OpTxnOpen:
		var sp TxnSpec
		if err := args(&sp); err != nil {
			return err
		}
		t, err := s.cl.OpenTxn(s.ctx, sp.kclient(s.log))
		in.txn = t
		s.reply(req.ID, struct{}{}, err)
	case OpBegin, OpTxnSend, OpCommit, OpAbort, OpReady:
		if txn == nil {
			return errors.New("not a transactional producer or a member")
		}
		return s.txnOp(txn, req)
	case OpConsumerOpen:
		var sp ConsumerSpec
		if err := args(&sp); err != nil {
			return err
		}
		ks, err := sp.kclient(s.log)
		if err != nil {
			return err
		}
		c, err := s.cl.OpenConsumer(s.ctx, ks)
		in.consumer = c
		s.reply(req.ID, struct{}{}, err)
	case OpConsumerPoll:
		var a PollArgs
		if in.consumer == nil {
			return errors.New("not a consumer")
		}
		if err := args(&a); err != nil {
			return err
		}
		var wait time.Duration
		if a.Wait != nil {
			wait = time.Duration(*a.Wait)
		}
		clear(in.polled) // a poll drops what the last one returned and nobody recorded
		evs := in.consumer.Poll(s.ctx, wait, a.Max)
		s.reply(req.ID, PollResult{Events: in.events(evs)}, nil)
	case OpRecorded:
		var a RecordedArgs
		if in.consumer == nil {
			return errors.New("not a consumer")
		}
		if err := args(&a); err != nil {
			return err
		}
		evs := make([]kclient.Event, 0, len(a.Handles))
		for _, h := range a.Handles {
			if ev, ok := in.polled[h]; ok {
				evs = append(evs, ev)
				delete(in.polled, h)
			}
		}
		in.consumer.Recorded(evs)
	case OpSeek:
		var a SeekArgs
		if in.consumer == nil {
			return errors.New("not a consumer")
		}
		if err := args(&a); err != nil {
			return err
		}
		at, err := a.kclient()
		if err != nil {
			return err
		}
		s.reply(req.ID, struct{}{}, in.consumer.Seek(s.ctx, at))
	case OpMemberOpen:
		var sp MemberSpec
		if err := args(&sp); err != nil {
			return err
		}
		m, err := s.cl.OpenMember(s.ctx, kclient.MemberSpec{Txn: sp.Txn.kclient(s.log), ConsumerClientID: sp.ConsumerClientID,
			Group: sp.Group, Input: sp.Input, GroupProtocol: sp.GroupProtocol, Isolation: sp.Isolation})
		in.member = m
		s.reply(req.ID, struct{}{}, err)
	case OpMemberPoll:
		var a PollArgs
		if in.member == nil {
			return errors.New("not a member")
		}
		if err := args(&a); err != nil {
			return err
		}
		var until time.Time
		if a.Wait != nil {
			until = time.Now().Add(time.Duration(*a.Wait))
		}
		evs, err := in.member.Poll(s.ctx, a.Max, until)
		s.reply(req.ID, PollResult{Events: in.events(evs)}, err)
	case OpAddOffsets:
		var a AddOffsetsArgs
		if in.member == nil {
			return errors.New("not a member")
		}
		if err := args(&a); err != nil {
			return err
		}
		recs := make([]history.Record, len(a.Records))
		for i, r := range a.Records {
			recs[i] = r.history()
		}
		s.reply(req.ID, struct{}{}, in.member.AddOffsets(recs))
	case OpRewind:
		var a RewindArgs
		if in.member == nil {
			return errors.New("not a member")
		}
		if err := args(&a); err != nil {
			return err
		}
		t, err := a.Outcome.history()
		if err != nil {
			return err
		}
		s.reply(req.ID, struct{}{}, in.member.Rewind(t))
	case OpShareOpen, OpSharePoll, OpShareAck, OpShareCommit:
		return s.shareOp(in, req)
	default:
		return fmt.Errorf("not an instance's request")
	}
	return nil
}

func (s *server) txnOp(t kclient.Txn, req Request) error {
	switch req.Op {
	case OpBegin:
		s.reply(req.ID, struct{}{}, t.Begin())
	case OpTxnSend:
		var a TxnSendArgs
		if err := json.Unmarshal(req.Args, &a); err != nil {
			return err
		}
		recs := make([]history.Record, len(a.Records))
		for i, r := range a.Records {
			recs[i] = r.history()
			recs[i].Offset = nil
		}
		err := t.Send(recs, time.Now().Add(time.Duration(a.Within)))
		res := TxnSendResult{Acked: make([]*Acked, len(recs))}
		for i, r := range recs {
			if r.Offset != nil {
				res.Acked[i] = &Acked{Partition: r.Partition, Offset: *r.Offset}
			}
		}
		s.reply(req.ID, res, err)
	case OpCommit:
		typ, text := t.Commit()
		s.reply(req.ID, CommitResult{Outcome: wireOutcome(typ), Text: text}, nil)
	case OpAbort:
		s.reply(req.ID, struct{}{}, t.Abort())
	case OpReady:
		ok, why := t.Ready()
		s.reply(req.ID, ReadyResult{Ready: ok, Why: why}, nil)
	}
	return nil
}

// events are evs on the wire; each record gets a handle for consumer.recorded.
func (in *instance) events(evs []kclient.Event) []Event {
	out := make([]Event, 0, len(evs))
	for _, ev := range evs {
		switch ev.Kind {
		case kclient.EventRecord:
			in.nextID++
			in.polled[in.nextID] = ev
			r, epoch := wireRecord(ev.Record), ev.Epoch
			out = append(out, Event{Kind: KindRecord, Record: &r, Epoch: &epoch, Handle: in.nextID})
		case kclient.EventAssigned:
			out = append(out, Event{Kind: KindAssigned, Claims: &Claims{Generation: ev.Claims.Generation, Member: ev.Claims.Member,
				Partitions: ev.Claims.Partitions}})
		case kclient.EventRevoked:
			out = append(out, Event{Kind: KindRevoked})
		case kclient.EventDataLoss:
			l := ev.Loss
			out = append(out, Event{Kind: KindDataLoss, Loss: &Loss{Topic: l.Topic, Partition: l.Partition, Offset: l.Offset,
				Epoch: l.Epoch, ResetTo: l.ResetTo, ResetEpoch: l.ResetEpoch}})
		}
	}
	return out
}

// answers forwards a producer's answers as events until the producer closes.
func (s *server) answers(handle string, in *instance) {
	var buf []kclient.Answer
	for {
		select {
		case <-in.producer.Ready():
		case <-in.stop:
			return
		}
		buf = in.producer.Take(buf[:0])
		if len(buf) == 0 {
			continue
		}
		as := make([]Answer, len(buf))
		for i, a := range buf {
			tag, _ := a.Tag.(uint64)
			as[i] = Answer{Tag: tag, Partition: a.Partition, Offset: a.Offset, Error: s.wireError(a.Err),
				Outcome: wireOutcome(a.Outcome.Type), Rule: a.Outcome.Rule, Why: a.Outcome.Why}
		}
		s.write(Message{Event: EventAnswers, Handle: handle, Answers: as, Retries: in.producer.Retries()})
	}
}

func (sp ProducerSpec) kclient(log *slog.Logger) kclient.ProducerSpec {
	return kclient.ProducerSpec{ClientID: sp.ClientID, Settings: sp.Settings.producer(), RetryBackoff: time.Duration(sp.RetryBackoff),
		RequestTimeout: time.Duration(sp.RequestTimeout), DeliveryTimeout: time.Duration(sp.DeliveryTimeout),
		Linger: time.Duration(sp.Linger), BatchMessages: sp.BatchMessages, BatchBytes: sp.BatchBytes, Compression: sp.Compression,
		Topics: sp.Topics, Log: log}
}

func (sp TxnSpec) kclient(log *slog.Logger) kclient.TxnSpec {
	return kclient.TxnSpec{ClientID: sp.ClientID, TxnID: sp.TxnID, Settings: sp.Settings.producer(), Timeout: time.Duration(sp.Timeout),
		RequestTimeout: time.Duration(sp.RequestTimeout), Log: log}
}

func (sp ConsumerSpec) kclient(log *slog.Logger) (kclient.ConsumerSpec, error) {
	ks := kclient.ConsumerSpec{ClientID: sp.ClientID, Isolation: sp.Isolation, FromNewest: sp.FromNewest, Group: sp.Group,
		Topics: sp.Topics, GroupProtocol: sp.GroupProtocol, StorePositions: sp.StorePositions, Log: log}
	if sp.MaxPollInterval != nil {
		ks.MaxPollInterval = time.Duration(*sp.MaxPollInterval)
	}
	if len(sp.Assign) > 0 {
		var err error
		if ks.Assign, err = byNumber("assign", sp.Assign, func(pos Position) kclient.Position {
			return kclient.Position{Offset: pos.Offset, Epoch: pos.Epoch}
		}); err != nil {
			return ks, err
		}
	}
	return ks, nil
}

func (a SeekArgs) kclient() (map[string]map[int32]int64, error) {
	return byNumber("offsets", a.Offsets, func(off int64) int64 { return off })
}
