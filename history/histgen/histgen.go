// Package histgen writes synthetic histories that look like a real Verity run and contain no
// anomaly, for benchmarks and tests of the history reader and the checkers: a checker must
// find nothing in them, and how fast it finds nothing is what the benchmarks measure.
//
// The run it simulates: several idempotent producers (one of them asynchronous, with several
// sends in flight) send to the partitions of one topic; a transactional producer commits and
// aborts transactions, whose aborted records keep their offsets and whose commit/abort markers
// take an offset each, so the offsets a consumer sees have gaps; four consumers (assigned or
// subscribed, in each isolation level) poll every partition in log order; a nemesis kills and
// restarts nodes (which, being simulated, loses nothing); a few sends end unknown (info) and
// some of those did reach the log; at the end every partition is read in full in both
// isolation levels, in final-read chunks of at most ChunkRecords records. The header's config
// states the settings (acks=all, idempotent, RF=3, min ISR 2) under which all this is correct.
//
// The same nOps and seed always give the same bytes. Events average about 350 bytes.
package histgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

const (
	// Topic is the one topic of a generated history.
	Topic = "verity"
	// Partitions is its partition count.
	Partitions = 12
	// ChunkRecords is the most records one final-read op holds.
	ChunkRecords = 2000
	// Started is the header's start time: fixed, so that output depends on the seed only.
	Started = "2026-01-01T00:00:00Z"
)

// Process numbers of the simulated clients.
const (
	firstProducer = 0 // producers 0..3 send one record at a time
	producers     = 4
	asyncProducer = 4 // sends with up to maxAsync records in flight
	txnProducer   = 5
	firstConsumer = 6 // consumers 6..9: see consumerIso and consumerGroup
	consumers     = 4
	finalReader   = 10
	// With GenerateTxnReads, processes 11..16 run transactions that read: each polls committed
	// records from its positions and writes new ones in one transaction.
	firstTxnReader = 11
	txnReaders     = 6
	clients        = firstTxnReader + txnReaders
)

// consumerIso is the isolation level of consumer c: read_committed and read_uncommitted in turn.
func consumerIso(c int) string {
	if (c-firstConsumer)%2 == 0 {
		return history.ReadCommitted
	}
	return history.ReadUncommitted
}

// consumerGroup is the consumer group of consumer c: the first two assign partitions
// themselves, the other two subscribe as the only member of a group (and so get every
// partition).
func consumerGroup(c int) string {
	if c-firstConsumer < 2 {
		return ""
	}
	return "verity-group-" + consumerIso(c)
}

const (
	maxAsync   = 5
	keys       = 64 // distinct record keys; a key always maps to the same partition
	maxPoll    = 40 // records one poll returns at most
	nodes      = 3
	abortShare = 0.2
)

// entry is one offset of a simulated partition log.
type entry struct {
	value string
	key   string
	kind  entryKind
}

type entryKind uint8

const (
	plain     entryKind = iota // a non-transactional record
	committed                  // a record of a committed transaction
	aborted                    // a record of an aborted transaction: kept, hidden from read_committed
	marker                     // a commit or abort marker: takes an offset, never returned
)

// visible reports whether a consumer at isolation level iso is shown e.
func (e *entry) visible(iso string) bool {
	switch e.kind {
	case plain, committed:
		return true
	case aborted:
		return iso == history.ReadUncommitted
	}
	return false
}

// pending is an invoked op waiting for its completion.
type pending struct {
	inv  history.Op
	recs []history.Record // the records it sends, without offsets
}

type gen struct {
	rng  *rand.Rand
	out  *bufio.Writer
	line []byte
	next int64 // i of the next event
	now  int64 // t of the last event

	logs     [Partitions][]entry
	shown    [Partitions][2]int // records each isolation level shows: [read_uncommitted, read_committed]
	seq      [clients]int       // records sent per process, for unique values
	inflight [clients][]pending
	pos      [clients][Partitions]int64 // consumers' positions
	killed   int                        // node the nemesis has down, -1 if none
	nemesis  *history.Op                // the nemesis op in flight
	txnReads bool                       // GenerateTxnReads: transactions that read run too
}

