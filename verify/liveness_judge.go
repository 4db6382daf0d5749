package verify

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/history/faultspan"
	"github.com/verity-kafka/verity/verify/results"
)

func ms(ns int64) float64 { return round3(float64(ns) / 1e6) }

func secs(ns int64) string { return fmt.Sprintf("%.1f s", float64(ns)/1e9) }

// liveness builds the results' liveness section once the history is in.
func (c *Checker) liveness() *results.Liveness {
	l := &c.live
	l.closeAll()
	bounds := c.cfg.Liveness
	out := &results.Liveness{
		Verdict:   results.LivenessNotStated,
		Bounds:    results.LivenessBounds{StuckAfterMS: StuckAfter.Milliseconds(), MinStallMS: MinStall.Milliseconds()},
		HorizonMS: ms(l.horizon),
		Gated:     l.observe,
		Findings:  map[results.LivenessFamily]results.LivenessFindings{},
	}
	if bounds != nil {
		out.Bounds.LivenessBounds = *bounds
	}
	for _, f := range results.LivenessFamilies() {
		out.Findings[f] = results.LivenessFindings{Examples: []results.LivenessFinding{}}
	}
	stalls := c.confirmedStalls()
	faults := l.faultsBefore()
	var lastHeal int64 = -1
	for _, f := range faults {
		if f.healed {
			lastHeal = max(lastHeal, f.End)
		}
	}
	if lastHeal >= 0 {
		out.LastHealMS = new(ms(lastHeal))
	}
	avail := l.availability(faults)
	out.Clients = c.liveClients(stalls, avail, lastHeal)
	out.Faults, out.Recovery = c.recoveries(stalls, faults)
	if n := len(faults) - len(out.Faults); n > 0 {
		out.Reasons = append(out.Reasons, fmt.Sprintf("%d faults past the first %d are not listed in faults; the recovery counts them", n, maxFaultRecoveries))
	}
	c.stuckFindings(out, stalls, avail, lastHeal, faults)
	c.judgeBounds(out, stalls, faults)
	out.Series = l.series(c)
	return out
}

// liveFault is a fault interval the liveness judges: healed when its heal completed before
// the horizon (not by the heal-all that ends the workload).
type liveFault struct {
	faultspan.Interval
	healed bool
}

func (l *liveState) faultsBefore() []liveFault {
	var out []liveFault
	for _, f := range l.faults.Intervals(l.horizon) {
		if f.Start > l.horizon {
			continue
		}
		healed := f.End >= 0 && f.End <= l.horizon && f.HealedBy != history.FHealAll && f.HealedBy != faultspan.EndOfHistory
		out = append(out, liveFault{Interval: f, healed: healed})
	}
	return out
}

