package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/verity-kafka/verity/kafkaconf"
)

// Conformance is one rule a client program is held to, checked on a program of its own.
type Conformance struct {
	Name string
	// About says what the rule asks, for the report.
	About string
	check func(ctx context.Context, p *probe) error
}

// Conformances lists the rules `verity client check` holds a program to. None needs a Kafka
// cluster: brokers that never answer (a closed port) make every send's outcome fail or info and
// never ok, which is the rule a program must keep under every fault.
func Conformances() []Conformance {
	return []Conformance{
		{Name: "hello", About: "answers hello with version 1 and names its client, library and version", check: checkHello},
		{Name: "version", About: "refuses a hello that offers no version it speaks, with an error", check: checkVersion},
		{Name: "order", About: "answers a request sent before hello with an error", check: checkBeforeHello},
		{Name: "unknown", About: "answers an unknown op and a line that is no request with an error, and goes on", check: checkUnknown},
		{Name: "partitions-unreachable", About: "answers partitions with an error, not a guess, when no broker answers", check: checkPartitionsUnreachable},
		{Name: "send-unreachable", About: "answers every record sent to brokers that never answer, fail or info with an error, never ok", check: checkSendUnreachable},
		{Name: "share-unreachable", About: "with a share consumer: configures no group, reports no offsets and delivers nothing when no broker answers, " +
			"refuses an ack of a record not held, commits nothing unmarked; without one: answers every share request unknown_op", check: checkShareUnreachable},
		{Name: "stop", About: "exits within 10 s of its input's end", check: checkStop},
	}
}

// Result is how a program stood against one rule.
type Result struct {
	Name, About string
	Err         error
}

// Check holds the program cmd to every rule (or to those named in only), each on a program of
// its own, and returns the results in the order of Conformances; stderr receives the programs'
// standard error.
func Check(ctx context.Context, cmd []string, stderr io.Writer, only ...string) []Result {
	var rules []Conformance
	for _, c := range Conformances() {
		if len(only) == 0 || slices.Contains(only, c.Name) {
			rules = append(rules, c)
		}
	}
	out := make([]Result, len(rules))
	var wg sync.WaitGroup
	for i, c := range rules {
		out[i] = Result{Name: c.Name, About: c.About}
		// The rules run at once, each on a program of its own: several wait out brokers that
		// never answer.
		wg.Go(func() { out[i].Err = checkOne(ctx, c, cmd, stderr) })
	}
	wg.Wait()
	return out
}

func checkOne(ctx context.Context, c Conformance, cmd []string, stderr io.Writer) error {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	p, err := startProbe(cctx, cmd, stderr)
	if err != nil {
		return err
	}
	err = c.check(cctx, p)
	if cerr := p.stop(10 * time.Second); err == nil {
		err = cerr
	}
	if err == nil {
		err = p.malformed()
	}
	return err
}

// unreachable are brokers that never answer: a closed port on the loopback interface.
var unreachable = []string{"127.0.0.1:1"}

// probe is a program under check: requests go to its input, and every line it writes is read,
// checked for form and kept.
type probe struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan []byte
	bad    []string // lines that are not well-formed messages
	exited chan error
	nextID uint64
	// stopped: stop ran, with stopErr.
	stopped bool
	stopErr error
}

func startProbe(ctx context.Context, cmd []string, stderr io.Writer) (*probe, error) {
	if len(cmd) == 0 {
		return nil, errors.New("no program given")
	}
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	c.Stderr = stderr
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd[0], err)
	}
	p := &probe{cmd: c, in: in, lines: make(chan []byte, 1024), exited: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			line := bytes.Clone(sc.Bytes())
			if err := wellFormed(line); err != nil {
				p.bad = append(p.bad, fmt.Sprintf("%v: %.200s", err, line))
			}
			p.lines <- line
		}
		close(p.lines)
		p.exited <- c.Wait()
	}()
	return p, nil
}

// request writes a request and returns its id (0 for a line that is not a request).
func (p *probe) request(op Op, handle string, args any) (uint64, error) {
	p.nextID++
	req := Request{V: Version, ID: p.nextID, Op: op, Handle: handle}
	if info, ok := LookupOp(op); ok && info.NoReply {
		req.ID = 0
	}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return 0, err
		}
		req.Args = b
	}
	b, _ := json.Marshal(req)
	return req.ID, p.raw(b)
}

func (p *probe) raw(line []byte) error {
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("writing to the program: %w", err)
	}
	return nil
}

