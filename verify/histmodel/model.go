// Package histmodel generates Verity histories from a model of the run, for the checker's own
// tests: a clean history, whose every observation is consistent with a simulated Kafka that
// keeps every promise, and mutated ones, each with exactly one anomaly of one family injected
// into the model before the observations are written (Mutators).
//
// The model keeps the ground truth the checker never sees: every partition's log (records,
// transaction markers taking offsets, records cut by a truncation), each transaction's real
// outcome (an info commit may have committed or not), consumers' positions and group offsets,
// the read-process-write processor's committed position, a sink's store and its outbox relay,
// the leader and leader epoch of each partition, and a share group's records as the
// share-partition leader keeps them (delivery count, holder, lock expiry, finished or not).
// Observations (sends and their ok/fail/info outcomes, transactions, polls with rebalances,
// rpw steps, effects, publishes, nemesis events, ISR samples, share polls, acknowledgements
// and start offsets, the final reads split in ranges, the sink's final state) are derived
// from it, so that a mutation of the model shows up in every observation that would see it,
// and in no other.
//
// The same seed and options give the same history, byte for byte (math/rand/v2, PCG).
//
// A history is built in three phases, one function each: Generate simulates the clean run;
// a Mutator, if any, appends its anomaly to the model (a tail after the clean run, where only
// the mutator's own observers look, so that nothing else changes); Finish heals the cluster,
// drains the relay and writes the final reads and the sink's final state; Render numbers the
// ops and resolves the evidence.
package histmodel

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/sink"
)

// Topics, processes and names of a generated history.
const (
	topicMain   = "t"   // written by the producers and transactions, read by the consumers
	topicOut    = "out" // the read-process-write processor's output
	topicSinkIn = "sin" // the sink's input
	topicOutbox = "o"   // the outbox relay's topic
	sinkName    = "s"
	groupName   = "g"
	rpwGroup    = "rg"
	sinkGroup   = "sg"
	topicShare  = "q"  // written by the producers, read by the share group's members
	shareGroup  = "sh" // the share group (KIP-932)

	procProducerA  = 1 // plain producers: one send at a time
	procProducerB  = 2
	procTxn        = 3 // transactional producer
	procRPW        = 4 // read-process-write processor (transactional)
	procAssigned   = 5 // consumer that assigns itself every partition, read_committed
	procGroup      = 6 // consumer in a group that rebalances
	procSink       = 7
	procRelay      = 8
	procFenced     = 10 // a second instance of the transactional producer's id (zombie-write)
	procReader     = 11 // a fresh consumer a mutator starts
	procReadTxnA   = 12 // transactions that read, which a mutator starts
	procReadTxnB   = 13
	procReadTxnC   = 14
	procShareA     = 20 // the share group's members: procShareA … procShareA+shareMembers-1
	procShareState = 96 // observes the share partitions' start offsets after the drain
	procSinkReader = 98
	procFinal      = 99

	nodes = 3 // brokers 1..nodes, also the KRaft voters
)

// Parts chooses which parts of a run a history has, so that a mutator can ask for what it
// needs (Needs) and the clean property can cover every combination.
type Parts struct {
	// Transactions: a transactional producer commits and aborts transactions on the main topic.
	Transactions bool
	// RPW: a read-process-write processor turns main-topic partition 0 into the output topic.
	RPW bool
	// Consumers: an assigned read_committed consumer and a group consumer that rebalances
	// (read_uncommitted when no transaction writes the main topic).
	Consumers bool
	// ISR: the nemesis's watcher samples each main-topic partition's ISR, leader and epoch.
	ISR bool
	// LeaderUnknown: when a leader is killed, a sample first shows no leader (-1) at the same
	// epoch, as a watcher whose brokers have not learnt the new leader yet reports it.
	LeaderUnknown bool
	// Nemesis: brokers are killed and restarted (which, being within the guarantee, loses
	// nothing).
	Nemesis bool
	// Unknown: some sends and commits end info, having or not having taken effect.
	Unknown bool
	// Sink is the mode of a sink applying the sink topic to a store; "" for none. An outbox
	// sink also has a relay publishing to the outbox topic.
	Sink sink.Mode
	// Share: the producers also write the share topic, whose share group's members acquire
	// its records and acknowledge them (KIP-932); the final drain accepts what is left.
	Share bool
}

