package franz

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

var _ kclient.ShareClient = (*Client)(nil)

// shareConsumer is franz-go's kclient.ShareConsumer.
//
// franz-go acknowledges on its own in two places, which the seam must keep out of the history's
// way: a PollRecords accepts every record of the previous poll not yet marked (so Poll refuses
// while the member holds records), and a clean Close releases what the member holds (so Close
// cuts the member's connections first, as a crash would). Acks are marked with MarkAcks only in
// Commit, all of a partition's of one type in one call, so that franz-go sends them together;
// it may still send them on a ShareFetch rather than a ShareAcknowledge, before FlushAcks asks,
// and reports every answer through the ShareAckCallback, which Commit collects.
type shareConsumer struct {
	cl    *kgo.Client
	log   *slog.Logger
	conns *conns

	// held are the records polled and not yet acknowledged with a final type; marked are the
	// acknowledgements since the last Commit, in the order Ack was called. Only the owning
	// goroutine touches them.
	held   map[place]*kgo.Record
	marked []shareMark

	mu sync.Mutex
	// collecting: a Commit waits for answers; results are those franz-go reported since it
	// began.
	collecting bool
	results    kgo.ShareAckResults
	// lost counts share requests whose answer was lost after they were written: franz-go may
	// have sent them again, so a refusal of the second may follow the first's success.
	lost atomic.Int64
}

type place struct {
	topic     string
	partition int32
	offset    int64
}

type shareMark struct {
	at  place
	typ kclient.AckType
}

func (c *Client) OpenShareConsumer(_ context.Context, s kclient.ShareConsumerSpec) (kclient.ShareConsumer, error) {
	if s.Group == "" || len(s.Topics) == 0 {
		return nil, &kclient.PermanentError{Err: errors.New("share consumer: a group and topics are needed")}
	}
	sc := &shareConsumer{log: kit.OrDiscard(s.Log), conns: &conns{open: map[*conn]struct{}{}}, held: map[place]*kgo.Record{}}
	opts := append(c.base(s.ClientID),
		kgo.WithLogger(NewLog(sc.log, nil)),
		kgo.Dialer(sc.conns.dial),
		kgo.WithHooks(lostAnswers{sc}),
		kgo.ShareGroup(s.Group),
		kgo.ConsumeTopics(s.Topics...),
		kgo.ShareAckCallback(sc.answered),
	)
	if s.MaxRecords > 0 {
		// Strict: the broker splits batches to keep to it, and franz-go fetches one request
		// per poll instead of ahead.
		opts = append(opts, kgo.ShareMaxRecords(int32(min(s.MaxRecords, math.MaxInt32))), kgo.ShareMaxRecordsStrict())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, &kclient.PermanentError{Err: fmt.Errorf("share consumer: creating the franz-go client: %w", err)}
	}
	sc.cl = cl
	return sc, nil
}

// Poll returns the records of one PollRecords: a second in the same Poll would accept the first's.
func (c *shareConsumer) Poll(ctx context.Context, wait time.Duration, max int) ([]kclient.Delivery, error) {
	if len(c.held) > 0 {
		return nil, fmt.Errorf("share consumer: %d records of an earlier poll are not acknowledged (first %s); polling would accept them", len(c.held), c.firstHeld())
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	fs := c.cl.PollRecords(pctx, max)
	var out []kclient.Delivery
	var errs []error
	fs.EachError(func(t string, p int32, err error) {
		switch {
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, kgo.ErrClientClosed):
			// The wait is over, or the member is closing.
		default:
			errs = append(errs, fmt.Errorf("%s-%d: %w", t, p, err))
		}
	})
	fs.EachRecord(func(r *kgo.Record) {
		hr := history.Record{Topic: r.Topic, Partition: r.Partition, Value: string(r.Value)}.At(r.Offset)
		if len(r.Key) > 0 {
			hr.Key = string(r.Key)
		}
		c.held[place{r.Topic, r.Partition, r.Offset}] = r
		out = append(out, kclient.Delivery{Record: hr, Count: int(r.DeliveryCount())})
	})
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("share consumer: polling: %w", err)
	}
	return out, nil
}