// next is the next line the program writes, within d.
func (p *probe) next(d time.Duration) (Message, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			return Message{}, errors.New("the program's output ended")
		}
		var m Message
		if err := json.Unmarshal(line, &m); err != nil {
			return Message{}, fmt.Errorf("a line that is not a message: %.200s", line)
		}
		return m, nil
	case <-t.C:
		return Message{}, fmt.Errorf("no line within %s", d)
	}
}

// reply waits for the reply to id, keeping the events that come meanwhile.
func (p *probe) reply(id uint64, d time.Duration, events *[]Message) (Message, error) {
	deadline := time.Now().Add(d)
	for {
		m, err := p.next(time.Until(deadline))
		if err != nil {
			return m, fmt.Errorf("waiting for the reply to request %d: %w", id, err)
		}
		if m.Event != "" {
			if events != nil {
				*events = append(*events, m)
			}
			continue
		}
		if m.ID != id {
			return m, fmt.Errorf("waiting for the reply to request %d, got one to %d", id, m.ID)
		}
		return m, nil
	}
}

func (p *probe) call(op Op, handle string, args any, d time.Duration) (Message, error) {
	id, err := p.request(op, handle, args)
	if err != nil {
		return Message{}, err
	}
	return p.reply(id, d, nil)
}

func (p *probe) hello() error {
	m, err := p.call(OpHello, "", HelloArgs{Versions: []int{Version}, Brokers: unreachable}, time.Minute)
	if err != nil {
		return err
	}
	if m.Error != nil {
		return fmt.Errorf("hello refused: %s: %s", m.Error.Name, m.Error.Text)
	}
	return nil
}

// stop closes the program's input and waits for it to exit; a second stop says what the first
// did.
func (p *probe) stop(d time.Duration) error {
	if p.stopped {
		return p.stopErr
	}
	p.stopped = true
	p.stopErr = p.stopWithin(d)
	return p.stopErr
}

func (p *probe) stopWithin(d time.Duration) error {
	_ = p.in.Close()
	t := time.NewTimer(d)
	defer t.Stop()
	go func() {
		for range p.lines { // drain what is left, so that the program's writes do not block
		}
	}()
	select {
	case <-p.exited:
		return nil
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("the program did not exit within %s of its input's end (killed)", d)
	}
}

func (p *probe) malformed() error {
	if len(p.bad) == 0 {
		return nil
	}
	return fmt.Errorf("%d malformed lines, the first: %s", len(p.bad), p.bad[0])
}

// wellFormed checks a line the program wrote against the protocol's rules for messages.
func wellFormed(line []byte) error {
	var m Message
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return fmt.Errorf("not a message: %w", err)
	}
	if m.V != Version {
		return fmt.Errorf("version %d", m.V)
	}
	if m.Event != "" {
		if m.Event != EventAnswers || m.Handle == "" || len(m.Answers) == 0 || m.ID != 0 || m.Result != nil || m.Error != nil {
			return errors.New("an event is answers for a handle, with at least one answer, and nothing else")
		}
		for _, a := range m.Answers {
			if err := a.wellFormed(); err != nil {
				return err
			}
		}
		return nil
	}
	if m.Result == nil && m.Error == nil {
		return errors.New("a reply has a result or an error")
	}
	if m.Error != nil && (m.Error.Name == "" || m.Error.Text == "") {
		return errors.New("an error has a name and a text")
	}
	return nil
}

func (a Answer) wellFormed() error {
	t, err := a.Outcome.history()
	switch {
	case err != nil:
		return fmt.Errorf("answer %d: %w", a.Tag, err)
	case a.Tag == 0:
		return errors.New("an answer names its record's tag")
	case t == "ok" && a.Error != nil:
		return fmt.Errorf("answer %d: ok with an error", a.Tag)
	case t != "ok" && a.Error == nil:
		return fmt.Errorf("answer %d: %s without an error", a.Tag, t)
	case t == "ok" && a.Offset < 0:
		return fmt.Errorf("answer %d: ok without an offset", a.Tag)
	}
	return nil
}

func checkHello(_ context.Context, p *probe) error {
	m, err := p.call(OpHello, "", HelloArgs{Versions: []int{Version}, Brokers: unreachable}, time.Minute)
	if err != nil {
		return err
	}
	if m.Error != nil {
		return fmt.Errorf("hello refused: %s: %s", m.Error.Name, m.Error.Text)
	}
	var res HelloResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		return fmt.Errorf("hello's result: %w", err)
	}
	switch {
	case res.Version != Version:
		return fmt.Errorf("chose version %d", res.Version)
	case res.Client.Name == "" || res.Client.Library == "" || res.Client.Version == "":
		return fmt.Errorf("names no client, library or version: %+v", res.Client)
	}
	return nil
}

