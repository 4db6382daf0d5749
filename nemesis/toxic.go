package nemesis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/kafkatoxic"
)

// LinkToxic puts Toxiproxy toxics on a set of links: every toxic on every link, each under a
// name unique to the injection, so that overlapping faults on one link come off one by one.
// Event Kind (latency, bandwidth, timeout, reset-peer, slow-close, limit-data, drop-request,
// hold-request), then "heal".
//
// Streams: "upstream" is what the link's From sends (requests), "downstream" what comes back
// (responses; for a follower's fetch link, the fetched records).
type LinkToxic struct {
	Kind   string
	Links  LinkSet
	Toxics []harness.Toxic
}

// Latency delays every chunk of the responses on links by d ± jitter: each request/response
// round trip gets at least d - jitter slower.
func Latency(links LinkSet, d, jitter time.Duration) LinkToxic {
	return LinkToxic{Kind: "latency", Links: links, Toxics: []harness.Toxic{harness.Latency("downstream", d, jitter)}}
}

// Bandwidth caps both directions of links at kbps kilobytes per second.
func Bandwidth(links LinkSet, kbps int64) LinkToxic {
	return LinkToxic{Kind: "bandwidth", Links: links, Toxics: []harness.Toxic{
		harness.Bandwidth("upstream", kbps), harness.Bandwidth("downstream", kbps)}}
}

// Timeout stops all data both ways on links and, after `after` (0: never, a black hole held
// until the heal), closes the connections.
func Timeout(links LinkSet, after time.Duration) LinkToxic {
	return LinkToxic{Kind: "timeout", Links: links, Toxics: []harness.Toxic{
		harness.Timeout("upstream", after), harness.Timeout("downstream", after)}}
}

// ResetPeer resets every connection on links with a TCP RST once it has carried requests for
// `after` (0: at once), new connections included, while the fault lasts.
func ResetPeer(links LinkSet, after time.Duration) LinkToxic {
	return LinkToxic{Kind: "reset-peer", Links: links, Toxics: []harness.Toxic{harness.ResetPeer("upstream", after)}}
}

// SlowClose delays the close of connections on links by d (the peer sees the close late).
func SlowClose(links LinkSet, d time.Duration) LinkToxic {
	return LinkToxic{Kind: "slow-close", Links: links, Toxics: []harness.Toxic{harness.SlowClose("downstream", d)}}
}

// LimitData closes each connection on links once n bytes of responses have come back through
// it (counted per connection from the moment the toxic is added).
func LimitData(links LinkSet, n int64) LinkToxic {
	return LinkToxic{Kind: "limit-data", Links: links, Toxics: []harness.Toxic{harness.LimitData("downstream", n)}}
}

// DropRequest drops the nth request (from 1, counted per proxy; 0: every one) that req names
// crossing links towards their far end: its sender waits for an answer that never comes.
func DropRequest(links LinkSet, req kafkatoxic.Request, nth int) LinkToxic {
	return requestToxic("drop-request", links, &kafkatoxic.Toxic{Request: req, Action: kafkatoxic.Drop, Nth: nth})
}

// HoldRequest holds the nth request that req names crossing links, and what follows it on its
// connection, for d (0: until healed); then it reaches the broker, even if its sender gave up.
// With until, the hold ends instead when a request until names crosses another connection of
// the proxy: that request waits d, so the held one reaches the broker before it.
func HoldRequest(links LinkSet, req kafkatoxic.Request, nth int, d time.Duration, until *kafkatoxic.Request) LinkToxic {
	return requestToxic("hold-request", links, &kafkatoxic.Toxic{Request: req, Action: kafkatoxic.Hold, Nth: nth, Delay: d.Milliseconds(), Until: until})
}