func (c *shareConsumer) firstHeld() string {
	p := slices.SortedFunc(maps.Keys(c.held), comparePlaces)[0]
	return fmt.Sprintf("%s-%d@%d", p.topic, p.partition, p.offset)
}

func comparePlaces(a, b place) int {
	return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition), cmp.Compare(a.offset, b.offset))
}

func (c *shareConsumer) Ack(t kclient.AckType, ds ...kclient.Delivery) error {
	if _, err := history.ParseAckType(string(t)); err != nil {
		return err
	}
	adding := map[place]bool{}
	for _, m := range c.marked {
		adding[m.at] = true
	}
	for _, d := range ds {
		at := place{d.Record.Topic, d.Record.Partition, -1}
		if d.Record.Offset != nil {
			at.offset = *d.Record.Offset
		}
		if _, ok := c.held[at]; !ok {
			return fmt.Errorf("share consumer: %s %s-%d@%d: the member does not hold it", t, at.topic, at.partition, at.offset)
		}
		if adding[at] {
			return fmt.Errorf("share consumer: %s %s-%d@%d: already marked since the last commit", t, at.topic, at.partition, at.offset)
		}
		adding[at] = true
	}
	for _, d := range ds {
		c.marked = append(c.marked, shareMark{place{d.Record.Topic, d.Record.Partition, *d.Record.Offset}, t})
	}
	return nil
}

func (c *shareConsumer) Commit(ctx context.Context) []kclient.AckResult {
	if len(c.marked) == 0 {
		return nil
	}
	marked := c.marked
	c.marked = nil
	c.mu.Lock()
	c.collecting, c.results = true, nil
	c.mu.Unlock()
	lost := c.lost.Load()

	type tp struct {
		topic     string
		partition int32
	}
	type group struct {
		tp
		typ kclient.AckType
	}
	byGroup := map[group][]*kgo.Record{}
	var groups []group
	acks := map[tp][]kclient.Ack{}
	var tps []tp
	for _, m := range marked {
		g := group{tp{m.at.topic, m.at.partition}, m.typ}
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], c.held[m.at])
		if _, ok := acks[g.tp]; !ok {
			tps = append(tps, g.tp)
		}
		acks[g.tp] = append(acks[g.tp], kclient.Ack{Offset: m.at.offset, Type: m.typ})
		if m.typ.Final() {
			delete(c.held, m.at)
		}
	}
	for _, g := range groups {
		c.cl.MarkAcks(ackStatus(g.typ), byGroup[g]...)
	}
	flushErr := c.cl.FlushAcks(ctx)

	c.mu.Lock()
	results := c.results
	c.collecting, c.results = false, nil
	c.mu.Unlock()
	relayed := c.lost.Load() != lost
	answers := map[tp][]error{}
	for _, r := range results {
		k := tp{r.Topic, r.Partition}
		answers[k] = append(answers[k], r.Err)
	}
	out := make([]kclient.AckResult, 0, len(tps))
	for _, k := range tps {
		typ, text := AckOutcome(answers[k], flushErr, relayed)
		out = append(out, kclient.AckResult{Topic: k.topic, Partition: k.partition, Acks: acks[k], Type: typ, Error: text})
	}
	slices.SortFunc(out, func(a, b kclient.AckResult) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

func ackStatus(t kclient.AckType) kgo.AckStatus {
	switch t {
	case kclient.AckAccept:
		return kgo.AckAccept
	case kclient.AckRelease:
		return kgo.AckRelease
	case kclient.AckReject:
		return kgo.AckReject
	case kclient.AckRenew:
		return kgo.AckRenew
	}
	return 0
}

// answered is the ShareAckCallback: franz-go calls it, one call at a time, with the answers of
// each request that carried acknowledgements (and of acknowledgements it dropped unsent).
// Answers outside a Commit are of gap acknowledgements franz-go makes itself (offsets a
// compacted log no longer has), or of a Commit that stopped waiting: neither is reported.
func (c *shareConsumer) answered(_ *kgo.Client, rs kgo.ShareAckResults) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.collecting {
		c.results = append(c.results, rs...)
	}
}