// Generate writes a history of about nOps events (never fewer than the final reads need: two
// per partition and isolation level) after its header line to w, from seed.
func Generate(w io.Writer, nOps int, seed int64) error { return generate(w, nOps, seed, false) }

// GenerateTxnReads writes a history like Generate's in which six more processes run
// transactions that read (a txn op with reads, as a processor with writes records them): each
// reads up to 8 committed records of one partition from its position and writes 1–3 new ones,
// so that the dependency graph has an edge from each writer to every transaction that read it
// and real-time edges between all of them; none makes a cycle.
func GenerateTxnReads(w io.Writer, nOps int, seed int64) error { return generate(w, nOps, seed, true) }

func generate(w io.Writer, nOps int, seed int64, txnReads bool) error {
	g := &gen{
		rng:      rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)),
		out:      bufio.NewWriterSize(w, 256<<10),
		killed:   -1,
		txnReads: txnReads,
	}
	if err := g.header(seed); err != nil {
		return err
	}
	if err := g.run(nOps); err != nil {
		return err
	}
	if err := g.out.Flush(); err != nil {
		return fmt.Errorf("histgen: write: %w", err)
	}
	return nil
}

func (g *gen) header(seed int64) error {
	// The config states the settings the simulated run keeps its promises under: with acks=all,
	// idempotence, RF=3 and min ISR 2, none of the anomalies is permitted, and none is in the
	// history.
	about, err := json.Marshal(struct {
		Topic         string  `json:"topic"`
		Partitions    int     `json:"partitions"`
		TxnAbortShare float64 `json:"txn_abort_share"`
	}{Topic, Partitions, abortShare})
	if err != nil {
		return fmt.Errorf("histgen: header config: %w", err)
	}
	all := kafkaconf.AcksAll
	processes := map[int]kafkaconf.ProducerConfig{txnProducer: {Transactional: new(true)}}
	if g.txnReads {
		for c := firstTxnReader; c < firstTxnReader+txnReaders; c++ {
			processes[c] = kafkaconf.ProducerConfig{Transactional: new(true)}
		}
	}
	cfg := history.Config{
		Scenario:  "histgen",
		Producer:  &kafkaconf.ProducerConfig{Delivery: kafkaconf.Delivery{Acks: &all, Idempotence: new(true), MaxInFlight: new(maxAsync)}},
		Processes: processes,
		Topic: &kafkaconf.TopicConfig{ReplicationFactor: new(nodes), MinInsyncReplicas: new(2),
			UncleanLeaderElection: new(false)},
		Isolation: kafkaconf.ReadCommitted,
		Faults:    []string{"kill"},
		Workloads: about,
	}
	line, err := json.Marshal(history.Header{Version: history.Version, Started: Started, Seed: seed, Config: cfg})
	if err != nil {
		return fmt.Errorf("histgen: header: %w", err)
	}
	if _, err := g.out.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("histgen: write: %w", err)
	}
	return nil
}

// emit writes op with the next i and a later t, and returns it as written.
func (g *gen) emit(op history.Op) (history.Op, error) {
	g.now += 1000 + g.rng.Int64N(60_000) // 1–61 µs between events
	op.Index, op.Time = g.next, g.now
	var err error
	if g.line, err = history.AppendOp(g.line[:0], op); err != nil {
		return op, fmt.Errorf("histgen: op %d: %w", op.Index, err)
	}
	g.line = append(g.line, '\n')
	if _, err := g.out.Write(g.line); err != nil {
		return op, fmt.Errorf("histgen: write: %w", err)
	}
	g.next++
	return op, nil
}

// finalLines is the number of events the final reads would take now.
func (g *gen) finalLines() int64 {
	var n int64
	for p := range g.shown {
		for _, c := range g.shown[p] {
			n += 2 * int64(max(1, (c+ChunkRecords-1)/ChunkRecords))
		}
	}
	return n
}

