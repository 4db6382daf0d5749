package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/verity-kafka/verity/sink"
)

// The stores a sink applies its effects to. PostgreSQL tables are named after the sink
// (effects_<name>, and offsets_<name> or inbox_<name> for the modes that need them); the
// ledger's entries carry the sink's name and the run's tag as their source.

// pgStore is one instance's connection to PostgreSQL, made again after any error.
type pgStore struct {
	cfg  *pgx.ConnConfig
	sink SinkConfig
	conn *pgx.Conn
}

// pgConfig parses dsn with the short connect timeout fault runs need: a cut link must fail a
// connection attempt in seconds, not minutes.
func pgConfig(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("the PostgreSQL address %q: %w", dsn, err)
	}
	cfg.ConnectTimeout = 3 * time.Second
	return cfg, nil
}

func openPGStore(_ context.Context, dsn string, s SinkConfig) (*pgStore, error) {
	cfg, err := pgConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", s.Name, err)
	}
	return &pgStore{cfg: cfg, sink: s}, nil
}

func (st *pgStore) connect(ctx context.Context) (*pgx.Conn, error) {
	if st.conn != nil && !st.conn.IsClosed() {
		return st.conn, nil
	}
	c, err := pgx.ConnectConfig(ctx, st.cfg)
	if err != nil {
		return nil, err
	}
	st.conn = c
	return c, nil
}

func (st *pgStore) close() {
	if st.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = st.conn.Close(ctx)
		st.conn = nil
	}
}

// pgTables names a sink's tables.
type pgTables struct{ effects, offsets, inbox, outbox string }

func tablesOf(name string) pgTables {
	return pgTables{effects: "effects_" + name, offsets: "offsets_" + name, inbox: "inbox_" + name, outbox: "outbox_" + name}
}

