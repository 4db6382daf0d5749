// Package sink names the ways a Kafka consumer can apply what it reads to a system outside
// Kafka — a database, an HTTP service — each a Mode with what it promises (one list, Modes).
// Kafka's exactly-once ends at the cluster: a consumer that writes a row and then commits its
// offset applies an input again when it crashes between the two, unless the side effect itself
// is made idempotent. The modes are the common patterns, the naive one included as the control.
//
// It imports nothing of Verity's.
package sink

import (
	"fmt"
	"slices"
	"strings"
)

// Mode is how a sink applies one input.
type Mode string

const (
	// Naive inserts a row, then commits the consumer's offset to Kafka.
	Naive Mode = "naive"
	// UniqueKey inserts the row under a unique constraint on the event id (ON CONFLICT DO
	// NOTHING), then commits the offset: a replayed input changes nothing.
	UniqueKey Mode = "unique-key"
	// OffsetsInDB writes the row and the next offset to read in one database transaction,
	// and on every assignment seeks to the offsets the database holds; Kafka's group offsets
	// are not used. The offset update is conditional on the offset read, so that an instance
	// that lost its partition cannot move it.
	OffsetsInDB Mode = "offsets-in-db"
	// Inbox records the event id in an inbox table (primary key) and writes the row only when
	// the id was new, in one database transaction; then commits the offset.
	Inbox Mode = "inbox"
	// HTTP calls the ledger service once per input, then commits the offset.
	HTTP Mode = "http"
	// HTTPKeyed calls the ledger with an Idempotency-Key derived from the event id: the
	// service applies a key once and answers a repeat with its first answer.
	HTTPKeyed Mode = "http-keyed"
	// Outbox writes the business row (keyed by the event id, as UniqueKey) and an outbox row in
	// one database transaction, then commits the offset; a relay publishes each outbox row to
	// the sink's outbox topic with an idempotent producer and then marks it sent. A relay that
	// crashes between the two publishes the row again under a new producer id, which the
	// broker cannot recognise: the outbox topic is at-least-once, and its consumers de-duplicate
	// by event id.
	Outbox Mode = "outbox"
)

// Store is where a sink's side effects go.
type Store string

const (
	Postgres Store = "postgres"
	Ledger   Store = "ledger"
)

// Info says what a mode does and promises.
type Info struct {
	Mode  Mode
	Store Store
	// Dedupes: the side effect of a replayed input is absorbed (an input is applied at most
	// once), so effect-duplicate is forbidden.
	Dedupes bool
	// OffsetsInStore: the consumed position is kept in the store, with the effect, rather than
	// in Kafka's group offsets.
	OffsetsInStore bool
	// Relays: a relay publishes the effects to an outbox topic, so outbox-lost and
	// outbox-duplicate are judged.
	Relays bool
	About  string
}

// Modes lists every mode. A new pattern is one entry here and its implementation in workloads.
func Modes() []Info {
	return []Info{
		{Naive, Postgres, false, false, false, "insert the row, then commit the offset to Kafka: a crash between the two replays the input (at-least-once)"},
		{UniqueKey, Postgres, true, false, false, "insert under a unique constraint on the event id, then commit the offset: a replay inserts nothing"},
		{OffsetsInDB, Postgres, true, true, false, "the row and the next offset in one database transaction; the consumer seeks to the database's offsets on every assignment"},
		{Inbox, Postgres, true, false, false, "an inbox table de-duplicates the event id in the transaction that writes the row; then commit the offset"},
		{HTTP, Ledger, false, false, false, "call the ledger, then commit the offset: a crash between the two calls it again"},
		{HTTPKeyed, Ledger, true, false, false, "call the ledger with an Idempotency-Key from the event id: a repeated key is answered, not applied"},
		{Outbox, Postgres, true, false, true, "the business row (unique by event id) and an outbox row in one database transaction; a relay publishes the outbox to a topic with an idempotent producer and marks each row sent"},
	}
}

// Info returns what the list says of m; ok is false for a mode it does not have.
func (m Mode) Info() (Info, bool) {
	i := slices.IndexFunc(Modes(), func(in Info) bool { return in.Mode == m })
	if i < 0 {
		return Info{}, false
	}
	return Modes()[i], true
}

// Parse reads a mode's name.
func Parse(s string) (Mode, error) {
	m := Mode(strings.TrimSpace(s))
	if _, ok := m.Info(); ok {
		return m, nil
	}
	names := make([]string, 0, len(Modes()))
	for _, in := range Modes() {
		names = append(names, string(in.Mode))
	}
	return "", fmt.Errorf("sink mode %q: want one of %s", s, strings.Join(names, ", "))
}

// UnmarshalText reads what Parse reads, so that a scenario or a header cannot name a mode
// Verity does not have.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// OutboxValue is the value a relay publishes for event of sink name: distinct from the input
// record's value (a value is one record across the whole history), and the same for every
// publish of one event, so that downstream consumers can de-duplicate by it.
func OutboxValue(name, event string) string { return name + ":" + event }

// CheckName says why name cannot name a sink: it names the sink's database tables, so it is
// lower-case letters, digits and '_', at most 40 of them.
func CheckName(name string) error {
	ok := name != "" && len(name) <= 40
	for _, r := range name {
		ok = ok && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	}
	if !ok {
		return fmt.Errorf("sink name %q: lower-case letters, digits and _, at most 40 (it names the sink's database tables)", name)
	}
	return nil
}