func (g *gen) run(nOps int) error {
	for c := firstConsumer; c < firstConsumer+consumers; c++ {
		if err := g.assign(c); err != nil {
			return err
		}
	}
	for {
		final := g.finalLines()
		inflight := int64(0)
		for c := range g.inflight {
			inflight += int64(len(g.inflight[c]))
		}
		if g.nemesis != nil {
			inflight++
		}
		// Completing what is in flight may add records and so a final-read chunk or two.
		if g.next+inflight+final+4 >= int64(nOps) {
			break
		}
		if err := g.step(); err != nil {
			return err
		}
	}
	if err := g.drain(); err != nil {
		return err
	}
	return g.finalReads()
}

// step advances one simulated process by one event.
func (g *gen) step() error {
	if g.txnReads {
		switch x := g.rng.IntN(1000); {
		case x < 4:
			return g.nemesisStep()
		case x < 300:
			return g.syncSend(firstProducer + g.rng.IntN(producers))
		case x < 400:
			return g.asyncSend()
		case x < 450:
			return g.txn()
		case x < 900:
			return g.txnRead(firstTxnReader + g.rng.IntN(txnReaders))
		default:
			return g.poll(firstConsumer + g.rng.IntN(consumers))
		}
	}
	switch x := g.rng.IntN(1000); {
	case x < 4:
		return g.nemesisStep()
	case x < 480:
		return g.syncSend(firstProducer + g.rng.IntN(producers))
	case x < 720:
		return g.asyncSend()
	case x < 800:
		return g.txn()
	default:
		return g.poll(firstConsumer + g.rng.IntN(consumers))
	}
}

// drain completes every op in flight, then heals the nemesis's fault.
func (g *gen) drain() error {
	for c := range g.inflight {
		for len(g.inflight[c]) > 0 {
			var err error
			switch {
			case c == asyncProducer:
				err = g.asyncSend()
			case c == txnProducer:
				err = g.txn()
			case c >= firstConsumer && c < firstConsumer+consumers:
				err = g.poll(c)
			case c >= firstTxnReader:
				err = g.txnRead(c)
			default:
				err = g.syncSend(c)
			}
			if err != nil {
				return err
			}
		}
	}
	for g.nemesis != nil || g.killed >= 0 {
		if err := g.nemesisStep(); err != nil {
			return err
		}
	}
	return nil
}

// assign starts consumer c: an assign of every partition, or a subscribe to the topic.
func (g *gen) assign(c int) error {
	f, args := history.FAssign, map[string]any{"topic": Topic}
	if group := consumerGroup(c); group != "" {
		f, args = history.FSubscribe, map[string]any{"topics": []string{Topic}, "group": group}
	} else {
		parts := make([]int, Partitions)
		for i := range parts {
			parts[i] = i
		}
		args["partitions"] = parts
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("histgen: %s: %w", f, err)
	}
	inv, err := g.emit(history.Op{Process: history.Client(c), Type: history.Invoke, F: f, Value: history.Payload{Raw: raw}})
	if err != nil {
		return err
	}
	_, err = g.emit(history.Op{Process: inv.Process, Type: history.OK, F: f, Value: history.Payload{Raw: raw}})
	return err
}

// newRecord makes process c's next record, with a unique value "c-n".
func (g *gen) newRecord(c int) history.Record {
	g.seq[c]++
	k := g.rng.IntN(keys)
	return history.Record{
		Topic:     Topic,
		Partition: int32(k % Partitions),
		Key:       "k" + strconv.Itoa(k),
		Value:     strconv.Itoa(c) + "-" + strconv.Itoa(g.seq[c]),
	}
}

// appendRecord writes r to its partition's log and returns it with its offset.
func (g *gen) appendRecord(r history.Record, kind entryKind) history.Record {
	log := &g.logs[r.Partition]
	off := int64(len(*log))
	*log = append(*log, entry{value: r.Value, key: r.Key, kind: kind})
	g.shown[r.Partition][0]++
	if kind != aborted {
		g.shown[r.Partition][1]++
	}
	return r.At(off)
}