// apply runs the mode's statements. sure (certainly not applied) holds when the request never
// left (pgconn.SafeToRetry) or when a transaction failed before its COMMIT was sent.
func (st *pgStore) apply(ctx context.Context, ev EffectValue) (applied, sure bool, err error) {
	c, err := st.connect(ctx)
	if err != nil {
		return false, true, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer func() {
		if err != nil {
			st.close() // a broken or unknown session is not reused
		}
	}()
	t := tablesOf(st.sink.Name)
	insert := "INSERT INTO " + t.effects + " (event, topic, part, off) VALUES ($1, $2, $3, $4)"
	args := []any{ev.Event, ev.Topic, ev.Partition, ev.Offset}
	switch st.sink.Mode {
	case sink.Naive:
		_, err := c.Exec(ctx, insert, args...)
		return err == nil, err != nil && pgconn.SafeToRetry(err), err
	case sink.UniqueKey:
		tag, err := c.Exec(ctx, insert+" ON CONFLICT (event) DO NOTHING", args...)
		return err == nil && tag.RowsAffected() == 1, err != nil && pgconn.SafeToRetry(err), err
	case sink.Inbox:
		return st.inTx(ctx, c, func(tx pgx.Tx) (bool, error) {
			tag, err := tx.Exec(ctx, "INSERT INTO "+t.inbox+" (event) VALUES ($1) ON CONFLICT DO NOTHING", ev.Event)
			if err != nil || tag.RowsAffected() == 0 {
				return false, err
			}
			_, err = tx.Exec(ctx, insert, args...)
			return err == nil, err
		})
	case sink.Outbox:
		return st.inTx(ctx, c, func(tx pgx.Tx) (bool, error) {
			tag, err := tx.Exec(ctx, insert+" ON CONFLICT (event) DO NOTHING", args...)
			if err != nil || tag.RowsAffected() == 0 {
				return false, err
			}
			_, err = tx.Exec(ctx, "INSERT INTO "+t.outbox+" (event) VALUES ($1)", ev.Event)
			return err == nil, err
		})
	case sink.OffsetsInDB:
		return st.inTx(ctx, c, func(tx pgx.Tx) (bool, error) {
			// The position moves only forward from at most this record's offset: an instance
			// that lost the partition, or a record seen again, moves nothing and applies nothing.
			tag, err := tx.Exec(ctx, "INSERT INTO "+t.offsets+" AS o (topic, part, next) VALUES ($1, $2, $3) "+
				"ON CONFLICT (topic, part) DO UPDATE SET next = EXCLUDED.next WHERE o.next <= $4",
				ev.Topic, ev.Partition, ev.Offset+1, ev.Offset)
			if err != nil || tag.RowsAffected() == 0 {
				return false, err
			}
			_, err = tx.Exec(ctx, insert, args...)
			return err == nil, err
		})
	}
	return false, true, fmt.Errorf("mode %s does not write to PostgreSQL", st.sink.Mode)
}

// inTx runs body in a transaction and commits it when body applied something (else rolls back).
func (st *pgStore) inTx(ctx context.Context, c *pgx.Conn, body func(pgx.Tx) (bool, error)) (applied, sure bool, err error) {
	tx, err := c.Begin(ctx)
	if err != nil {
		return false, true, err
	}
	applied, err = body(tx)
	if err != nil || !applied {
		_ = tx.Rollback(ctx)
		return false, err != nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, pgconn.SafeToRetry(err), fmt.Errorf("committing: %w", err)
	}
	return true, false, nil
}

func (st *pgStore) positions(ctx context.Context, topic string) (map[int32]int64, error) {
	if st.sink.Mode != sink.OffsetsInDB {
		return nil, nil
	}
	c, err := st.connect(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.Query(ctx, "SELECT part, next FROM "+tablesOf(st.sink.Name).offsets+" WHERE topic = $1", topic)
	if err != nil {
		st.close()
		return nil, err
	}
	out := map[int32]int64{}
	var part int32
	var next int64
	_, err = pgx.ForEachRow(rows, []any{&part, &next}, func() error { out[part] = next; return nil })
	if err != nil {
		st.close()
	}
	return out, err
}

// preparePG creates a sink's tables anew (a cluster that ran an earlier scenario may have them).
func preparePG(ctx context.Context, dsn string, s SinkConfig) error {
	cfg, err := pgConfig(dsn)
	if err != nil {
		return err
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("sink %s: connecting to PostgreSQL: %w", s.Name, err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	t := tablesOf(s.Name)
	unique := ""
	if s.Mode == sink.UniqueKey || s.Mode == sink.Outbox {
		unique = ", UNIQUE (event)"
	}
	stmts := []string{
		"DROP TABLE IF EXISTS " + t.effects + ", " + t.offsets + ", " + t.inbox + ", " + t.outbox,
		"CREATE TABLE " + t.effects + " (id bigserial PRIMARY KEY, event text NOT NULL, topic text NOT NULL, part int NOT NULL, off bigint NOT NULL, at timestamptz NOT NULL DEFAULT now()" + unique + ")",
	}
	switch s.Mode {
	case sink.OffsetsInDB:
		stmts = append(stmts, "CREATE TABLE "+t.offsets+" (topic text NOT NULL, part int NOT NULL, next bigint NOT NULL, PRIMARY KEY (topic, part))")
	case sink.Inbox:
		stmts = append(stmts, "CREATE TABLE "+t.inbox+" (event text PRIMARY KEY)")
	case sink.Outbox:
		stmts = append(stmts, "CREATE TABLE "+t.outbox+" (id bigserial PRIMARY KEY, event text NOT NULL, sent boolean NOT NULL DEFAULT false)")
	}
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			return fmt.Errorf("sink %s: preparing its tables (%s): %w", s.Name, q, err)
		}
	}
	return nil
}

// readPG reads a sink's effects (times each event was applied), for offsets-in-db the positions
// it holds, and for outbox the rows its relay has not marked sent.
func readPG(ctx context.Context, dsn string, s SinkConfig) (effects map[string]int, committed map[string]int64, unsent *int, err error) {
	cfg, err := pgConfig(dsn)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	t := tablesOf(s.Name)
	effects = map[string]int{}
	rows, err := c.Query(ctx, "SELECT event, count(*) FROM "+t.effects+" GROUP BY event")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading %s: %w", t.effects, err)
	}
	var event string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&event, &n}, func() error { effects[event] = n; return nil }); err != nil {
		return nil, nil, nil, fmt.Errorf("reading %s: %w", t.effects, err)
	}
	if info, _ := s.Mode.Info(); info.Relays {
		unsent = new(int)
		if err := c.QueryRow(ctx, "SELECT count(*) FROM "+t.outbox+" WHERE NOT sent").Scan(unsent); err != nil {
			return nil, nil, nil, fmt.Errorf("reading %s: %w", t.outbox, err)
		}
	}
	if s.Mode != sink.OffsetsInDB {
		return effects, nil, unsent, nil
	}
	committed = map[string]int64{}
	rows, err = c.Query(ctx, "SELECT topic, part, next FROM "+t.offsets)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading %s: %w", t.offsets, err)
	}
	var topic string
	var part int32
	var next int64
	if _, err := pgx.ForEachRow(rows, []any{&topic, &part, &next}, func() error {
		committed[partitionKey(topic, part)] = next
		return nil
	}); err != nil {
		return nil, nil, nil, fmt.Errorf("reading %s: %w", t.offsets, err)
	}
	return effects, committed, unsent, nil
}