// DropResponse lets the nth request that req names crossing links reach the broker and closes
// its connection right behind it: the broker carries it out, and its sender never learns the
// outcome (its connection is gone).
func DropResponse(links LinkSet, req kafkatoxic.Request, nth int) LinkToxic {
	return requestToxic("drop-response", links, &kafkatoxic.Toxic{Request: req, Action: kafkatoxic.DropResponse, Nth: nth})
}

func requestToxic(kind string, links LinkSet, t *kafkatoxic.Toxic) LinkToxic {
	return LinkToxic{Kind: kind, Links: links, Toxics: []harness.Toxic{harness.KafkaRequest(t)}}
}

func (f LinkToxic) Name() string { return f.Kind }
func (f LinkToxic) String() string {
	return fmt.Sprintf("%s(%s%s)", f.Kind, f.Links, toxicSummary(f.Toxics))
}
func (f LinkToxic) Available(c Cluster) error {
	if len(f.Toxics) == 0 {
		return errors.New("no toxic given")
	}
	for _, t := range f.Toxics {
		if im := c.Images(); t.Type == kafkatoxic.Type && !slices.Contains(im.Toxics, t.Type) {
			return fmt.Errorf("%w: %s (Verity's stand-in %s has it)", harness.ErrNoRequestToxic, im.Toxiproxy, harness.StandInToxiproxyImage)
		}
	}
	return f.Links.Available(c)
}

// toxicState is what a toxic fault's heal needs: the toxic names on each link.
type toxicState struct {
	fault string
	links []harness.Link
	names []string
	t     Targets
}

func (f LinkToxic) Inject(ctx context.Context, e *Env) (any, error) {
	links, role, err := f.Links.Resolve(ctx, e)
	if err != nil {
		return nil, err
	}
	if len(links) == 0 {
		return nil, fmt.Errorf("%s resolved to no link", f.Links)
	}
	return addToxics(ctx, e, f.Kind, links, f.Toxics, Targets{Role: role})
}
func (f LinkToxic) Heal(ctx context.Context, e *Env, state any) error {
	return removeToxics(ctx, e, state)
}

// addToxics adds every toxic to every link as one event f; the state comes back even on
// error, since some toxics may be in place.
func addToxics(ctx context.Context, e *Env, f string, links []harness.Link, toxics []harness.Toxic, t Targets) (any, error) {
	named := make([]harness.Toxic, len(toxics))
	names := make([]string, len(toxics))
	for i, tx := range toxics {
		if tx.Stream == "" {
			tx.Stream = "downstream"
		}
		tx.Name = e.toxicName(tx.Type, tx.Stream)
		named[i], names[i] = tx, tx.Name
	}
	t.Links, t.Toxic = linkPairs(links), toxicValue(named)
	for _, l := range links {
		t.Nodes = appendUnique(t.Nodes, l.To)
		if l.From != harness.ClientEndpoint {
			t.Nodes = appendUnique(t.Nodes, l.From)
		}
	}
	err := e.Do(ctx, f, t, func(ctx context.Context) error {
		return parallel(links, func(l harness.Link) error {
			for _, tx := range named {
				if _, err := e.Cluster.AddToxic(ctx, l, tx); err != nil {
					return err
				}
			}
			return nil
		})
	})
	return &toxicState{fault: f, links: links, names: names, t: t}, err
}

func removeToxics(ctx context.Context, e *Env, state any) error {
	s, ok := state.(*toxicState)
	if !ok || s == nil {
		return nil
	}
	t := Targets{Nodes: s.t.Nodes, Links: s.t.Links, Toxic: s.t.Toxic, Fault: s.fault}
	return e.Do(ctx, "heal", t, func(ctx context.Context) error {
		return parallel(s.links, func(l harness.Link) error {
			var errs []error
			for _, name := range s.names {
				errs = append(errs, e.Cluster.RemoveToxic(ctx, l, name))
			}
			return errors.Join(errs...)
		})
	})
}

