package verify

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/sink"
	"github.com/verity-kafka/verity/verify/results"
)

// Cases of the liveness check: hand-made histories with explicit waits, each asserting a
// condition on stalls, recovery or findings.

func livenessOf(t *testing.T, h *hb, cfg history.Config) *results.Liveness {
	t.Helper()
	r := h.check(cfg)
	if r.Liveness == nil {
		t.Fatal("results carry no liveness section")
	}
	return r.Liveness
}

func clientNamed(l *results.Liveness, name string) *results.ClientLiveness {
	for i := range l.Clients {
		if l.Clients[i].Client == name {
			return &l.Clients[i]
		}
	}
	return nil
}

func stallsOn(c *results.ClientLiveness, part int32) []results.ClientStall {
	var out []results.ClientStall
	for _, s := range c.Stalls {
		if s.Partition == part {
			out = append(out, s)
		}
	}
	return out
}

func findings(l *results.Liveness, f results.LivenessFamily) results.LivenessFindings {
	return l.Findings[f]
}

func (h *hb) healAll() int64 {
	h.add(history.Op{Process: history.NemesisP(), Type: history.Invoke, F: history.FHealAll, Value: history.Payload{Raw: json.RawMessage(`{}`)}})
	return h.add(history.Op{Process: history.NemesisP(), Type: history.OK, F: history.FHealAll, Value: history.Payload{Raw: json.RawMessage(`{}`)}})
}

// leaderISR writes an ISR observation with a leader (-1: none).
func (h *hb) leaderISR(topic string, part int32, leader int32, isr ...int) int64 {
	two := 2
	b, _ := json.Marshal(ISREvent{Topic: topic, Partition: part, ISR: isr, MinISR: &two, Leader: &leader, Replicas: []int{1, 2, 3}})
	return h.add(history.Op{Process: history.NemesisP(), Type: history.Info, F: "isr", Value: history.Payload{Raw: b}})
}

func TestLivenessProducerStall(t *testing.T) {
	h := newHB()
	h.send(1, rec("t", 0, "1-1"), OK, 0)
	inv := h.sendInvoke(1, rec("t", 0, "1-2"))
	h.wait(10 * time.Second)
	done := h.sendDone(1, inv, rec("t", 0, "1-2"), OK, 1, false)
	h.send(1, rec("t", 0, "1-3"), OK, 2)
	h.healAll()
	l := livenessOf(t, h, strict())
	c := clientNamed(l, "producer 1")
	if c == nil || c.Kind != results.KindProducer {
		t.Fatalf("no producer 1 among %+v", l.Clients)
	}
	st := stallsOn(c, 0)
	if len(st) != 1 || st[0].Len() < 10_000 || st[0].Len() > 10_010 || !st[0].Recovered {
		t.Fatalf("want one recovered stall of 10 s, got %+v", st)
	}
	if !slices.Contains(st[0].Ops, inv) || !slices.Contains(st[0].Ops, done) {
		t.Errorf("stall ops %v lack the pending invoke %d or the ack %d", st[0].Ops, inv, done)
	}
	if l.Verdict != results.LivenessNotStated {
		t.Errorf("verdict %s without bounds", l.Verdict)
	}
}

func TestLivenessAsyncStallIsPerPartition(t *testing.T) {
	h := newHB()
	inv := h.sendInvoke(1, rec("t", 0, "1-1"))
	for i := range 12 {
		h.wait(time.Second)
		v := "1-" + string(rune('a'+i))
		in := h.sendInvoke(1, rec("t", 1, v))
		h.sendDone(1, in, rec("t", 1, v), OK, int64(i), true)
	}
	h.sendDone(1, inv, rec("t", 0, "1-1"), OK, 0, true)
	h.healAll()
	l := livenessOf(t, h, strict())
	c := clientNamed(l, "producer 1")
	if st := stallsOn(c, 0); len(st) != 1 || st[0].Len() < 12_000 {
		t.Errorf("p0 should stall 12 s, got %+v", st)
	}
	if st := stallsOn(c, 1); len(st) != 0 {
		t.Errorf("p1 acknowledged every second, yet stalls %+v", st)
	}
}

func TestLivenessPendingAtHorizonIsNotRecovered(t *testing.T) {
	h := newHB()
	h.sendInvoke(1, rec("t", 0, "1-1"))
	h.wait(5 * time.Second)
	h.healAll()
	l := livenessOf(t, h, strict())
	st := stallsOn(clientNamed(l, "producer 1"), 0)
	if len(st) != 1 || st[0].Recovered || st[0].Len() < 5000 {
		t.Fatalf("want a stall open to the horizon, got %+v", st)
	}
}

