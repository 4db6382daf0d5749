package remote

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// programEnv makes the test binary a client program: the mode it plays.
const programEnv = "VERITY_REMOTE_TEST_PROGRAM"

func TestMain(m *testing.M) {
	if mode := os.Getenv(programEnv); mode != "" {
		os.Exit(program(mode))
	}
	os.Exit(m.Run())
}

// program serves the fake client of mode on the process's standard input and output:
//
//   - good: a cluster that never answers, as a client meets one;
//   - bad-ok: acknowledges every record and knows partitions without a cluster;
//   - bad-stay: does not exit when its input ends;
//   - bad-silent: answers a failed record with outcome fail and no error;
//   - no-share: a client without a share consumer (every share request answered unknown_op);
//   - bad-share: a share consumer that takes an ack of a record it never delivered.
func program(mode string) int {
	info := ClientInfo{Name: "fake", Library: "fake.example/kafka", Version: "1.0"}
	var w io.Writer = os.Stdout
	if mode == "bad-silent" {
		w = &stripErrors{w: os.Stdout}
	}
	err := Serve(context.Background(), os.Stdin, w, info, func(HelloArgs) (kclient.Client, error) {
		d := &down{ok: mode == "bad-ok"}
		if mode == "no-share" {
			return d, nil
		}
		return &downShare{down: d, takesAnyAck: mode == "bad-share"}, nil
	}, nil)
	if mode == "bad-stay" {
		time.Sleep(time.Hour)
	}
	if err != nil {
		return 1
	}
	return 0
}

// stripErrors drops the error of every answer it passes on: a program that says fail without
// saying why.
type stripErrors struct{ w io.Writer }

func (s *stripErrors) Write(b []byte) (int, error) {
	line := string(b)
	if strings.Contains(line, `"event":"answers"`) {
		for {
			i := strings.Index(line, `"error":{`)
			if i < 0 {
				break
			}
			j := strings.Index(line[i:], "},")
			line = line[:i] + line[i+j+2:]
		}
	}
	if _, err := s.w.Write([]byte(line)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// down is a client of a cluster that never answers; with ok, one that pretends it does.
type down struct{ ok bool }

var errDown = errors.New("dial tcp 127.0.0.1:1: connect: connection refused")

func (d *down) Name() kafkaconf.ClientName { return "fake" }
func (d *down) Partitions(context.Context, string, []string) (map[string][]int32, error) {
	if d.ok {
		return map[string][]int32{"t": {0}}, nil
	}
	return nil, errDown
}
func (d *down) TxnProtocol(context.Context) (kafkaconf.TxnProtocol, error) { return "", errDown }
func (d *down) OpenProducer(context.Context, kclient.ProducerSpec) (kclient.Producer, map[string][]int32, []string, error) {
	return &downProducer{ok: d.ok, ready: make(chan struct{}, 1)}, map[string][]int32{"t": {0}}, nil, nil
}
func (d *down) OpenTxn(context.Context, kclient.TxnSpec) (kclient.Txn, error) { return nil, errDown }
func (d *down) OpenConsumer(context.Context, kclient.ConsumerSpec) (kclient.Consumer, error) {
	return nil, errDown
}
func (d *down) OpenMember(context.Context, kclient.MemberSpec) (kclient.Member, error) {
	return nil, errDown
}

// downShare is down with a share consumer: its admin requests fail as the cluster never
// answers (with ok, they pretend it did), its polls deliver nothing.
type downShare struct {
	*down
	takesAnyAck bool
}

func (d *downShare) ConfigureShareGroup(context.Context, string, kclient.ShareGroupSettings) error {
	if d.ok {
		return nil
	}
	return errDown
}

func (d *downShare) ShareStartOffsets(context.Context, string, string, []string) (map[string]map[int32]int64, error) {
	return nil, errDown
}

func (d *downShare) OpenShareConsumer(context.Context, kclient.ShareConsumerSpec) (kclient.ShareConsumer, error) {
	return &downShareConsumer{takesAnyAck: d.takesAnyAck}, nil
}

type downShareConsumer struct{ takesAnyAck bool }

func (c *downShareConsumer) Poll(ctx context.Context, wait time.Duration, _ int) ([]kclient.Delivery, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, nil
}

func (c *downShareConsumer) Ack(t kclient.AckType, ds ...kclient.Delivery) error {
	if c.takesAnyAck || len(ds) == 0 {
		return nil
	}
	return errors.New("share consumer: the member does not hold it")
}

func (c *downShareConsumer) Commit(context.Context) []kclient.AckResult { return nil }
func (c *downShareConsumer) Close()                                     {}

type downProducer struct {
	ok      bool
	ready   chan struct{}
	pending []kclient.Answer
	next    int64
}

func (p *downProducer) Hand(_ context.Context, s kclient.Send) bool {
	a := kclient.Answer{Tag: s.Tag, Offset: -1, Err: errDown, Outcome: kclient.Outcome{Type: history.Fail, Rule: "network", Why: "never sent"}}
	if p.ok {
		a = kclient.Answer{Tag: s.Tag, Offset: p.next, Outcome: kclient.Outcome{Type: history.OK}}
		p.next++
	}
	p.pending = append(p.pending, a)
	select {
	case p.ready <- struct{}{}:
	default:
	}
	return true
}
func (p *downProducer) Ready() <-chan struct{} { return p.ready }
func (p *downProducer) Take(buf []kclient.Answer) []kclient.Answer {
	buf = append(buf, p.pending...)
	p.pending = nil
	return buf
}
func (p *downProducer) Retries() int64 { return 0 }
func (p *downProducer) Close()         {}

func checkMode(t *testing.T, mode string, only ...string) map[string]error {
	t.Setenv(programEnv, mode)
	got := map[string]error{}
	for _, r := range Check(t.Context(), []string{os.Args[0], "-test.run=^$"}, io.Discard, only...) {
		got[r.Name] = r.Err
	}
	return got
}

// A program that keeps the rules passes; each known-bad one is caught by the rule it breaks.
func TestConformance(t *testing.T) {
	for name, err := range checkMode(t, "good") {
		require.NoError(t, err, name)
	}
	bad := checkMode(t, "bad-ok")
	require.ErrorContains(t, bad["send-unreachable"], "answered ok by brokers that never answer")
	require.ErrorContains(t, bad["partitions-unreachable"], "answered partitions of a cluster that never answers")
	require.NoError(t, bad["hello"])

	silent := checkMode(t, "bad-silent", "send-unreachable")
	require.ErrorContains(t, silent["send-unreachable"], "fail without an error")

	require.NoError(t, checkMode(t, "no-share", "share-unreachable")["share-unreachable"], "a program without a share consumer keeps the rule")
	require.ErrorContains(t, bad["share-unreachable"], "configured a share group on brokers that never answer")
	badShare := checkMode(t, "bad-share", "share-unreachable")
	require.ErrorContains(t, badShare["share-unreachable"], "took an ack of a record the member never polled")

	stay := checkMode(t, "bad-stay", "stop")
	require.ErrorContains(t, stay["stop"], "did not exit within 10s of its input's end")

	report, ok := Report(Check(t.Context(), []string{"/nonexistent/program"}, io.Discard, "hello"))
	require.False(t, ok)
	require.Contains(t, report, "FAIL hello")
}