// ledgerStore calls the ledger service (cmd/verity-ledger).
type ledgerStore struct {
	url    string
	source string
	keyed  bool
	http   *http.Client
}

func newLedgerStore(url string, s SinkConfig, runTag string) *ledgerStore {
	return &ledgerStore{url: url, source: ledgerSource(s.Name, runTag), keyed: s.Mode == sink.HTTPKeyed,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}}
}

// ledgerSource tells one run's sink's entries apart from every other's in the ledger.
func ledgerSource(name, runTag string) string { return name + "@" + runTag }

func (st *ledgerStore) apply(ctx context.Context, ev EffectValue) (applied, sure bool, err error) {
	body, _ := json.Marshal(map[string]any{"event_id": ev.Event, "amount": 1, "source": st.source})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.url+"/payments", bytes.NewReader(body))
	if err != nil {
		return false, true, err
	}
	req.Header.Set("Content-Type", "application/json")
	if st.keyed {
		req.Header.Set("Idempotency-Key", st.source+"/"+ev.Event)
	}
	resp, err := st.http.Do(req)
	if err != nil {
		// A request that never reached the service cannot have been applied; any other
		// failure may have come after the service applied it.
		var op *net.OpError
		return false, errors.As(err, &op) && op.Op == "dial", err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return false, resp.StatusCode < 500, fmt.Errorf("the ledger answered %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	// A repeated Idempotency-Key is answered with the first answer and applies nothing; the
	// ledger marks such an answer.
	return resp.Header.Get("Idempotent-Replayed") != "true", false, nil
}

func (st *ledgerStore) positions(context.Context, string) (map[int32]int64, error) { return nil, nil }
func (st *ledgerStore) close()                                                     { st.http.CloseIdleConnections() }

// readLedger counts the ledger's entries of one run's sink by event.
func readLedger(ctx context.Context, url, source string) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/ledger", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the ledger: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the ledger: %s", resp.Status)
	}
	var l struct {
		Entries []struct {
			EventID string `json:"event_id"`
			Source  string `json:"source"`
		} `json:"entries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		return nil, fmt.Errorf("reading the ledger: %w", err)
	}
	out := map[string]int{}
	for _, e := range l.Entries {
		if e.Source == source {
			out[e.EventID]++
		}
	}
	return out, nil
}
