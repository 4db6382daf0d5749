package remote

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/results/schematest"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// fakeShare is fake with a share consumer: it delivers offsets 0, 1, 2 of t-0 (counts 1, 2, 1)
// and, on commit, answers ok for t-0 and INVALID_RECORD_STATE (fail) for t-1.
type fakeShare struct {
	*fake
	settings []kclient.ShareGroupSettings
	specs    []kclient.ShareConsumerSpec
	acks     map[kclient.AckType][]history.Record
	closed   bool
	// hold, when set, keeps every commit from answering until it is closed.
	hold chan struct{}
}

func (f *fakeShare) ConfigureShareGroup(_ context.Context, _ string, s kclient.ShareGroupSettings) error {
	if s.LockDuration > 0 && s.LockDuration < 15*time.Second {
		return &kclient.Error{Name: "INVALID_CONFIG", Text: "share.record.lock.duration.ms below the brokers' least"}
	}
	f.settings = append(f.settings, s)
	return nil
}

func (f *fakeShare) ShareStartOffsets(_ context.Context, _, _ string, topics []string) (map[string]map[int32]int64, error) {
	return map[string]map[int32]int64{topics[0]: {0: 3, 2: 17}}, nil
}

func (f *fakeShare) OpenShareConsumer(_ context.Context, s kclient.ShareConsumerSpec) (kclient.ShareConsumer, error) {
	s.Log = nil
	f.specs = append(f.specs, s)
	return &fakeShareConsumer{f: f, held: map[int64]bool{}}, nil
}

type fakeShareConsumer struct {
	f      *fakeShare
	polled bool
	held   map[int64]bool
	marked []kclient.Ack
	parts  []int32
}

func (c *fakeShareConsumer) Poll(context.Context, time.Duration, int) ([]kclient.Delivery, error) {
	if c.polled {
		return nil, errors.New("share consumer: fetching t-1: NOT_LEADER_OR_FOLLOWER")
	}
	c.polled = true
	var out []kclient.Delivery
	for off, n := range []int{1, 2, 1} {
		c.held[int64(off)] = true
		out = append(out, kclient.Delivery{Record: history.Record{Topic: "t", Key: "k", Value: "v"}.At(int64(off)), Count: n})
	}
	out = append(out, kclient.Delivery{Record: history.Record{Topic: "t", Partition: 1, Value: "w"}.At(9), Count: 4})
	return out, nil
}

func (c *fakeShareConsumer) Ack(t kclient.AckType, ds ...kclient.Delivery) error {
	for _, d := range ds {
		if d.Record.Partition == 0 && !c.held[*d.Record.Offset] {
			return errors.New("share consumer: the member does not hold it")
		}
	}
	for _, d := range ds {
		c.marked = append(c.marked, kclient.Ack{Offset: *d.Record.Offset, Type: t})
		c.parts = append(c.parts, d.Record.Partition)
		c.f.acks[t] = append(c.f.acks[t], d.Record)
	}
	return nil
}

func (c *fakeShareConsumer) Commit(context.Context) []kclient.AckResult {
	if c.f.hold != nil {
		<-c.f.hold
	}
	var p0, p1 []kclient.Ack
	for i, a := range c.marked {
		if c.parts[i] == 0 {
			p0 = append(p0, a)
		} else {
			p1 = append(p1, a)
		}
	}
	c.marked, c.parts = nil, nil
	return []kclient.AckResult{{Topic: "t", Partition: 0, Acks: p0, Type: history.OK},
		{Topic: "t", Partition: 1, Acks: p1, Type: history.Fail, Error: "INVALID_RECORD_STATE: the record is not acquired"}}
}

func (c *fakeShareConsumer) Close() { c.f.closed = true }