// Options size a history.
type Options struct {
	Parts
	// Steps is the number of client steps of the clean run (default 24).
	Steps int
	// Partitions is the main topic's partition count (default 2, at least 2).
	Partitions int
	// Chunk is the most records one final-read range holds (default: 2 to 5, by seed), so
	// that scans are split in ranges.
	Chunk int
}

// tp is a topic-partition.
type tp struct {
	topic string
	part  int32
}

func (t tp) key() string { return t.topic + "-" + itoa(int(t.part)) }

type entryKind uint8

const (
	kindPlain  entryKind = iota // a plain send's record
	kindTxn                     // a transactional record (txn or rpw output)
	kindMarker                  // a commit or abort marker: takes an offset, never returned
	kindStray                   // a transactional record outside any transaction: never ended
)

// entry is one offset of a partition's log, or a record that never reached one (off -1).
type entry struct {
	at    tp
	off   int64
	value string
	key   string
	kind  entryKind
	txn   *txn
	// lost: cut from the log before the final reads (a truncation), which do not show it.
	lost bool
	// abortedHere: the marker that ended its transaction in this partition was an abort,
	// whatever the transaction's outcome elsewhere.
	abortedHere bool
	// rcSees is the record the read_committed scan found at this offset instead: the log was
	// cut back and refilled between the two scans.
	rcSees *entry
}

// plog is one partition's log.
type plog struct {
	at      tp
	entries []*entry
}

// txn is one transaction (a txn or rpw op) and its ground truth.
type txn struct {
	id        string
	proc      int
	intent    string
	committed bool // what its markers said: the truth, whatever the client was told
	recs      []*entry
	inputs    []*entry // rpw
	rpw       bool
	// reads are what a transaction that reads polled, at readIso; endT: its completion says
	// when its end was asked for (half a millisecond before it).
	reads   []*entry
	readIso string
	endT    bool
}

// action is one client or nemesis op: an invoke and (unless out is empty) a completion.
type action struct {
	proc  history.Process
	f     string
	out   history.Type // the completion's type; "" when it never completes
	err   string
	async bool // the completion names its invoke ("of")

	rec   *entry     // send: the record sent
	txn   *txn       // txn, rpw
	reads []*entry   // poll: the records returned, in order
	iso   string     // poll
	group string     // poll
	scan  *scanRange // final-read

	raw, rawDone json.RawMessage // any other op's invoke and completion values

	inv, done int64 // the ops' indices, once rendered
}

// scanRange is one final-read op: [from, end) of one partition at one isolation.
type scanRange struct {
	at        tp
	iso       string
	from, end int64
	shown     []*entry
}

// step is one line of the timeline: an action's invoke, or its completion.
type step struct {
	a    *action
	done bool
	// after is the time that passes before the step beyond the 1 ms between any two.
	after time.Duration
}

// Model is a simulated run: the ground truth and the timeline of what the clients observed.
type Model struct {
	opts  Options
	rng   *rand.Rand
	seed  uint64
	cfg   history.Config
	logs  []*plog // in creation order; rendered sorted
	steps []step
	idle  time.Duration // passes before the next step (wait)
	// clock is the time of the last step on the timeline, as Render will write it (from 0):
	// the share group's locks expire by it.
	clock time.Duration
	seq   map[int]int // records written per process, for unique values

	txns     []*txn
	pos      map[int]map[tp]int64 // consumers' next offsets
	groupPos map[tp]int64         // the group consumer's committed offsets
	rpwPos   int64                // the processor's committed position in its input partition
	killed   int                  // the broker the nemesis has down, 0 if none
	leaders  map[tp]*leadership
	sink     sinkModel
	finished bool
	// healAfter: a liveness mutator's stall has a broker killed and, this far into it,
	// started (LiveBuild.HealAfter).
	healAfter time.Duration
	// unavailableFor: a liveness mutator's stall has its partition without a leader for this
	// long first (LiveBuild.UnavailableFor).
	unavailableFor time.Duration
	scans          []*action // the final reads, once Finish has written them
	sinkRead       *action
	share          *shareModel // nil without the Share part
}

// leadership is one partition's leader as the metadata says, and the sample that first
// showed its epoch (metadata-lost's evidence).
type leadership struct {
	leader, epoch int32
	first         *action
}

// sinkModel is the sink's store and positions, and its relay's progress.
type sinkModel struct {
	pos, committed int64          // next offset of the sink topic to apply, and committed
	applied        map[string]int // the store: times each event was applied
	events         []*entry       // applied events, in order, for the relay
	firstEffect    map[string]*action
	published      int             // events the relay published
	unpublished    map[string]bool // events the relay marks sent without publishing
	effects        int             // effect ops written
}