func checkVersion(_ context.Context, p *probe) error {
	m, err := p.call(OpHello, "", HelloArgs{Versions: []int{99}, Brokers: unreachable}, time.Minute)
	if err != nil {
		return err
	}
	if m.Error == nil {
		return errors.New("accepted a hello offering only version 99")
	}
	return nil
}

func checkBeforeHello(_ context.Context, p *probe) error {
	m, err := p.call(OpPartitions, "", PartitionsArgs{ClientID: "verity-check", Topics: []string{"t"}}, time.Minute)
	if err != nil {
		return err
	}
	if m.Error == nil {
		return errors.New("answered partitions before hello without an error")
	}
	return nil
}

func checkUnknown(_ context.Context, p *probe) error {
	if err := p.hello(); err != nil {
		return err
	}
	m, err := p.call("fly", "", nil, time.Minute)
	if err != nil {
		return err
	}
	if m.Error == nil {
		return errors.New("answered the unknown op fly without an error")
	}
	if err := p.raw([]byte("this is not json")); err != nil {
		return err
	}
	if m, err = p.next(time.Minute); err != nil {
		return fmt.Errorf("after a line that is no request: %w", err)
	}
	if m.Error == nil {
		return errors.New("answered a line that is no request without an error")
	}
	m, err = p.call(OpTxnProtocol, "", nil, time.Minute)
	if err != nil {
		return fmt.Errorf("after them, the program no longer answers: %w", err)
	}
	if m.Result == nil && m.Error == nil {
		return errors.New("after them, txn_protocol got an empty reply")
	}
	return nil
}

func checkPartitionsUnreachable(_ context.Context, p *probe) error {
	if err := p.hello(); err != nil {
		return err
	}
	m, err := p.call(OpPartitions, "", PartitionsArgs{ClientID: "verity-check", Topics: []string{"t"}}, 90*time.Second)
	if err != nil {
		return err
	}
	if m.Error == nil {
		return fmt.Errorf("answered partitions of a cluster that never answers: %s", m.Result)
	}
	return nil
}

func checkSendUnreachable(_ context.Context, p *probe) error {
	if err := p.hello(); err != nil {
		return err
	}
	spec := ProducerSpec{ClientID: "verity-check", Settings: Settings{Acks: kafkaconf.AcksAll, Idempotent: true, MaxInFlight: 5, Retries: 3},
		RetryBackoff: Duration(100 * time.Millisecond), RequestTimeout: Duration(2 * time.Second), DeliveryTimeout: Duration(5 * time.Second),
		Compression: kafkaconf.CompressionNone}
	m, err := p.call(OpProducerOpen, "p1", spec, 90*time.Second)
	if err != nil {
		return err
	}
	if m.Error != nil {
		return nil // the open failed: no record can be ok
	}
	const n = 3
	for i := range n {
		if _, err := p.request(OpProducerSend, "p1", SendArgs{Tag: uint64(i + 1), Record: Record{Topic: "t", Value: fmt.Sprintf("c-%d", i+1)}}); err != nil {
			return err
		}
	}
	seen := map[uint64]bool{}
	deadline := time.Now().Add(90 * time.Second)
	for len(seen) < n {
		m, err := p.next(time.Until(deadline))
		if err != nil {
			return fmt.Errorf("%d of %d records answered: %w", len(seen), n, err)
		}
		for _, a := range m.Answers {
			switch {
			case a.Tag < 1 || a.Tag > n:
				return fmt.Errorf("an answer for tag %d, which no record sent carries", a.Tag)
			case a.Outcome == OutcomeOK:
				return fmt.Errorf("record %d answered ok by brokers that never answer", a.Tag)
			case seen[a.Tag]:
				return fmt.Errorf("record %d answered twice", a.Tag)
			}
			seen[a.Tag] = true
		}
	}
	return nil
}

func checkStop(_ context.Context, p *probe) error {
	if err := p.hello(); err != nil {
		return err
	}
	if m, err := p.call(OpTxnOpen, "t1", TxnSpec{ClientID: "verity-check", TxnID: "verity-check",
		Settings: Settings{Acks: kafkaconf.AcksAll, Idempotent: true, MaxInFlight: 5, Retries: 3},
		Timeout:  Duration(5 * time.Second), RequestTimeout: Duration(2 * time.Second)}, 90*time.Second); err != nil {
		return err
	} else if m.Error == nil {
		return errors.New("opened a transactional producer on brokers that never answer")
	}
	return p.stop(10 * time.Second)
}