// A read_committed reader has no work past an open transaction; a read_uncommitted one does.
func TestLivenessReadCommittedWaitsForOpenTxn(t *testing.T) {
	for _, iso := range []string{RC, RU} {
		h := newHB()
		h.send(1, rec("t", 0, "1-1"), OK, 0)
		h.poll(2, iso, at(rec("t", 0, "1-1"), 0))
		h.begin(3, rec("t", 0, "3-1"))
		h.send(1, rec("t", 0, "1-2"), OK, 2)
		h.wait(5 * time.Second)
		h.poll(2, iso)
		h.end(3, OK, "", 0, []history.Record{at(rec("t", 0, "3-1"), 1)})
		h.poll(2, iso, at(rec("t", 0, "3-1"), 1), at(rec("t", 0, "1-2"), 2))
		h.healAll()
		l := livenessOf(t, h, strict())
		c := clientNamed(l, "consumer 2")
		if c == nil {
			t.Fatalf("%s: no consumer 2 among %+v", iso, l.Clients)
		}
		st := stallsOn(c, 0)
		if iso == RC && len(st) != 0 {
			t.Errorf("read_committed reader stalls behind an open transaction: %+v", st)
		}
		if iso == RU && (len(st) != 1 || st[0].Len() < 5000) {
			t.Errorf("read_uncommitted reader should stall 5 s, got %+v", st)
		}
	}
}

// A group's progress is any member's: one member idle while another reads is no stall.
func TestLivenessGroupProgressIsAnyMembers(t *testing.T) {
	h := newHB()
	h.joined(2, "g")
	h.joined(3, "g")
	for i := range int64(8) {
		h.send(1, rec("i", 0, "1-"+string(rune('a'+i))), OK, i)
		h.groupPoll(2, "g")
		h.groupPoll(3, "g", at(rec("i", 0, "1-"+string(rune('a'+i))), i))
		h.wait(time.Second)
	}
	h.healAll()
	l := livenessOf(t, h, strict())
	c := clientNamed(l, "group g")
	if c == nil || c.Kind != results.KindConsumer {
		t.Fatalf("no group g among %+v", l.Clients)
	}
	if len(c.Stalls) != 0 {
		t.Errorf("group g read every record within a second, yet stalls %+v", c.Stalls)
	}
}

// A kill's recovery runs from its injection to the progress that ended the stall over it.
func TestLivenessRecoveryFromInjectionAndHeal(t *testing.T) {
	h := newHB()
	h.send(1, rec("t", 0, "1-1"), OK, 0)
	h.wait(time.Second)
	kill := h.nemesis("kill", `{"nodes":[2]}`)
	inv := h.sendInvoke(1, rec("t", 0, "1-2"))
	h.wait(9 * time.Second)
	h.sendDone(1, inv, rec("t", 0, "1-2"), OK, 1, false)
	h.wait(5 * time.Second)
	h.nemesis("start", `{"nodes":[2]}`)
	// A pause whose stall outlives its heal by 2 s.
	h.send(1, rec("t", 0, "1-3"), OK, 2)
	h.nemesis("pause", `{"nodes":[3]}`)
	inv = h.sendInvoke(1, rec("t", 0, "1-4"))
	h.wait(6 * time.Second)
	h.nemesis("resume", `{"nodes":[3]}`)
	h.wait(2 * time.Second)
	h.sendDone(1, inv, rec("t", 0, "1-4"), OK, 3, false)
	h.wait(20 * time.Second)
	h.send(1, rec("t", 0, "1-5"), OK, 4)
	h.healAll()
	l := livenessOf(t, h, strict())
	if len(l.Faults) != 2 {
		t.Fatalf("want 2 faults, got %+v", l.Faults)
	}
	k, p := l.Faults[0], l.Faults[1]
	if k.F != "kill" || !slices.Contains(k.Ops, kill-1) {
		t.Errorf("first fault %+v is not the kill at op %d", k, kill-1)
	}
	rk := k.Recovery
	if rk.FromInjectionMS < 9000 || rk.FromInjectionMS > 9100 || rk.FromHealMS != nil || !rk.Recovered {
		t.Errorf("kill: want ~9 s from injection and no stall past the heal, got %+v", rk)
	}
	rp := p.Recovery
	if rp.FromHealMS == nil || *rp.FromHealMS < 2000 || *rp.FromHealMS > 2100 {
		t.Errorf("pause: want ~2 s from the heal, got %+v", rp)
	}
	if len(k.Partitions) != 1 || k.Partitions[0].Partition != 0 || k.Partitions[0].FromInjectionMS != rk.FromInjectionMS {
		t.Errorf("kill: want t-0's recovery beside the client's, got %+v", k.Partitions)
	}
	if l.Recovery == nil || l.Recovery.FromInjectionMS < rk.FromInjectionMS {
		t.Errorf("the run's recovery %+v is not the worst of its faults", l.Recovery)
	}
}