// sendOutcome completes a send: mostly ok (written, offset known); sometimes info (unknown to
// the client; the record did or did not reach the log); rarely fail (not written).
func (g *gen) sendOutcome(c int, p pending, async bool) error {
	r := p.recs[0]
	done := history.Op{Process: p.inv.Process, F: history.FSend}
	if async {
		of := p.inv.Index
		done.Of = &of
	}
	switch x := g.rng.IntN(100); {
	case x < 95:
		rec := g.appendRecord(r, plain)
		done.Type, done.Value = history.OK, history.Payload{Send: &rec}
	case x < 98:
		if g.rng.IntN(2) == 0 {
			g.appendRecord(r, plain)
		}
		done.Type, done.Value, done.Error = history.Info, history.Payload{Send: &r}, "kafka: request timed out (delivery.timeout.ms)"
	default:
		done.Type, done.Value, done.Error = history.Fail, history.Payload{Send: &r}, "kafka server: NOT_ENOUGH_REPLICAS"
	}
	_, err := g.emit(done)
	return err
}

func (g *gen) syncSend(c int) error {
	if len(g.inflight[c]) > 0 {
		p := g.inflight[c][0]
		g.inflight[c] = g.inflight[c][:0]
		return g.sendOutcome(c, p, false)
	}
	r := g.newRecord(c)
	inv, err := g.emit(history.Op{Process: history.Client(c), Type: history.Invoke, F: history.FSend, Value: history.Payload{Send: &r}})
	if err != nil {
		return err
	}
	g.inflight[c] = append(g.inflight[c], pending{inv: inv, recs: []history.Record{r}})
	return nil
}

// asyncSend either hands the async producer another record or completes its oldest send: an
// idempotent producer completes in send order, and its records reach the log in that order.
func (g *gen) asyncSend() error {
	c := asyncProducer
	q := g.inflight[c]
	if len(q) == 0 || (len(q) < maxAsync && g.rng.IntN(2) == 0) {
		r := g.newRecord(c)
		inv, err := g.emit(history.Op{Process: history.Client(c), Type: history.Invoke, F: history.FSend, Value: history.Payload{Send: &r}})
		if err != nil {
			return err
		}
		g.inflight[c] = append(q, pending{inv: inv, recs: []history.Record{r}})
		return nil
	}
	p := q[0]
	g.inflight[c] = append(q[:0], q[1:]...)
	return g.sendOutcome(c, p, true)
}

// txn invokes or completes a transaction of 1–4 records. Its records and then one marker per
// partition it touched reach the log when it completes; an aborted one's records stay there.
func (g *gen) txn() error {
	c := txnProducer
	txnID := "verity-txn-" + strconv.Itoa(c)
	if len(g.inflight[c]) == 0 {
		return g.beginTxn(c, txnID, 1+g.rng.IntN(4), abortShare)
	}
	p := g.inflight[c][0]
	g.inflight[c] = g.inflight[c][:0]
	intent := p.inv.Value.Txn.Intent
	done := history.Op{Process: p.inv.Process, F: history.FTxn}
	commit := intent == history.IntentCommit
	unknown := commit && g.rng.IntN(100) < 5
	if unknown {
		commit = g.rng.IntN(2) == 0 // the client cannot tell which
	}
	kind := aborted
	if commit {
		kind = committed
	}
	written := g.writeTxn(p.recs, kind)
	switch {
	case unknown:
		done.Type, done.Error = history.Info, "kafka: commit timed out: coordinator not available"
		done.Value = history.Payload{Txn: &history.Txn{TxnID: txnID, Records: p.recs, Intent: intent}}
	case commit:
		done.Type = history.OK
		done.Value = history.Payload{Txn: &history.Txn{TxnID: txnID, Records: written, Intent: intent}}
	default:
		done.Type, done.Error = history.Fail, "aborted"
		done.Value = history.Payload{Txn: &history.Txn{TxnID: txnID, Records: p.recs, Intent: intent}}
	}
	_, err := g.emit(done)
	return err
}

