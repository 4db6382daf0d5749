package kafkaconf

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// ClientName names a Kafka client Verity can drive.
type ClientName string

// The clients, as scenarios and flags name them.
const (
	Sarama  ClientName = "sarama"
	FranzGo ClientName = "franz-go"
	Java    ClientName = "java"
)

// Capability is something a client can do that a scenario may need.
type Capability string

// The capabilities a scenario may require of its client.
const (
	// CapIdempotentInFlight5: the idempotent producer keeps up to 5 requests in flight, as
	// Kafka's broker de-duplicates (sarama's keeps one).
	CapIdempotentInFlight5 Capability = "idempotent-in-flight-5"
	// CapTxnProtocolV2: the client speaks KIP-890's transaction protocol (Produce v12, EndTxn v5:
	// partitions added implicitly, the epoch bumped at every transaction's end).
	CapTxnProtocolV2 Capability = "txn-protocol-v2"
	// CapGroupMetadata: read-process-write offsets are sent with the member's generation
	// (KIP-447), so that a member fenced by a rebalance cannot commit them.
	CapGroupMetadata Capability = "kip-447-group-metadata"
	// CapStableOffsetFetch: a read_committed group member asks for stable offsets (KIP-447),
	// waiting out pending transactional offset commits.
	CapStableOffsetFetch Capability = "stable-offset-fetch"
	// CapTruncationDetection: the consumer validates its position against the leader epoch
	// (KIP-320) and reports a log truncated under it as data loss.
	CapTruncationDetection Capability = "truncation-detection"
	// CapIdempotentGivesUp: the idempotent producer fails a send whose answer was lost once its
	// retries run out, so that the application learns of an unknown outcome (franz-go retries
	// such a send until an answer comes: failing it could leave a gap in the sequence numbers).
	CapIdempotentGivesUp Capability = "idempotent-gives-up"
	// CapMaxPollInterval: a group member that does not poll within max.poll.interval.ms leaves
	// its group, and its next poll is told its partitions are lost (a stall_every scenario needs it).
	CapMaxPollInterval Capability = "max-poll-interval"
	// CapPositionKept: after a transaction that did not commit, a processor's consumer stays
	// where it was unless the application rewinds it (Kafka's consumer, KAFKA-17582; sarama's
	// group session), so a processor that skips its rewind resumes past the aborted inputs
	// (franz-go's group transact session rewinds by itself).
	CapPositionKept Capability = "position-kept-after-abort"
	// CapLeavesUnansweringLeader: the producer moves a partition's sends off a leader that
	// stopped serving them (cut off from its peers, or paused) once a new leader is elected, so
	// its sends stall about as long as the election takes. sarama was measured keeping its sends
	// on such a leader until the fault healed (docs/clients.md).
	CapLeavesUnansweringLeader Capability = "leaves-unanswering-leader"
	// CapShareGroups: the client has a share-group consumer (KIP-932) with explicit
	// acknowledgement, which the share-member role needs. sarama has none (v1.61, v1.62);
	// Kafka's Java client's (KafkaShareConsumer) speaks it through the remote protocol's share
	// requests.
	CapShareGroups Capability = "share-groups"
)

// Capabilities lists every capability, in the order listings show them.
func Capabilities() []Capability {
	return []Capability{CapIdempotentInFlight5, CapTxnProtocolV2, CapGroupMetadata, CapStableOffsetFetch, CapTruncationDetection,
		CapIdempotentGivesUp, CapMaxPollInterval, CapPositionKept, CapLeavesUnansweringLeader, CapShareGroups}
}

// ParseCapability reads a capability's name.
func ParseCapability(s string) (Capability, error) {
	if c := Capability(strings.TrimSpace(s)); slices.Contains(Capabilities(), c) {
		return c, nil
	}
	names := make([]string, len(Capabilities()))
	for i, c := range Capabilities() {
		names[i] = string(c)
	}
	return "", fmt.Errorf("capability %q: want one of %s", s, strings.Join(names, ", "))
}