// AckOutcome is what franz-go's answers for one partition's acknowledgements in one commit
// say: ok when every answer is a success; fail when every answer is an error that proves the
// acknowledgements were not applied (AckNotApplied) and no share request's answer was lost
// meanwhile (relayed: franz-go sends a request again after a lost answer, and the second is
// refused with INVALID_RECORD_STATE when the first was applied); info otherwise: no answer,
// answers that differ (franz-go sent the partition's acknowledgements in two requests), or an
// error that leaves it open. flushErr is FlushAcks's error (the wait for the answers ended).
func AckOutcome(answers []error, flushErr error, relayed bool) (history.Type, string) {
	if len(answers) == 0 {
		why := "no answer for the acknowledgements"
		if flushErr != nil {
			why += ": " + text(flushErr)
		}
		return history.Info, why
	}
	var texts []string
	oks, proven := 0, 0
	for _, err := range answers {
		if err == nil {
			oks++
			continue
		}
		texts = append(texts, text(err))
		if AckNotApplied(err) {
			proven++
		}
	}
	switch {
	case oks == len(answers):
		return history.OK, ""
	case oks > 0:
		return history.Info, fmt.Sprintf("answers differ: %d ok, errors %s", oks, strings.Join(texts, "; "))
	case proven == len(answers) && relayed:
		return history.Info, strings.Join(texts, "; ") + " (after a lost answer: a resent request may have been refused because the first was applied)"
	case proven == len(answers):
		return history.Fail, strings.Join(texts, "; ")
	}
	return history.Info, strings.Join(texts, "; ")
}

// AckNotApplied says whether err, as a partition's answer to share acknowledgements, proves that
// none of them was applied. The broker checks a partition's acknowledgement batches against the
// records' states before it changes any, and rolls every change back when one fails or
// persisting the new state fails, so a refusal it makes before persisting leaves the partition
// as it was:
//
//   - INVALID_RECORD_STATE: a record is not acquired by this member (its lock ended, or it was
//     delivered to another), or was acknowledged already. franz-go also gives it to
//     acknowledgements it drops unsent because the partition moved to another broker.
//   - INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_NOT_FOUND: the session is checked before any
//     acknowledgement (franz-go gives the first to acknowledgements of an ended session it drops
//     unsent too).
//   - NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID:
//     the broker has no share partition to apply them to.
//   - INVALID_REQUEST: batches the broker refuses to read.
//   - GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED: refused before anything is read.
//
// Everything else leaves it open: REQUEST_TIMED_OUT, UNKNOWN_SERVER_ERROR and the share
// coordinator's errors (the new state may have been persisted before the error), a connection
// lost after the request was written, the wait ended (context), franz-go's "broker omitted
// partition" (it sent them and got no answer for the partition), and franz-go's "share consumer
// has left the group" (unsent in fact, but franz-go does not export the error to tell it by).
func AckNotApplied(err error) bool {
	ke, ok := errors.AsType[*kerr.Error](err)
	if !ok {
		return false
	}
	switch ke {
	case kerr.InvalidRecordState, kerr.InvalidShareSessionEpoch, kerr.ShareSessionNotFound,
		kerr.NotLeaderForPartition, kerr.FencedLeaderEpoch, kerr.UnknownTopicOrPartition, kerr.UnknownTopicID,
		kerr.InvalidRequest, kerr.GroupAuthorizationFailed, kerr.TopicAuthorizationFailed:
		return true
	}
	return false
}

// Close cuts the member's connections and stops its client without a word to the brokers: the
// broker ends the share session with the connection and puts what the member held back for
// delivery, as after a crash. franz-go's own Close would release the records first (and finish
// the session cleanly), which the history would not show.
func (c *shareConsumer) Close() {
	c.conns.sever()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	// With an ended context the leave sends nothing (and no connection is left to send on);
	// Close then waits for it, and for the client's goroutines, briefly.
	_ = c.cl.LeaveGroupContext(done)
	c.cl.Close()
}

// lostAnswers counts the share requests written whose answer did not come back.
type lostAnswers struct{ c *shareConsumer }

var _ kgo.HookBrokerE2E = lostAnswers{}

func (h lostAnswers) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if (key == int16(kmsg.ShareAcknowledge) || key == int16(kmsg.ShareFetch)) && e2e.WriteErr == nil && e2e.ReadErr != nil {
		h.c.lost.Add(1)
	}
}