// stuckHistory heals a kill, then leaves the client of kind with work for d before it
// progresses; it returns the op that showed work and the one that ended the stall.
func stuckHistory(kind results.ClientKind, d time.Duration) (*hb, history.Config, [2]int64) {
	h := newHB()
	cfg := strict()
	h.nemesis("kill", `{"nodes":[2]}`)
	h.wait(time.Second)
	h.nemesis("start", `{"nodes":[2]}`)
	var refs [2]int64
	switch kind {
	case results.KindProducer:
		h.send(1, rec("t", 0, "1-1"), OK, 0)
		refs[0] = h.sendInvoke(1, rec("t", 0, "1-2"))
		h.wait(d)
		refs[1] = h.sendDone(1, refs[0], rec("t", 0, "1-2"), OK, 1, false)
	case results.KindConsumer:
		h.joined(2, "g")
		_, refs[0] = h.send(1, rec("i", 0, "1-1"), OK, 0)
		for range int(d / time.Second) {
			h.groupPoll(2, "g")
			h.wait(time.Second)
		}
		h.wait(d % time.Second)
		refs[1] = h.groupPoll(2, "g", at(rec("i", 0, "1-1"), 0))
		h.finalBoth("i", 0, 0, 1, at(rec("i", 0, "1-1"), 0))
	case results.KindProcessor:
		h.joined(2, "g")
		_, refs[0] = h.send(1, rec("i", 0, "1-1"), OK, 0)
		for range int(d / time.Second) {
			h.step(2, Fail, at(rec("i", 0, "1-1"), 0))
			h.wait(time.Second)
		}
		h.wait(d % time.Second)
		_, refs[1] = h.step(2, OK, at(rec("i", 0, "1-1"), 0))
		h.finalBoth("i", 0, 0, 1, at(rec("i", 0, "1-1"), 0))
	case results.KindSink:
		cfg.Sinks = map[string]history.SinkInfo{"s": {Mode: sink.Naive, Topic: "t", Processes: []int{4}}}
		_, refs[0] = h.send(1, rec("t", 0, "1-1"), OK, 0)
		h.effect(4, "1-1", 0, true) // the sink follows t from here
		_, refs[0] = h.send(1, rec("t", 0, "1-2"), OK, 1)
		for range int(d / time.Second) {
			in, _ := json.Marshal(map[string]any{"sink": "s", "event": "1-2", "topic": "t", "partition": 0, "offset": 1})
			h.add(history.Op{Process: history.Client(4), Type: history.Invoke, F: history.FEffect, Value: history.Payload{Raw: in}})
			h.add(history.Op{Process: history.Client(4), Type: history.Fail, F: history.FEffect, Value: history.Payload{Raw: in}, Error: "store unreachable"})
			h.wait(time.Second)
		}
		h.wait(d % time.Second)
		refs[1] = h.effect(4, "1-2", 1, true)
		h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-2"), 1))
	}
	return h, cfg, refs
}