// confirmedStalls are the stalls, less those of readers whose work the final reads show never
// existed (a record acknowledged and then lost to a truncation is no work to read), and ended
// at a processor's transaction whose commit got no answer but whose output the final reads show
// committed.
func (c *Checker) confirmedStalls() []stallRec {
	l := &c.live
	out := l.stalls[:0:0]
	for _, s := range l.stalls {
		st := &l.streams[s.stream]
		if st.reader && s.workV != 0 && c.finalRead(st.tp) && c.vals.at(s.workV).flags&fFinalAny == 0 {
			continue
		}
		if st.reader {
			for _, u := range l.unknown {
				if u.unit == st.unit && u.tp == st.tp && u.t > s.from && u.t < s.to && c.committedByFinal(u) {
					s.to, s.endOrd, s.recovered = u.t, u.ord, true
					break
				}
			}
			if s.to-s.from < int64(MinStall) {
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// committedByFinal reports whether the final reads show the output of step u's transaction
// committed.
func (c *Checker) committedByFinal(u unknownStep) bool {
	st := c.vals.at(u.out)
	return st.txn == u.txn && st.flags&fFinalRC != 0
}

// finalRead reports whether a final read covered tp.
func (c *Checker) finalRead(tp uint32) bool {
	ps := c.parts.ps[tp]
	return len(ps.final[isoRU].ranges) > 0 || len(ps.final[isoRC].ranges) > 0
}

// availSpan is a stretch in which a partition could serve (read: it had a leader; write: also
// min ISR), from the ISR watch; a fault touching the partition makes it unknown until the
// next observation.
type availSpan struct {
	from, to int64
	ord      uint32
}

// availability gives per partition the spans in which its readers and writers could be served.
// Without ISR observations every partition is taken as able to serve throughout.
func (l *liveState) availability(faults []liveFault) func(tp uint32, reader bool) []availSpan {
	if !l.observe {
		whole := []availSpan{{from: 0, to: l.horizon + 1, ord: none}}
		return func(uint32, bool) []availSpan { return whole }
	}
	type key struct {
		tp     uint32
		reader bool
	}
	cache := map[key][]availSpan{}
	return func(tp uint32, reader bool) []availSpan {
		k := key{tp, reader}
		if s, ok := cache[k]; ok {
			return s
		}
		p := l.part(tp)
		marks := slices.Clone(p.avail)
		for _, f := range faults {
			if !f.touches(p.nodes) {
				continue
			}
			marks = append(marks, availMark{t: f.Start})
			if f.End >= 0 {
				marks = append(marks, availMark{t: f.End})
			}
		}
		slices.SortStableFunc(marks, func(a, b availMark) int { return cmp.Compare(a.t, b.t) })
		var spans []availSpan
		open := false
		for _, m := range marks {
			ok := m.known && (m.write || reader && m.read)
			switch {
			case ok && !open:
				spans = append(spans, availSpan{from: m.t, to: l.horizon + 1, ord: m.ord})
				open = true
			case !ok && open:
				spans[len(spans)-1].to = m.t
				open = false
			}
		}
		cache[k] = spans
		return spans
	}
}

// touches reports whether the fault may have changed a partition on nodes (unknown nodes, or
// a fault naming none: every partition).
func (f *liveFault) touches(nodes []int) bool {
	if len(f.Nodes) == 0 || len(nodes) == 0 {
		return true
	}
	for _, n := range f.Nodes {
		if slices.Contains(nodes, n) {
			return true
		}
	}
	return false
}

// stuckTime is the part of [from, to] after lastHeal during which spans say the partition
// could serve, and the observation that opened the first such part.
func stuckTime(from, to, lastHeal int64, spans []availSpan) (int64, uint32) {
	from = max(from, lastHeal)
	var total int64
	ord := uint32(none)
	for _, sp := range spans {
		a, b := max(from, sp.from), min(to, sp.to)
		if b > a {
			total += b - a
			if ord == none {
				ord = sp.ord
			}
		}
	}
	return total, ord
}

func (c *Checker) streamName(s *liveStream) (topic string, part int32) {
	ps := c.parts.ps[s.tp]
	return ps.topic, ps.part
}

func (c *Checker) liveClients(stalls []stallRec, avail func(uint32, bool) []availSpan, lastHeal int64) []results.ClientLiveness {
	l := &c.live
	per := make([][]results.ClientStall, len(l.units))
	for _, s := range stalls {
		st := &l.streams[s.stream]
		per[st.unit] = append(per[st.unit], c.clientStall(s, avail, lastHeal))
	}
	out := make([]results.ClientLiveness, 0, len(l.units))
	for u := range l.units {
		un := &l.units[u]
		cl := results.ClientLiveness{Client: un.name, Kind: un.kind, Processes: slices.Sorted(slices.Values(un.procs)),
			Partitions: []string{}, Progress: un.progress, LastProgressMS: -1}
		if un.lastProg >= 0 {
			cl.LastProgressMS = ms(un.lastProg)
		}
		for tp, s := range un.byTP {
			if s != 0 {
				cl.Partitions = append(cl.Partitions, c.parts.ps[tp].String())
			}
		}
		st := per[u]
		slices.SortStableFunc(st, func(a, b results.ClientStall) int { return cmp.Compare(b.Len(), a.Len()) })
		if len(st) > results.MaxStalls {
			st = st[:results.MaxStalls]
		}
		cl.Stalls = append([]results.ClientStall{}, st...)
		out = append(out, cl)
	}
	slices.SortStableFunc(out, func(a, b results.ClientLiveness) int {
		return cmp.Compare(slices.Index(results.ClientKinds(), a.Kind), slices.Index(results.ClientKinds(), b.Kind))
	})
	return out
}

func (c *Checker) clientStall(s stallRec, avail func(uint32, bool) []availSpan, lastHeal int64) results.ClientStall {
	st := &c.live.streams[s.stream]
	topic, part := c.streamName(st)
	cs := results.ClientStall{Topic: topic, Partition: part, FromMS: ms(s.from), ToMS: ms(s.to), Recovered: s.recovered, Ops: c.stallOps(s)}
	stuck, _ := stuckTime(s.from, s.to, max(lastHeal, 0), avail(st.tp, st.reader))
	cs.StuckMS = ms(stuck)
	return cs
}

// stallOps are a stall's evidence, in order: the last progress before it, the op that showed
// work, the op that ended it.
func (c *Checker) stallOps(s stallRec) []int64 {
	var ops []int64
	for _, o := range []uint32{s.lastOrd, s.workOrd, s.endOrd} {
		if o != none && o < c.ord {
			if i := c.opIndex(o); !slices.Contains(ops, i) {
				ops = append(ops, i)
			}
		}
	}
	slices.Sort(ops)
	return ops
}

// maxFaultRecoveries bounds the faults listed with their recovery; the worst counts them all.
const maxFaultRecoveries = 200

// recoveries gives each fault's recovery per client, and the worst over the faults.
func (c *Checker) recoveries(stalls []stallRec, faults []liveFault) ([]results.FaultRecovery, *results.Recovery) {
	l := &c.live
	if len(faults) == 0 {
		return nil, nil
	}
	var (
		worst recovery
		out   []results.FaultRecovery
	)
	for _, f := range faults {
		end := l.horizon
		fr := results.FaultRecovery{Label: f.Label(), F: f.Name, Nodes: f.Nodes, InjectedMS: ms(f.Start), HealedBy: f.HealedBy,
			Ops: []int64{f.Invoke}}
		if f.healed {
			end = f.End
			fr.HealedMS = new(ms(f.End))
			if f.Heal >= 0 {
				fr.Ops = append(fr.Ops, f.Heal)
			}
		}
		per := make([]recovery, len(l.units))
		byTP := map[uint32]recovery{}
		for _, s := range stalls {
			if s.from > end || s.to < f.Start {
				continue
			}
			one := recovery{inj: s.to - f.Start, heal: -1, late: !s.recovered && s.to >= l.horizon, set: true}
			if f.healed && s.to > f.End {
				one.heal = s.to - f.End
			}
			st := &l.streams[s.stream]
			per[st.unit] = per[st.unit].worse(one)
			byTP[st.tp] = byTP[st.tp].worse(one)
		}
		for _, tp := range slices.Sorted(maps.Keys(byTP)) {
			ps := c.parts.ps[tp]
			fr.Partitions = append(fr.Partitions, results.PartitionRecovery{Topic: ps.topic, Partition: ps.part, Recovery: byTP[tp].result()})
		}
		var all recovery
		for _, r := range per {
			all = all.worse(r)
		}
		fr.Recovery, worst = all.result(), worst.worse(all)
		if len(out) >= maxFaultRecoveries {
			continue
		}
		fr.Clients = make([]results.ClientRecovery, len(per))
		for u, r := range per {
			fr.Clients[u] = results.ClientRecovery{Client: l.units[u].name, Kind: l.units[u].kind, Recovery: r.result()}
		}
		out = append(out, fr)
	}
	w := worst.result()
	return out, &w
}

// recovery is a results.Recovery being gathered, in ns (heal -1: no stall past the heal; late:
// a stall still open at the horizon). The zero value is "no stall", which worse ignores.
type recovery struct {
	inj, heal int64
	late      bool
	set       bool
}

func (r recovery) worse(o recovery) recovery {
	switch {
	case !o.set:
		return r
	case !r.set:
		return o
	}
	return recovery{inj: max(r.inj, o.inj), heal: max(r.heal, o.heal), late: r.late || o.late, set: true}
}

func (r recovery) result() results.Recovery {
	out := results.Recovery{FromInjectionMS: ms(r.inj), Recovered: !r.late}
	if r.set && r.heal >= 0 {
		out.FromHealMS = new(ms(r.heal))
	}
	return out
}

// stuckFindings reports, per client, its stall with the most stuck time when that passes
// StuckAfter.
func (c *Checker) stuckFindings(out *results.Liveness, stalls []stallRec, avail func(uint32, bool) []availSpan, lastHeal int64, faults []liveFault) {
	l := &c.live
	healed := fmt.Sprintf("after the last heal (at %s)", secs(lastHeal))
	if lastHeal < 0 {
		lastHeal, healed = 0, "with no fault healed before it"
	}
	type best struct {
		s     stallRec
		stuck int64
		ord   uint32
	}
	worst := map[int32]best{}
	for _, s := range stalls {
		st := &l.streams[s.stream]
		stuck, ord := stuckTime(s.from, s.to, lastHeal, avail(st.tp, st.reader))
		if stuck <= int64(StuckAfter) {
			continue
		}
		if b, ok := worst[st.unit]; !ok || stuck > b.stuck {
			worst[st.unit] = best{s, stuck, ord}
		}
	}
	var heal int64 = -1
	for _, f := range faults {
		if f.healed && f.End == lastHeal {
			heal = f.Heal
		}
	}
	for _, u := range slices.Sorted(maps.Keys(worst)) {
		b := worst[u]
		un := &l.units[u]
		st := &l.streams[b.s.stream]
		topic, part := c.streamName(st)
		ops := c.stallOps(b.s)
		if heal >= 0 {
			ops = append(ops, heal)
		}
		if b.ord != none {
			ops = append(ops, c.opIndex(b.ord))
		}
		slices.Sort(ops)
		ops = slices.Compact(ops)
		ended := fmt.Sprintf("until %s", secs(b.s.to))
		if !b.s.recovered {
			ended = fmt.Sprintf("to the end of the workload (%s)", secs(b.s.to))
		}
		gate := "while it could serve (no ISR observations: taken as able throughout)"
		if l.observe {
			gate = "while the ISR watch showed it able to serve"
		}
		note := fmt.Sprintf("%s made no progress on %s-%d from %s %s with work available: %s %s %s",
			un.name, topic, part, secs(b.s.from), ended, secs(b.stuck), healed, gate)
		addLiveFinding(out, un.kind.StuckFamily(), results.LivenessFinding{Client: un.name, Kind: un.kind, Topic: topic, Partition: part,
			FromMS: ms(b.s.from), ToMS: ms(b.s.to), StuckMS: ms(b.stuck), Recovered: b.s.recovered, Ops: ops, Note: note}, c.opts.MaxExamples)
	}
}

func addLiveFinding(out *results.Liveness, f results.LivenessFamily, lf results.LivenessFinding, maxEx int) {
	fs := out.Findings[f]
	fs.Count++
	if len(fs.Examples) < maxEx {
		fs.Examples = append(fs.Examples, lf)
	}
	out.Findings[f] = fs
}

// judgeBounds judges the stated bounds into the liveness verdict.
func (c *Checker) judgeBounds(out *results.Liveness, stalls []stallRec, faults []liveFault) {
	b := c.cfg.Liveness
	if !b.Stated() {
		return
	}
	l := &c.live
	unjudged := false
	byLen := slices.Clone(stalls)
	slices.SortStableFunc(byLen, func(a, b stallRec) int { return cmp.Compare(b.to-b.from, a.to-a.from) })
	if b.MaxStallMS != nil {
		bound := *b.MaxStallMS * int64(time.Millisecond)
		label := "max_stall " + boundText(*b.MaxStallMS)
		for _, s := range byLen {
			if s.to-s.from <= bound {
				break
			}
			c.boundFinding(out, results.MaxStall, s, label, fmt.Sprintf("%s without progress, more than %s", secs(s.to-s.from), label))
		}
	}
	if b.RecoverWithinMS != nil {
		bound := *b.RecoverWithinMS * int64(time.Millisecond)
		label := "recover_within " + boundText(*b.RecoverWithinMS)
		judged := 0
		for _, f := range faults {
			if !f.healed {
				continue
			}
			if f.End+bound > l.horizon {
				out.Reasons = append(out.Reasons, fmt.Sprintf("%s: %s healed at %s, less than %s before the workload ended at %s: not judged",
					label, f.Label(), secs(f.End), boundText(*b.RecoverWithinMS), secs(l.horizon)))
				continue
			}
			judged++
			for _, s := range byLen {
				if s.from <= f.End && s.to > f.End && s.to-f.End > bound {
					c.boundFinding(out, results.RecoverWithin, s, label, fmt.Sprintf("no progress until %s after the heal of %s at %s, more than %s",
						secs(s.to-f.End), f.Label(), secs(f.End), label))
				}
			}
		}
		if judged == 0 {
			unjudged = true
			if len(faults) == 0 {
				out.Reasons = append(out.Reasons, label+": no fault took effect, nothing to judge it against")
			} else {
				out.Reasons = append(out.Reasons, label+": no fault was healed early enough before the workload ended to judge it")
			}
		}
	}
	switch {
	case len(out.Breaches()) > 0:
		out.Verdict = results.LivenessFail
		out.Reasons = append(out.Breaches(), out.Reasons...)
	case unjudged:
		out.Verdict = results.LivenessUnknown
	default:
		out.Verdict = results.LivenessPass
	}
}

// boundText writes a bound as a scenario would: "25s", "1m30s", "1500ms".
func boundText(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d%time.Second != 0 {
		return fmt.Sprintf("%dms", ms)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (c *Checker) boundFinding(out *results.Liveness, f results.LivenessFamily, s stallRec, label, what string) {
	l := &c.live
	st := &l.streams[s.stream]
	un := &l.units[st.unit]
	topic, part := c.streamName(st)
	ended := "it progressed again at " + secs(s.to)
	if !s.recovered {
		ended = "not recovered by the end of the workload at " + secs(s.to)
	}
	note := fmt.Sprintf("%s on %s-%d from %s: %s; %s", un.name, topic, part, secs(s.from), what, ended)
	addLiveFinding(out, f, results.LivenessFinding{Client: un.name, Kind: un.kind, Topic: topic, Partition: part, FromMS: ms(s.from),
		ToMS: ms(s.to), Recovered: s.recovered, Bound: label, Ops: c.stallOps(s), Note: note}, c.opts.MaxExamples)
}

// series gives the plots' lines, at most maxSeries of each.
func (l *liveState) series(c *Checker) *results.ProgressSeries {
	if len(l.units) == 0 {
		return nil
	}
	ps := &results.ProgressSeries{BucketMS: l.bucket / int64(time.Millisecond)}
	n := l.nbucket
	fit := func(v []int64) []int64 {
		out := make([]int64, n)
		copy(out, v)
		return out
	}
	for tp, v := range l.unseen {
		if v != nil && len(ps.Unseen) < maxSeries {
			ps.Unseen = append(ps.Unseen, results.Series{Name: c.parts.ps[tp].String(), Values: fit(v)})
		}
	}
	for u, v := range l.lag {
		if v != nil && l.units[u].kind != results.KindProducer && len(ps.Lag) < maxSeries {
			ps.Lag = append(ps.Lag, results.Series{Name: l.units[u].name, Values: fit(v)})
		}
	}
	for u := range l.units {
		if len(ps.Progress) < maxSeries {
			ps.Progress = append(ps.Progress, results.Series{Name: l.units[u].name, Values: fit(l.units[u].buckets)})
		}
	}
	return ps
}
