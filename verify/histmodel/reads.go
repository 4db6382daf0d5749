package histmodel

import (
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// Mutators of the families of transactions that read. Each starts transactions of processes
// of its own (procReadTxnA…C) on the main topic after the clean run; they commit, with their
// markers, and say nothing of when their end was asked for (so that a read of their records
// before they completed is no uncommitted-read) unless the mutator is that one.

// readTxn is a committed transaction of process p that writes one new record to each of parts
// and reads at iso; its markers are written by the caller, once every record is in the logs.
func (m *Model) readTxn(p int, iso string, parts ...tp) *txn {
	tx := &txn{id: txnIDOf(p), proc: p, intent: history.IntentCommit, committed: true, readIso: iso, reads: []*entry{}}
	for _, t := range parts {
		e := m.newRecord(p, t, kindTxn)
		e.txn = tx
		tx.recs = append(tx.recs, m.appendEntry(e))
	}
	m.txns = append(m.txns, tx)
	return tx
}

// isoVariant picks read_committed (the anomaly forbidden) or read_uncommitted (permitted).
func (m *Model) isoVariant() string {
	if m.rng.IntN(2) == 0 {
		return history.ReadCommitted
	}
	return history.ReadUncommitted
}

func (m *Model) readFacts(iso string) guarantee.Facts {
	return m.facts(0, "", topicMain, kafkaconf.Isolation(iso))
}

// g1c: two transactions, each reading the record the other wrote.
func g1c(m *Model) (*Injection, error) {
	iso := m.isoVariant()
	t1 := m.readTxn(procReadTxnA, iso, m.mainPart())
	t2 := m.readTxn(procReadTxnB, iso, m.mainPart())
	m.markers(t1)
	m.markers(t2)
	t1.reads, t2.reads = []*entry{t2.recs[0]}, []*entry{t1.recs[0]}
	a1 := m.invokeOnly(txnAction(procReadTxnA, history.FTxn, history.OK, t1))
	a2 := m.invokeOnly(txnAction(procReadTxnB, history.FTxn, history.OK, t2))
	m.complete(a1)
	m.complete(a2)
	return &Injection{Variant: iso, Facts: m.readFacts(iso), refs: []ref{doneOf(a1), doneOf(a2)}}, nil
}

// g1cOrdered: T1 reads T3's record and completes; T2 then begins (in T1's process for
// G1c-process, in another for G1c-realtime) and writes a record T3 reads.
func g1cOrdered(sameProcess bool) func(m *Model) (*Injection, error) {
	return func(m *Model) (*Injection, error) {
		iso := m.isoVariant()
		p2 := procReadTxnB
		if sameProcess {
			p2 = procReadTxnA
		}
		// Each transaction's markers follow its record: t1 and t2 may share a process and a
		// partition, and a marker must end t1 there before t2 writes.
		var t1, t2, t3 *txn
		for _, w := range []struct {
			tx **txn
			p  int
		}{{&t3, procReadTxnC}, {&t1, procReadTxnA}, {&t2, p2}} {
			*w.tx = m.readTxn(w.p, iso, m.mainPart())
			m.markers(*w.tx)
		}
		t1.reads, t3.reads = []*entry{t3.recs[0]}, []*entry{t2.recs[0]}
		a3 := m.invokeOnly(txnAction(procReadTxnC, history.FTxn, history.OK, t3))
		a1 := m.add(txnAction(procReadTxnA, history.FTxn, history.OK, t1))
		a2 := m.add(txnAction(p2, history.FTxn, history.OK, t2))
		m.complete(a3)
		return &Injection{Variant: iso, Facts: m.readFacts(iso), refs: []ref{doneOf(a1), doneOf(a2), doneOf(a3)}}, nil
	}
}

// precommittedRead: a transaction reads the record it wrote.
func precommittedRead(m *Model) (*Injection, error) {
	iso := m.isoVariant()
	tx := m.readTxn(procReadTxnA, iso, m.mainPart())
	m.markers(tx)
	tx.reads = []*entry{tx.recs[0]}
	a := m.add(txnAction(procReadTxnA, history.FTxn, history.OK, tx))
	return &Injection{Variant: iso, Facts: m.readFacts(iso), refs: []ref{invokeOf(a), doneOf(a)}}, nil
}

// uncommittedRead: a fresh consumer's poll returns a transaction's record while the
// transaction is open, before its end is asked for.
func uncommittedRead(m *Model) (*Injection, error) {
	iso := m.isoVariant()
	t := m.mainPart()
	tx := m.readTxn(procReadTxnA, iso, t)
	tx.reads, tx.endT = nil, true
	m.markers(tx)
	m.freshConsumer(t, iso)
	a := m.invokeOnly(txnAction(procReadTxnA, history.FTxn, history.OK, tx))
	poll := m.pollOp(procReader, iso, []*entry{tx.recs[0]})
	m.complete(a)
	return &Injection{Variant: iso, Facts: m.readFacts(iso), refs: []ref{invokeOf(a), doneOf(poll), doneOf(a)}}, nil
}

// futureRead: a fresh consumer's poll returns a record whose send begins only after it.
func futureRead(m *Model) (*Injection, error) {
	t := m.mainPart()
	p := m.producer()
	e := m.appendEntry(m.newRecord(p, t, kindPlain))
	m.freshConsumer(t, history.ReadCommitted)
	poll := m.pollOp(procReader, history.ReadCommitted, []*entry{e})
	send := m.add(m.sendAction(p, e, history.OK))
	return &Injection{Facts: m.readFacts(""), refs: []ref{doneOf(poll), invokeOf(send)}}, nil
}

// phantomRead: the log holds a record no op wrote; the final reads show it.
func phantomRead(m *Model) (*Injection, error) {
	e := m.appendEntry(m.newRecord(procReader, m.mainPart(), kindPlain))
	return &Injection{Facts: m.readFacts(""), refs: []ref{showing(e, "")}}, nil
}

// g0: two transactions append to two partitions in opposite orders.
func g0(m *Model) (*Injection, error) {
	p := m.mainPart()
	q := m.otherPart(p)
	t1 := &txn{id: txnIDOf(procReadTxnA), proc: procReadTxnA, intent: history.IntentCommit, committed: true}
	t2 := &txn{id: txnIDOf(procReadTxnB), proc: procReadTxnB, intent: history.IntentCommit, committed: true}
	for _, w := range []struct {
		tx *txn
		p  int
		at tp
	}{{t1, procReadTxnA, p}, {t2, procReadTxnB, p}, {t2, procReadTxnB, q}, {t1, procReadTxnA, q}} {
		e := m.newRecord(w.p, w.at, kindTxn)
		e.txn = w.tx
		w.tx.recs = append(w.tx.recs, m.appendEntry(e))
	}
	m.markers(t1)
	m.markers(t2)
	m.txns = append(m.txns, t1, t2)
	a1 := m.invokeOnly(txnAction(procReadTxnA, history.FTxn, history.OK, t1))
	a2 := m.invokeOnly(txnAction(procReadTxnB, history.FTxn, history.OK, t2))
	m.complete(a1)
	m.complete(a2)
	return &Injection{Facts: m.readFacts(""), refs: []ref{doneOf(a1), doneOf(a2)}}, nil
}