func TestLivenessStuckFamilies(t *testing.T) {
	for _, kind := range results.ClientKinds() {
		fam := kind.StuckFamily()
		t.Run(string(fam), func(t *testing.T) {
			h, cfg, refs := stuckHistory(kind, StuckAfter+2*time.Second)
			r := h.check(cfg)
			l := r.Liveness
			fs := findings(l, fam)
			if fs.Count != 1 || len(fs.Examples) != 1 {
				t.Fatalf("want one %s, got %+v (clients %+v)", fam, fs, l.Clients)
			}
			e := fs.Examples[0]
			for _, ref := range refs {
				if !slices.Contains(e.Ops, ref) {
					t.Errorf("%s evidence %v lacks op %d (%s)", fam, e.Ops, ref, e.Note)
				}
			}
			if e.StuckMS <= float64(StuckAfter.Milliseconds()) || e.Kind != kind {
				t.Errorf("finding %+v", e)
			}
			for _, other := range results.LivenessFamilies() {
				if other != fam && l.Findings[other].Count != 0 {
					t.Errorf("also %s: %+v", other, l.Findings[other])
				}
			}
			if r.Outcome() != results.OutcomePass && r.Verdict == results.Pass {
				t.Errorf("a stuck client changed the outcome to %s", r.Outcome())
			}
		})
		t.Run(string(fam)+"/near-miss", func(t *testing.T) {
			h, cfg, _ := stuckHistory(kind, StuckAfter-2*time.Second)
			l := h.check(cfg).Liveness
			if fs := findings(l, fam); fs.Count != 0 {
				t.Errorf("%s after %s: %+v", fam, StuckAfter-2*time.Second, fs.Examples)
			}
		})
	}
}

// Stuck time counts only while the ISR watch shows the partition able to serve.
func TestLivenessStuckGatedByAvailability(t *testing.T) {
	h := newHB()
	h.leaderISR("t", 0, 1, 1, 2, 3)
	h.nemesis("kill", `{"nodes":[1]}`)
	h.nemesis("start", `{"nodes":[1]}`)
	h.send(1, rec("t", 0, "1-1"), OK, 0)
	h.leaderISR("t", 0, -1)
	inv := h.sendInvoke(1, rec("t", 0, "1-2"))
	h.wait(StuckAfter + 5*time.Second)
	h.leaderISR("t", 0, 1, 1, 2, 3)
	h.wait(2 * time.Second)
	h.sendDone(1, inv, rec("t", 0, "1-2"), OK, 1, false)
	h.healAll()
	l := livenessOf(t, h, strict())
	if !l.Gated {
		t.Error("a history with ISR observations is not gated")
	}
	if fs := findings(l, results.StuckProducer); fs.Count != 0 {
		t.Errorf("a producer without a leader to write to is not stuck: %+v", fs.Examples)
	}
	st := stallsOn(clientNamed(l, "producer 1"), 0)
	if len(st) != 1 || st[0].Len() < float64((StuckAfter+5*time.Second).Milliseconds()) {
		t.Errorf("the stall itself is still reported whole: %+v", st)
	}
}

// A reader's work that the final reads show was lost is no work: no stall.
func TestLivenessLostWorkIsNoWork(t *testing.T) {
	h := newHB()
	h.joined(2, "g")
	h.send(1, rec("i", 0, "1-1"), OK, 0)
	h.groupPoll(2, "g", at(rec("i", 0, "1-1"), 0))
	h.send(1, rec("i", 0, "1-2"), OK, 1)
	for range 20 {
		h.groupPoll(2, "g")
		h.wait(time.Second)
	}
	h.healAll()
	h.finalBoth("i", 0, 0, 1, at(rec("i", 0, "1-1"), 0))
	l := livenessOf(t, h, strict())
	if c := clientNamed(l, "group g"); c == nil || len(c.Stalls) != 0 {
		t.Errorf("group g waited for a record the log lost: %+v", c)
	}
}

func boundCfg(maxStall, recoverWithin time.Duration) history.Config {
	cfg := strict()
	b := &history.LivenessBounds{}
	if maxStall > 0 {
		b.MaxStallMS = ptr(maxStall.Milliseconds())
	}
	if recoverWithin > 0 {
		b.RecoverWithinMS = ptr(recoverWithin.Milliseconds())
	}
	cfg.Liveness = b
	return cfg
}

func TestLivenessMaxStall(t *testing.T) {
	for _, c := range []struct {
		stall time.Duration
		want  results.LivenessVerdict
	}{{9900 * time.Millisecond, results.LivenessPass}, {10100 * time.Millisecond, results.LivenessFail}} {
		h := newHB()
		h.send(1, rec("t", 0, "1-1"), OK, 0)
		inv := h.sendInvoke(1, rec("t", 0, "1-2"))
		h.wait(c.stall)
		h.sendDone(1, inv, rec("t", 0, "1-2"), OK, 1, false)
		h.healAll()
		h.finalBoth("t", 0, 0, 2, at(rec("t", 0, "1-1"), 0), at(rec("t", 0, "1-2"), 1))
		r := h.check(boundCfg(10*time.Second, 0))
		if r.Liveness.Verdict != c.want {
			t.Errorf("stall %s under max_stall 10s: verdict %s, want %s (%v)", c.stall, r.Liveness.Verdict, c.want, r.Liveness.Reasons)
		}
		if c.want == results.LivenessFail {
			if r.Outcome() != results.OutcomeLivenessFail || r.Verdict != results.Pass {
				t.Errorf("outcome %s, verdict %s", r.Outcome(), r.Verdict)
			}
			if fs := r.Liveness.Findings[results.MaxStall]; fs.Count != 1 || !slices.Contains(fs.Examples[0].Ops, inv) {
				t.Errorf("max-stall finding %+v lacks the invoke %d", fs, inv)
			}
		}
	}
}