// UnmarshalText reads what ParseCapability reads.
func (c *Capability) UnmarshalText(b []byte) error {
	v, err := ParseCapability(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// TxnProtocol is the transaction protocol a transactional client speaks with the cluster.
type TxnProtocol string

const (
	// TxnProtocolV1 is the protocol before KIP-890: AddPartitionsToTxn before a partition's
	// first record, EndTxn up to v4, one producer epoch for many transactions.
	TxnProtocolV1 TxnProtocol = "v1"
	// TxnProtocolV2 is KIP-890 part 2 (transaction.version=2): partitions added by the produce
	// itself, the epoch bumped at the end of every transaction.
	TxnProtocolV2 TxnProtocol = "v2"
)

// GroupProtocol is the consumer group protocol a group member speaks with its coordinator.
type GroupProtocol string

const (
	// GroupClassic is the protocol of JoinGroup and SyncGroup: the members' leader assigns the
	// partitions, and every rebalance stops the whole group.
	GroupClassic GroupProtocol = "classic"
	// GroupConsumer is KIP-848's (Kafka 4.0+): members heartbeat with ConsumerGroupHeartbeat,
	// the coordinator assigns, and a rebalance moves only the partitions that change owner.
	GroupConsumer GroupProtocol = "consumer"
)

// ParseGroupProtocol reads "classic" or "consumer".
func ParseGroupProtocol(s string) (GroupProtocol, error) {
	switch p := GroupProtocol(strings.TrimSpace(s)); p {
	case GroupClassic, GroupConsumer:
		return p, nil
	}
	return "", fmt.Errorf("group protocol %q: want classic or consumer", s)
}

// UnmarshalText reads what ParseGroupProtocol reads.
func (p *GroupProtocol) UnmarshalText(b []byte) error {
	v, err := ParseGroupProtocol(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// ParseTxnProtocol reads "v1" or "v2".
func ParseTxnProtocol(s string) (TxnProtocol, error) {
	switch p := TxnProtocol(strings.TrimSpace(s)); p {
	case TxnProtocolV1, TxnProtocolV2:
		return p, nil
	}
	return "", fmt.Errorf("transaction protocol %q: want v1 or v2", s)
}

// UnmarshalText reads what ParseTxnProtocol reads.
func (p *TxnProtocol) UnmarshalText(b []byte) error {
	v, err := ParseTxnProtocol(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Clients lists the clients Verity drives, the default first. Each says, as data, what it can
// do and where it departs from Kafka's Java client; workloads/kclient holds their code.
func Clients() []Client {
	return []Client{
		{Name: Sarama, Module: "github.com/IBM/sarama", MaxIdempotentInFlight: 1, DefaultRetries: 3,
			RetriesNote:    " (sarama has no delivery.timeout.ms; the workload bounds each send by its delivery timeout)",
			TxnProtocols:   []TxnProtocol{TxnProtocolV1},
			GroupProtocols: []GroupProtocol{GroupClassic},
			Capabilities:   []Capability{CapGroupMetadata, CapStableOffsetFetch, CapIdempotentGivesUp, CapPositionKept},
			RewindNote: "after an abort the sarama processor hands out again the records it handed out since its last commit " +
				"(what a fetch from the committed offsets returns: a group session cannot seek), and after an unknown outcome " +
				"starts a new group session, which resumes from the committed offsets",
			Doc: "IBM/sarama: its idempotent producer keeps one request in flight; transactions speak the protocol before " +
				"KIP-890 (EndTxn v3) whatever the cluster supports; no fetch position validation (KIP-320)"},
		{Name: FranzGo, Module: "github.com/twmb/franz-go", MaxIdempotentInFlight: MaxIdempotentInFlight,
			IdempotentInFlight: MaxIdempotentInFlight, DefaultRetries: DefaultRetries,
			TxnProtocols:   []TxnProtocol{TxnProtocolV2, TxnProtocolV1},
			GroupProtocols: []GroupProtocol{GroupClassic, GroupConsumer},
			Capabilities: []Capability{CapIdempotentInFlight5, CapTxnProtocolV2, CapGroupMetadata, CapStableOffsetFetch, CapTruncationDetection,
				CapLeavesUnansweringLeader, CapShareGroups},
			RewindNote: "after an abort franz-go's group transact session rewinds to the committed offsets itself",
			Doc: "twmb/franz-go (kgo): idempotence on by default with 5 requests in flight; KIP-890 transactions where the cluster " +
				"supports them (capped to v1 on request); a group transact session that rewinds to the committed offsets on abort; " +
				"truncation reported as data loss"},
		{Name: Java, Artifact: "org.apache.kafka:kafka-clients", DefaultVersion: "4.3.1", MaxIdempotentInFlight: MaxIdempotentInFlight,
			DefaultRetries: DefaultRetries,
			TxnProtocols:   []TxnProtocol{TxnProtocolV2, TxnProtocolV1},
			GroupProtocols: []GroupProtocol{GroupClassic, GroupConsumer},
			Capabilities: []Capability{CapIdempotentInFlight5, CapTxnProtocolV2, CapGroupMetadata, CapStableOffsetFetch, CapTruncationDetection,
				CapIdempotentGivesUp, CapMaxPollInterval, CapPositionKept, CapLeavesUnansweringLeader, CapShareGroups},
			RewindNote: "after an abort the Java processor seeks the member's partitions back to their committed offsets " +
				"(Kafka's consumer does not rewind by itself, KAFKA-17582)",
			Doc: "Kafka's Java client (kafka-clients), a program behind the remote client protocol: idempotence on by default with " +
				"up to 5 requests in flight; KIP-890 transactions from 4.0 where the cluster finalised them (no cap to v1); " +
				"sendOffsetsToTransaction with the consumer's group metadata; truncation reported as data loss"},
	}
}

// DefaultClient is the client a scenario runs unless it names one.
const DefaultClient = Sarama

// LookupClient returns the client called name.
func LookupClient(name ClientName) (Client, bool) {
	for _, c := range Clients() {
		if c.Name == name {
			return c, true
		}
	}
	return Client{}, false
}

// ClientNames lists the clients' names.
func ClientNames() []string {
	var out []string
	for _, c := range Clients() {
		out = append(out, string(c.Name))
	}
	return out
}

// ParseClient reads a client's name.
func ParseClient(s string) (ClientName, error) {
	n := ClientName(strings.TrimSpace(s))
	if _, ok := LookupClient(n); ok {
		return n, nil
	}
	return "", fmt.Errorf("client %q: want one of %s", s, strings.Join(ClientNames(), ", "))
}

// UnmarshalText reads what ParseClient reads.
func (n *ClientName) UnmarshalText(b []byte) error {
	v, err := ParseClient(string(b))
	if err != nil {
		return err
	}
	*n = v
	return nil
}

// Has reports whether the client has capability c.
func (c Client) Has(cap Capability) bool { return slices.Contains(c.Capabilities, cap) }

// IsProgram says whether the client runs as a program of its own (docs/client-protocol.md)
// rather than as Go code linked into Verity.
func (c Client) IsProgram() bool { return c.Module == "" && c.Artifact != "" }

// Library is what the client is: its Go module's path, or a program's artifact.
func (c Client) Library() string {
	if c.IsProgram() {
		return c.Artifact
	}
	return c.Module
}

// Version is the version of the client's module linked into this binary (from the build
// information), or "unknown" when the binary carries none; for a program, the version it runs
// unless a run names one.
func (c Client) Version() string {
	if c.IsProgram() {
		return c.DefaultVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == c.Module {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}

// ParseClientVersion reads a client module's version as Go modules write it (v1.61.0): the
// version a driver is built with (see ClientRef).
func ParseClientVersion(s string) (string, error) {
	v := strings.TrimSpace(s)
	core, _, _ := strings.Cut(v, "-") // a pre-release or pseudo-version suffix is the module proxy's to judge
	parts := strings.Split(strings.TrimPrefix(core, "v"), ".")
	ok := strings.HasPrefix(core, "v") && len(parts) == 3
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		ok = ok && err == nil && n >= 0 && strconv.Itoa(n) == p
	}
	if !ok {
		return "", fmt.Errorf("client version %q: want a module version such as v1.61.0", s)
	}
	return v, nil
}

// ParseVersion reads a version of c: a module version for a Go client (v1.61.0), a release for a
// program (4.1.2).
func (c Client) ParseVersion(s string) (string, error) {
	if !c.IsProgram() {
		return ParseClientVersion(s)
	}
	v := strings.TrimSpace(s)
	parts := strings.Split(v, ".")
	ok := len(parts) == 3
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		ok = ok && err == nil && n >= 0 && strconv.Itoa(n) == p
	}
	if !ok {
		return "", fmt.Errorf("client version %q: want a release of %s such as %s", s, c.Artifact, c.DefaultVersion)
	}
	return v, nil
}

// ParseClientRef reads a client's name with an optional version after an @ (franz-go,
// sarama@v1.61.0, java@4.1.2); the version is "" when none is given.
func ParseClientRef(s string) (ClientName, string, error) {
	name, version, pinned := strings.Cut(strings.TrimSpace(s), "@")
	n, err := ParseClient(name)
	if err != nil || !pinned {
		return n, "", err
	}
	c, _ := LookupClient(n)
	v, err := c.ParseVersion(version)
	if err != nil {
		return "", "", fmt.Errorf("client %q: %w", s, err)
	}
	return n, v, nil
}