// conns dials the member's connections and can cut them all at once.
type conns struct {
	mu   sync.Mutex
	cut  bool
	open map[*conn]struct{}
}

type conn struct {
	net.Conn
	owner *conns
}

func (c *conn) Close() error {
	c.owner.mu.Lock()
	delete(c.owner.open, c)
	c.owner.mu.Unlock()
	return c.Conn.Close()
}

var errSevered = errors.New("share consumer: crashed")

// dial is franz-go's default dial (Base's 5 s timeout), remembered.
func (cs *conns) dial(ctx context.Context, network, host string) (net.Conn, error) {
	cs.mu.Lock()
	cut := cs.cut
	cs.mu.Unlock()
	if cut {
		return nil, errSevered
	}
	nc, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.cut {
		_ = nc.Close()
		return nil, errSevered
	}
	c := &conn{Conn: nc, owner: cs}
	cs.open[c] = struct{}{}
	return c, nil
}

func (cs *conns) sever() {
	cs.mu.Lock()
	cs.cut = true
	open := cs.open
	cs.open = map[*conn]struct{}{}
	cs.mu.Unlock()
	for c := range open {
		_ = c.Conn.Close()
	}
}

// ConfigureShareGroup sets the group's configs with IncrementalAlterConfigs on its GROUP resource.
func (c *Client) ConfigureShareGroup(ctx context.Context, clientID string, s kclient.ShareGroupSettings) error {
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, s.Group
	set := func(name, value string) {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
		res.Configs = append(res.Configs, cfg)
	}
	if s.Start != "" {
		set("share.auto.offset.reset", string(s.Start))
	}
	if s.LockDuration > 0 {
		set("share.record.lock.duration.ms", strconv.FormatInt(s.LockDuration.Milliseconds(), 10))
	}
	if s.DeliveryLimit > 0 {
		set("share.delivery.count.limit", strconv.Itoa(s.DeliveryLimit))
	}
	if len(res.Configs) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(c.base(clientID)...)
	if err != nil {
		return fmt.Errorf("configuring share group %s: creating a franz-go client: %w", s.Group, err)
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("configuring share group %s: %w", s.Group, err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			msg := ""
			if r.ErrorMessage != nil {
				msg = ": " + *r.ErrorMessage
			}
			return fmt.Errorf("configuring share group %s: %w%s", s.Group, err, msg)
		}
	}
	return nil
}

// ShareStartOffsets asks the group's coordinator (DescribeShareGroupOffsets, which franz-go
// routes to it) for every partition of topics.
func (c *Client) ShareStartOffsets(ctx context.Context, clientID, group string, topics []string) (map[string]map[int32]int64, error) {
	cl, err := kgo.NewClient(c.base(clientID)...)
	if err != nil {
		return nil, fmt.Errorf("share start offsets of %s: creating a franz-go client: %w", group, err)
	}
	defer cl.Close()
	parts, err := partitions(ctx, cl, topics)
	if err != nil {
		return nil, fmt.Errorf("share start offsets of %s: %w", group, err)
	}
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	for _, t := range topics {
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic, rt.Partitions = t, parts[t]
		rg.Topics = append(rg.Topics, rt)
	}
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("share start offsets of %s: %w", group, err)
	}
	out := map[string]map[int32]int64{}
	for _, g := range resp.Groups {
		if err := errCode(g.ErrorCode, g.ErrorMessage); err != nil {
			return nil, fmt.Errorf("share start offsets of %s: %w", group, err)
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if err := errCode(p.ErrorCode, p.ErrorMessage); err != nil {
					return nil, fmt.Errorf("share start offsets of %s: %s-%d: %w", group, t.Topic, p.Partition, err)
				}
				if p.StartOffset < 0 {
					continue // not initialised: the group has not read the partition yet
				}
				if out[t.Topic] == nil {
					out[t.Topic] = map[int32]int64{}
				}
				out[t.Topic][p.Partition] = p.StartOffset
			}
		}
	}
	return out, nil
}

func errCode(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil || msg == nil || *msg == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, *msg)
}