// toxicValue is the "toxic" of an event: type, streams and attributes, or a list when the
// toxics differ in more than their stream.
func toxicValue(ts []harness.Toxic) map[string]any {
	same := true
	for _, t := range ts[1:] {
		same = same && t.Type == ts[0].Type && maps.Equal(t.Attributes, ts[0].Attributes)
	}
	one := func(t harness.Toxic) map[string]any {
		m := map[string]any{"type": t.Type, "stream": t.Stream, "attributes": t.Attributes, "name": t.Name}
		if t.Toxicity != 0 && t.Toxicity != 1 {
			m["toxicity"] = t.Toxicity
		}
		return m
	}
	if !same {
		var all []map[string]any
		for _, t := range ts {
			all = append(all, one(t))
		}
		return map[string]any{"toxics": all}
	}
	m := one(ts[0])
	if len(ts) > 1 {
		var streams, names []string
		for _, t := range ts {
			streams, names = append(streams, t.Stream), append(names, t.Name)
		}
		delete(m, "stream")
		delete(m, "name")
		m["streams"], m["names"] = streams, names
	}
	return m
}

// toxicSummary is how a fault's toxics read in progress lines and fault lists: each one's type,
// stream and attributes as key=value, sorted ("latency downstream jitter=0 latency=300").
func toxicSummary(ts []harness.Toxic) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, ", %s %s", t.Type, t.Stream)
		for _, k := range slices.Sorted(maps.Keys(t.Attributes)) {
			fmt.Fprintf(&b, " %s=%v", k, t.Attributes[k])
		}
	}
	return b.String()
}

func appendUnique(s []int, v int) []int {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// AckLoss loses the broker's answers to the clients while their requests still arrive: the
// broker appends a record (and, for acks=all, replicates and commits it) but the producer never
// hears so, and must report the send's outcome as unknown. Section 0 of seed 000.
//
// How: a toxic on the downstream stream (broker -> client) of the client links to the target
// (by default the leader of a partition), the upstream stream left alone, so requests flow and
// only answers are lost. The cut has to fall after the request went out and before its answer
// came back; putting it on the answers' direction makes that true for every request sent while
// the fault lasts, with no race against the client:
//
//   - default (Hold false): limit_data with 0 bytes. The first bytes of any answer close the
//     connection, and the answer is gone. The client sees the connection drop right after its
//     request (EOF), retries at once on a new connection, whose first answer (ApiVersions) is
//     cut the same way, so the retries never arrive and the send ends in an error after its
//     retry budget: an unknown outcome for a record that is in the log. Fast: no timeout waits.
//   - Hold true: timeout with 0 ms, a black hole for answers. Connections stay open, the client
//     waits for its request timeout; requests keep arriving and are appended. Slower, and
//     closer to a silent network; retried requests arrive too, so a non-idempotent producer
//     can duplicate.
//
// Event "ack-loss" naming the links and the toxic, then "heal".
type AckLoss struct {
	Target Target
	Hold   bool
}

func (f AckLoss) Name() string { return "ack-loss" }
func (f AckLoss) String() string {
	mode := "close"
	if f.Hold {
		mode = "hold"
	}
	return fmt.Sprintf("ack-loss(answers of %s to clients, %s)", f.Target, mode)
}
func (f AckLoss) Available(c Cluster) error { return f.Target.Available(c) }
func (f AckLoss) Inject(ctx context.Context, e *Env) (any, error) {
	links, role, err := ClientLinksTo(f.Target).Resolve(ctx, e)
	if err != nil {
		return nil, err
	}
	tx := harness.LimitData("downstream", 0)
	note := "answers to clients dropped and the connection closed at their first byte; requests still arrive"
	if f.Hold {
		tx = harness.Timeout("downstream", 0)
		note = "answers to clients dropped, connections held open; requests still arrive"
	}
	return addToxics(ctx, e, f.Name(), links, []harness.Toxic{tx}, Targets{Role: role, Note: note})
}
func (f AckLoss) Heal(ctx context.Context, e *Env, state any) error {
	return removeToxics(ctx, e, state)
}