// txnRead invokes or completes a transaction of reader c that reads up to 8 records
// read_committed shows of one partition, from its position there, and writes 1–3 new ones.
// Its reads go in its completion; an abort leaves its position where it was, so that the next
// transaction reads the same records again.
func (g *gen) txnRead(c int) error {
	txnID := "verity-rpw-" + strconv.Itoa(c)
	if len(g.inflight[c]) == 0 {
		return g.beginTxn(c, txnID, 1+g.rng.IntN(3), abortShare/2)
	}
	p := g.inflight[c][0]
	g.inflight[c] = g.inflight[c][:0]
	intent := p.inv.Value.Txn.Intent
	commit := intent == history.IntentCommit
	part := g.rng.IntN(Partitions)
	reads := []history.Record{}
	log, pos := g.logs[part], g.pos[c][part]
	for ; pos < int64(len(log)) && len(reads) < 8; pos++ {
		if e := &log[pos]; e.visible(history.ReadCommitted) {
			reads = append(reads, history.Record{Topic: Topic, Partition: int32(part), Key: e.key, Value: e.value}.At(pos))
		}
	}
	kind := aborted
	if commit {
		kind = committed
		g.pos[c][part] = pos
	}
	written := g.writeTxn(p.recs, kind)
	end := g.now + 500
	done := history.Op{Process: p.inv.Process, F: history.FTxn}
	if commit {
		done.Type = history.OK
		done.Value = history.Payload{Txn: &history.Txn{TxnID: txnID, Records: written, Intent: intent, Reads: reads,
			Isolation: history.ReadCommitted, EndT: end}}
	} else {
		done.Type, done.Error = history.Fail, "aborted"
		done.Value = history.Payload{Txn: &history.Txn{TxnID: txnID, Records: p.recs, Intent: intent, Reads: reads,
			Isolation: history.ReadCommitted, EndT: end}}
	}
	_, err := g.emit(done)
	return err
}

// beginTxn invokes a transaction of process c that writes n new records and aborts with
// probability abort.
func (g *gen) beginTxn(c int, txnID string, n int, abort float64) error {
	recs := make([]history.Record, n)
	for i := range recs {
		recs[i] = g.newRecord(c)
	}
	intent := history.IntentCommit
	if g.rng.Float64() < abort {
		intent = history.IntentAbort
	}
	inv, err := g.emit(history.Op{Process: history.Client(c), Type: history.Invoke, F: history.FTxn,
		Value: history.Payload{Txn: &history.Txn{TxnID: txnID, Records: recs, Intent: intent}}})
	if err != nil {
		return err
	}
	g.inflight[c] = append(g.inflight[c], pending{inv: inv, recs: recs})
	return nil
}

// writeTxn appends a transaction's records (of kind committed or aborted) and then its marker
// in each partition it wrote, and returns the records with their offsets.
func (g *gen) writeTxn(recs []history.Record, kind entryKind) []history.Record {
	written := make([]history.Record, len(recs))
	var touched [Partitions]bool
	for i, r := range recs {
		written[i] = g.appendRecord(r, kind)
		touched[r.Partition] = true
	}
	for part, t := range touched {
		if t {
			g.logs[part] = append(g.logs[part], entry{kind: marker})
		}
	}
	return written
}