// The share requests make the round trip with their meaning: the group's settings, the start
// offsets, deliveries with their counts (and a poll's error beside its records), acks refused for
// records not held, per-partition commit outcomes with the broker's error; every line on both
// sides is one the schema accepts.
func TestShareRoundTrip(t *testing.T) {
	f := &fakeShare{fake: &fake{}, acks: map[kclient.AckType][]history.Record{}}
	toProg, fromVerity := io.Pipe()
	toVerity, fromProg := io.Pipe()
	reqs, msgs := &tee{w: fromVerity}, &tee{w: fromProg}
	served := make(chan error, 1)
	go func() {
		served <- Serve(context.Background(), toProg, msgs, ClientInfo{Name: "fake", Library: "fake.example/kafka", Version: "1.0"},
			func(HelloArgs) (kclient.Client, error) { return f, nil }, nil)
		_ = fromProg.Close()
	}()
	c, err := Dial(t.Context(), toVerity, reqs, HelloArgs{Brokers: []string{"b1:9092"}}, nil)
	require.NoError(t, err)
	ctx := t.Context()

	gs := kclient.ShareGroupSettings{Group: "g", Start: kclient.ShareStartEarliest, LockDuration: 15 * time.Second, DeliveryLimit: 4}
	require.NoError(t, c.ConfigureShareGroup(ctx, "admin", gs))
	require.Equal(t, []kclient.ShareGroupSettings{gs}, f.settings)
	err = c.ConfigureShareGroup(ctx, "admin", kclient.ShareGroupSettings{Group: "g", LockDuration: time.Second})
	var ke *kclient.Error
	require.ErrorAs(t, err, &ke)
	require.Equal(t, "INVALID_CONFIG", ke.Name)
	so, err := c.ShareStartOffsets(ctx, "admin", "g", []string{"t"})
	require.NoError(t, err)
	require.Equal(t, map[string]map[int32]int64{"t": {0: 3, 2: 17}}, so)

	spec := kclient.ShareConsumerSpec{ClientID: "m1", Group: "g", Topics: []string{"t"}, MaxRecords: 30}
	m, err := c.OpenShareConsumer(ctx, spec)
	require.NoError(t, err)
	require.Equal(t, []kclient.ShareConsumerSpec{spec}, f.specs)
	ds, err := m.Poll(ctx, time.Second, 10)
	require.NoError(t, err)
	require.Len(t, ds, 4)
	require.Equal(t, []int{1, 2, 1, 4}, []int{ds[0].Count, ds[1].Count, ds[2].Count, ds[3].Count})
	require.Equal(t, "k", ds[1].Record.Key)
	require.Equal(t, int64(1), *ds[1].Record.Offset)

	require.ErrorContains(t, m.Ack(kclient.AckAccept, kclient.Delivery{Record: history.Record{Topic: "t"}.At(7)}), "does not hold it")
	require.Error(t, m.Ack("maybe", ds[0]), "a type the history does not know")
	require.NoError(t, m.Ack(kclient.AckAccept, ds[0], ds[2]))
	require.NoError(t, m.Ack(kclient.AckRelease, ds[1], ds[3]))
	rs := m.Commit(ctx)
	require.Equal(t, []kclient.AckResult{
		{Topic: "t", Partition: 0, Acks: []kclient.Ack{{Offset: 0, Type: kclient.AckAccept}, {Offset: 2, Type: kclient.AckAccept}, {Offset: 1, Type: kclient.AckRelease}},
			Type: history.OK},
		{Topic: "t", Partition: 1, Acks: []kclient.Ack{{Offset: 9, Type: kclient.AckRelease}}, Type: history.Fail,
			Error: "INVALID_RECORD_STATE: the record is not acquired"},
	}, rs)
	require.Empty(t, m.Commit(ctx), "nothing marked since")
	ds, err = m.Poll(ctx, time.Second, 10)
	require.ErrorContains(t, err, "NOT_LEADER_OR_FOLLOWER")
	require.Empty(t, ds)
	m.Close()
	require.True(t, f.closed)

	require.NoError(t, c.Close())
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10 s of its input's end")
	}
	for _, side := range []*tee{reqs, msgs} {
		for _, line := range strings.Split(strings.TrimSpace(side.lines.String()), "\n") {
			schematest.Valid(t, schematest.ClientProtocol, []byte(line))
		}
	}
}

// A program without a share consumer (one that answers the share requests unknown_op, as one
// written before them does) makes every share call say so at once, and an open permanently.
func TestNoShareConsumer(t *testing.T) {
	c, _, _, stop := pair(t, &fake{})
	defer stop()
	_, err := c.OpenShareConsumer(t.Context(), kclient.ShareConsumerSpec{Group: "g", Topics: []string{"t"}})
	require.ErrorIs(t, err, ErrNoShare)
	require.True(t, kclient.IsPermanent(err))
	require.ErrorIs(t, c.ConfigureShareGroup(t.Context(), "a", kclient.ShareGroupSettings{Group: "g", Start: kclient.ShareStartEarliest}), ErrNoShare)
	_, err = c.ShareStartOffsets(t.Context(), "a", "g", []string{"t"})
	require.ErrorIs(t, err, ErrNoShare)
	require.EqualError(t, err, "share start offsets of g: share.start_offsets: this client program has no share consumer (KIP-932)")
}

// A commit whose answer never comes is unknown for every partition marked, with why.
func TestShareCommitWithoutAnswer(t *testing.T) {
	f := &fakeShare{fake: &fake{}, acks: map[kclient.AckType][]history.Record{}, hold: make(chan struct{})}
	defer close(f.hold)
	toProg, fromVerity := io.Pipe()
	toVerity, fromProg := io.Pipe()
	go func() {
		_ = Serve(context.Background(), toProg, fromProg, ClientInfo{Name: "fake"}, func(HelloArgs) (kclient.Client, error) { return f, nil }, nil)
		_ = fromProg.Close()
	}()
	c, err := Dial(t.Context(), toVerity, fromVerity, HelloArgs{Brokers: []string{"b1:9092"}}, nil)
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	m, err := c.OpenShareConsumer(t.Context(), kclient.ShareConsumerSpec{Group: "g", Topics: []string{"t"}})
	require.NoError(t, err)
	ds, err := m.Poll(t.Context(), time.Second, 10)
	require.NoError(t, err)
	require.NoError(t, m.Ack(kclient.AckAccept, ds...))
	// The program answers only after the wait has ended.
	ended, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	rs := m.Commit(ended)
	require.Len(t, rs, 2)
	for _, r := range rs {
		require.Equal(t, history.Info, r.Type)
		require.Contains(t, r.Error, "no answer for the acknowledgements")
	}
	require.Len(t, rs[0].Acks, 3)
}