// checkShareUnreachable holds a program to the share requests (an addition to version 1): a
// program without a share consumer refuses all of them with unknown_op, so that Verity can say
// it has none; one with a share consumer answers them as the cluster allows, which with brokers
// that never answer is an error for the admin requests and nothing delivered.
func checkShareUnreachable(_ context.Context, p *probe) error {
	if err := p.hello(); err != nil {
		return err
	}
	m, err := p.call(OpShareConfigure, "", ShareGroupArgs{ClientID: "verity-check", Group: "verity-check", Start: "earliest"}, 90*time.Second)
	if err != nil {
		return err
	}
	if m.Error != nil && m.Error.Name == "unknown_op" {
		for _, r := range []struct {
			op     Op
			handle string
			args   any
		}{
			{OpShareStartOffsets, "", ShareOffsetsArgs{ClientID: "verity-check", Group: "verity-check", Topics: []string{"t"}}},
			{OpShareOpen, "s1", ShareSpec{ClientID: "verity-check", Group: "verity-check", Topics: []string{"t"}}},
		} {
			m, err := p.call(r.op, r.handle, r.args, 90*time.Second)
			if err != nil {
				return err
			}
			if m.Error == nil || m.Error.Name != "unknown_op" {
				return fmt.Errorf("answered share.configure unknown_op (no share consumer), but %s with %s", r.op, m.Result)
			}
		}
		return nil
	}
	if m.Error == nil {
		return errors.New("configured a share group on brokers that never answer")
	}
	m, err = p.call(OpShareStartOffsets, "", ShareOffsetsArgs{ClientID: "verity-check", Group: "verity-check", Topics: []string{"t"}}, 90*time.Second)
	if err != nil {
		return err
	}
	if m.Error == nil {
		return fmt.Errorf("answered share.start_offsets of a cluster that never answers: %s", m.Result)
	}
	m, err = p.call(OpShareOpen, "s1", ShareSpec{ClientID: "verity-check", Group: "verity-check", Topics: []string{"t"}, MaxRecords: 10}, 90*time.Second)
	if err != nil {
		return err
	}
	if m.Error != nil {
		return nil // the open failed: nothing can be delivered
	}
	m, err = p.call(OpShareAck, "s1", ShareAckArgs{Type: "accept", Records: []Place{{Topic: "t", Partition: 0, Offset: 0}}}, 90*time.Second)
	if err != nil {
		return err
	}
	if m.Error == nil {
		return errors.New("took an ack of a record the member never polled")
	}
	w := Duration(2 * time.Second)
	m, err = p.call(OpSharePoll, "s1", PollArgs{Max: 10, Wait: &w}, 90*time.Second)
	if err != nil {
		return err
	}
	var polled SharePollResult
	if m.Result != nil {
		if err := json.Unmarshal(m.Result, &polled); err != nil {
			return fmt.Errorf("share.poll's result: %w", err)
		}
	}
	if len(polled.Deliveries) > 0 {
		return fmt.Errorf("delivered %d records from brokers that never answer", len(polled.Deliveries))
	}
	m, err = p.call(OpShareCommit, "s1", ShareCommitArgs{}, 90*time.Second)
	if err != nil {
		return err
	}
	var committed ShareCommitResult
	if m.Error == nil {
		if err := json.Unmarshal(m.Result, &committed); err != nil {
			return fmt.Errorf("share.commit's result: %w", err)
		}
	}
	if len(committed.Results) > 0 {
		return fmt.Errorf("a commit with nothing marked gave results: %s", m.Result)
	}
	if m, err = p.call(OpClose, "s1", nil, 90*time.Second); err != nil {
		return err
	} else if m.Error != nil {
		return fmt.Errorf("close of a share consumer refused: %s", m.Error.Text)
	}
	return nil
}

// Report is the results as lines: a mark, the rule and what it asks, and why it failed.
func Report(rs []Result) (string, bool) {
	var b strings.Builder
	ok := true
	for _, r := range rs {
		mark := "ok  "
		if r.Err != nil {
			mark, ok = "FAIL", false
		}
		fmt.Fprintf(&b, "%s %-24s %s\n", mark, r.Name, r.About)
		if r.Err != nil {
			fmt.Fprintf(&b, "     %s\n", r.Err)
		}
	}
	return b.String(), ok
}