// poll invokes or completes a poll of consumer c: from its positions, records its isolation
// level shows, partition after partition, starting at a random one.
func (g *gen) poll(c int) error {
	iso, group := consumerIso(c), consumerGroup(c)
	if len(g.inflight[c]) == 0 {
		inv, err := g.emit(history.Op{Process: history.Client(c), Type: history.Invoke, F: history.FPoll,
			Value: history.Payload{Poll: &history.Poll{Isolation: iso, Group: group}}})
		if err != nil {
			return err
		}
		g.inflight[c] = append(g.inflight[c], pending{inv: inv})
		return nil
	}
	g.inflight[c] = g.inflight[c][:0]
	done := history.Op{Process: history.Client(c), F: history.FPoll}
	if g.rng.IntN(100) == 0 {
		done.Type, done.Error = history.Fail, "kafka: error while consuming: i/o timeout"
		done.Value = history.Payload{Poll: &history.Poll{Isolation: iso, Group: group}}
		_, err := g.emit(done)
		return err
	}
	recs := []history.Record{}
	start := g.rng.IntN(Partitions)
	for k := 0; k < Partitions && len(recs) < maxPoll; k++ {
		part := (start + k) % Partitions
		log := g.logs[part]
		pos := g.pos[c][part]
		for ; pos < int64(len(log)) && len(recs) < maxPoll; pos++ {
			if e := &log[pos]; e.visible(iso) {
				recs = append(recs, history.Record{Topic: Topic, Partition: int32(part), Key: e.key, Value: e.value}.At(pos))
			}
		}
		g.pos[c][part] = pos
	}
	done.Type = history.OK
	done.Value = history.Payload{Poll: &history.Poll{Isolation: iso, Group: group, Records: recs}}
	_, err := g.emit(done)
	return err
}

// nemesisStep kills a random node, or restarts the one it killed, bracketed by invoke and ok.
func (g *gen) nemesisStep() error {
	if g.nemesis != nil {
		inv := *g.nemesis
		g.nemesis = nil
		_, err := g.emit(history.Op{Process: inv.Process, Type: history.OK, F: inv.F, Value: inv.Value})
		return err
	}
	f, node := "kill", g.rng.IntN(nodes)+1
	if g.killed >= 0 {
		f, node, g.killed = "start", g.killed, -1
	} else {
		g.killed = node
	}
	raw := []byte(`{"nodes":[` + strconv.Itoa(node) + `]}`)
	inv, err := g.emit(history.Op{Process: history.NemesisP(), Type: history.Invoke, F: f, Value: history.Payload{Raw: raw}})
	if err != nil {
		return err
	}
	g.nemesis = &inv
	return nil
}

// finalReads scans every partition from offset 0 to its end in both isolation levels, in
// chunks over consecutive ranges [from, end) of at most ChunkRecords records.
func (g *gen) finalReads() error {
	proc := history.Client(finalReader)
	for part := range g.logs {
		log := g.logs[part]
		for _, iso := range []string{history.ReadUncommitted, history.ReadCommitted} {
			var offsets []int64
			for off := range log {
				if log[off].visible(iso) {
					offsets = append(offsets, int64(off))
				}
			}
			from := int64(0)
			for k := 0; k == 0 || k < len(offsets); k += ChunkRecords {
				chunk := offsets[k:min(k+ChunkRecords, len(offsets))]
				end := int64(len(log)) // the high watermark (no transaction is open: LSO = HW)
				if k+ChunkRecords < len(offsets) {
					end = offsets[k+ChunkRecords]
				}
				if _, err := g.emit(history.Op{Process: proc, Type: history.Invoke, F: history.FFinalRead,
					Value: history.Payload{FinalRead: &history.FinalRead{Topic: Topic, Partition: int32(part), Isolation: iso, From: from, End: from}}}); err != nil {
					return err
				}
				recs := make([]history.Record, len(chunk))
				for i, off := range chunk {
					recs[i] = history.Record{Topic: Topic, Partition: int32(part), Key: log[off].key, Value: log[off].value}.At(off)
				}
				if _, err := g.emit(history.Op{Process: proc, Type: history.OK, F: history.FFinalRead,
					Value: history.Payload{FinalRead: &history.FinalRead{Topic: Topic, Partition: int32(part), Isolation: iso, From: from, End: end, Records: recs}}}); err != nil {
					return err
				}
				from = end
			}
		}
	}
	return nil
}