func TestLivenessRecoverWithin(t *testing.T) {
	build := func(after, tail time.Duration) *hb {
		h := newHB()
		h.send(1, rec("t", 0, "1-1"), OK, 0)
		h.nemesis("pause", `{"nodes":[3]}`)
		inv := h.sendInvoke(1, rec("t", 0, "1-2"))
		h.wait(5 * time.Second)
		h.nemesis("resume", `{"nodes":[3]}`)
		h.wait(after)
		h.sendDone(1, inv, rec("t", 0, "1-2"), OK, 1, false)
		h.wait(tail)
		h.send(1, rec("t", 0, "1-3"), OK, 2)
		h.healAll()
		return h
	}
	cfg := boundCfg(0, 3*time.Second)
	if l := build(2*time.Second, 10*time.Second).check(cfg).Liveness; l.Verdict != results.LivenessPass {
		t.Errorf("recovered 2 s after the heal, bound 3 s: %s %v", l.Verdict, l.Reasons)
	}
	if l := build(4*time.Second, 10*time.Second).check(cfg).Liveness; l.Verdict != results.LivenessFail || l.Findings[results.RecoverWithin].Count != 1 {
		t.Errorf("recovered 4 s after the heal, bound 3 s: %s %+v", l.Verdict, l.Findings[results.RecoverWithin])
	}
	// Healed too close to the end to judge: unknown, never pass.
	if r := build(time.Second, 0).check(boundCfg(0, 30*time.Second)); r.Liveness.Verdict != results.LivenessUnknown || r.Outcome() != results.OutcomeUnknown {
		t.Errorf("a bound that could not be judged: liveness %s, outcome %s", r.Liveness.Verdict, r.Outcome())
	}
}

func TestLivenessSinkAndProcessorsAreClients(t *testing.T) {
	h, cfg, _ := stuckHistory(results.KindSink, 2*time.Second)
	l := h.check(cfg).Liveness
	if c := clientNamed(l, "sink s"); c == nil || c.Kind != results.KindSink || c.Progress != 2 {
		t.Errorf("sink s: %+v", c)
	}
	h, cfg, _ = stuckHistory(results.KindProcessor, 2*time.Second)
	l = h.check(cfg).Liveness
	if c := clientNamed(l, "processors g"); c == nil || c.Kind != results.KindProcessor {
		t.Errorf("processors g: %+v among %+v", c, l.Clients)
	}
}

// A transaction the application holds open is not a stall until it asks to end it.
func TestLivenessHeldTransactionIsNoStall(t *testing.T) {
	for _, hold := range []bool{true, false} {
		h := newHB()
		h.begin(3, rec("t", 0, "3-1"))
		h.wait(20 * time.Second)
		endT := h.now
		if !hold {
			endT = 0 // not recorded: the wait counts from the invoke
		}
		h.end(3, OK, "", endT, []history.Record{at(rec("t", 0, "3-1"), 0)})
		h.healAll()
		l := livenessOf(t, h, strict())
		st := stallsOn(clientNamed(l, "producer 3"), 0)
		if hold && len(st) != 0 {
			t.Errorf("a transaction held open for 20 s and ended at once stalls: %+v", st)
		}
		if !hold && len(st) != 1 {
			t.Errorf("a transaction that took 20 s with no end_t should stall, got %+v", st)
		}
	}
}

func TestBoundText(t *testing.T) {
	for ms, want := range map[int64]string{25000: "25s", 60000: "1m", 90000: "1m30s", 1500: "1500ms", 3600000: "1h"} {
		if got := boundText(ms); got != want {
			t.Errorf("boundText(%d) = %q, want %q", ms, got, want)
		}
	}
}