func newModel(seed uint64, opts Options) *Model {
	if opts.Steps <= 0 {
		opts.Steps = 16
	}
	if opts.Partitions < 2 {
		opts.Partitions = 2
	}
	m := &Model{
		opts:     opts,
		seed:     seed,
		rng:      rand.New(rand.NewPCG(seed, 0x5eed_1e55_0f_c0de)),
		seq:      map[int]int{},
		pos:      map[int]map[tp]int64{},
		groupPos: map[tp]int64{},
		leaders:  map[tp]*leadership{},
	}
	if m.opts.Chunk <= 0 {
		m.opts.Chunk = 2 + m.rng.IntN(4)
	}
	m.sink.applied = map[string]int{}
	m.sink.firstEffect = map[string]*action{}
	m.sink.unpublished = map[string]bool{}
	if opts.Share {
		m.newShare()
	}
	m.cfg = m.header()
	for p := range opts.Partitions {
		m.log(tp{topicMain, int32(p)})
	}
	if opts.RPW {
		m.log(tp{topicOut, 0})
	}
	if opts.Sink != "" {
		m.log(tp{topicSinkIn, 0})
		if info, _ := opts.Sink.Info(); info.Relays {
			m.log(tp{topicOutbox, 0})
		}
	}
	if m.share != nil {
		for p := range m.share.parts {
			m.log(tp{topicShare, int32(p)})
		}
	}
	return m
}

// log returns the log of t, creating it.
func (m *Model) log(t tp) *plog {
	for _, l := range m.logs {
		if l.at == t {
			return l
		}
	}
	l := &plog{at: t}
	m.logs = append(m.logs, l)
	return l
}

// appendEntry writes e at the end of its partition's log.
func (m *Model) appendEntry(e *entry) *entry {
	l := m.log(e.at)
	e.off = int64(len(l.entries))
	l.entries = append(l.entries, e)
	return e
}

// newRecord is process p's next record for t, with a unique value "p-n"; not in a log yet.
func (m *Model) newRecord(p int, t tp, kind entryKind) *entry {
	m.seq[p]++
	return &entry{at: t, off: -1, value: itoa(p) + "-" + itoa(m.seq[p]), key: "k" + itoa(m.rng.IntN(16)), kind: kind}
}

// add puts a on the timeline, its completion right after its invoke.
func (m *Model) add(a *action) *action {
	m.push(step{a: a})
	if a.out != "" {
		m.push(step{a: a, done: true})
	}
	return a
}

// push puts a step on the timeline, after the time wait let pass.
func (m *Model) push(s step) {
	s.after, m.idle = m.idle, 0
	m.clock += time.Millisecond + s.after
	m.steps = append(m.steps, s)
}

// wait lets d pass before the next step.
func (m *Model) wait(d time.Duration) { m.idle += d }

// invokeOnly and complete put an action's invoke and completion on the timeline apart, for
// ops in flight together.
func (m *Model) invokeOnly(a *action) *action {
	m.push(step{a: a})
	return a
}

func (m *Model) complete(a *action) {
	m.push(step{a: a, done: true})
}

// visible reports whether a reader at isolation iso is shown e (ignoring the LSO).
func (e *entry) visible(iso string) bool {
	switch e.kind {
	case kindPlain:
		return true
	case kindTxn:
		return iso == history.ReadUncommitted || (e.txn.committed && !e.abortedHere)
	case kindStray:
		return iso == history.ReadUncommitted
	}
	return false
}

// record is e as the history writes it, with its offset when known.
func (e *entry) record() history.Record {
	r := history.Record{Topic: e.at.topic, Partition: e.at.part, Key: e.key, Value: e.value}
	if e.off >= 0 {
		r = r.At(e.off)
	}
	return r
}

// bare is e without its offset: what an invoke carries.
func (e *entry) bare() history.Record {
	return history.Record{Topic: e.at.topic, Partition: e.at.part, Key: e.key, Value: e.value}
}

func records(es []*entry, withOffsets bool) []history.Record {
	out := make([]history.Record, len(es))
	for i, e := range es {
		if withOffsets {
			out[i] = e.record()
		} else {
			out[i] = e.bare()
		}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// mustJSON encodes a value the package built itself (maps of strings and numbers, slices,
// plain structs), which cannot fail to encode.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("histmodel: encoding its own value: " + err.Error())
	}
	return b
}
