// Package faultspan pairs a history's fault injections with their heals: the interval of each
// fault, from the invoke that injected it to the completion of what ended it. The report shades
// these intervals and the checker measures recovery from them, so both read them from here.
//
// Nemesis events (p "nemesis") are paired as follows. An invoke whose f is not one of
// history's heal or bookkeeping events (history.EndsAFault) opens an interval at its t; its
// completion marks when the fault was in place (a fail completion drops it: the fault did not
// happen; info marks it uncertain). Heals close an interval at their completion. A heal whose
// value names a fault ("fault") ends an interval of that fault; one that names none, or none
// that is open, ends by kind: "start" a kill or stop (a bounce's too), "resume" a pause,
// "heal" and "service-start" any other fault. Among the open intervals that fit, the one with
// the same nodes and links wins, then the oldest. "heal-all" closes every open interval. A
// disk-loss (or a wipe) ends with its own completion: the node is back, empty. Intervals still
// open at the end of the history end there, by the heal invoked for them when its completion
// is missing, else by "end of history". "isr" and "healthy" events are not faults; "heal-all"
// and "healthy" are kept as markers of the recovery.
//
// A completion names no invoke (nemesis actions and ISR samples interleave): it pairs with the
// oldest pending invoke of the same f and value, since the nemesis completes with the invoke's
// value, else with the oldest of the same f.
package faultspan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/verity-kafka/verity/history"
)

// HealedBy values that are not an event's f.
const (
	// EndOfHistory ends an interval that nothing healed.
	EndOfHistory = "end of history"
	// Itself ends a fault that is over once its injection completes (disk-loss).
	Itself = "itself"
)

// fISR is the f of an ISR sample (verify/doc.go), which the nemesis records but is no fault.
const fISR = "isr"

// Interval is one fault as the history shows it, from its injection to its heal.
type Interval struct {
	// Name is the injection event's f (kill, isolate, latency, ...); Fault the catalogue fault
	// it belongs to when the event names another (a rolling bounce's kills).
	Name, Fault string
	Nodes       []int
	Links       [][2]string
	Role        string
	// Start is the injection's invoke, InPlace its completion, End the heal's completion (ns
	// since the run started). InPlace is -1 while unknown.
	Start, InPlace, End int64
	// Invoke and Heal are the op indices of the injection and of the heal's invoke (-1: none).
	Invoke, Heal int64
	// HealedBy says what ended it: heal, start, resume, service-start, heal-all, Itself
	// (disk-loss), or EndOfHistory when nothing did.
	HealedBy string
	// Uncertain: the injection completed info, so part of it may have happened.
	Uncertain bool
}

// Label is how plots and tables name the interval: "kill [2]", "rolling-bounce-hard: kill [3]".
func (f *Interval) Label() string {
	s := f.Name
	if f.Fault != "" && f.Fault != f.Name {
		s = f.Fault + ": " + f.Name
	}
	if len(f.Nodes) > 0 {
		s += " " + fmt.Sprint(f.Nodes)
	}
	return s
}

// Marker is a moment of the recovery: heal-all, and the cluster found healthy (or not). T is
// the invoke's t until the event completes, then the completion's.
type Marker struct {
	T     int64
	Index int64
	Label string
}

// span is an interval and what the pairing still needs to know of it.
type span struct {
	Interval
	healing bool // a heal was invoked, not yet completed
	dropped bool // the injection failed
}

// pending is a nemesis invoke waiting for its completion.
type pending struct {
	f        string
	raw      []byte // a copy: the caller's op may reuse its value
	interval int    // index into spans, -1 for none
	heal     bool
	healAll  []int // intervals a heal-all closes
	marker   int   // index into markers, -1 for none
}

// Tracker pairs the nemesis events of a history, fed in order, into intervals. The zero value
// keeps every interval; NewTracker bounds them.
type Tracker struct {
	max       int // most intervals kept; 0: no bound
	spans     []span
	markers   []Marker
	pend      []pending
	open      []int // spans not yet closed, in injection order
	seen      int   // injections seen, kept or not
	healAllAt int64
	healAll   bool
	// targets caches the parsed values: a schedule repeats a handful of values (the same kill
	// of the same node), and the checker feeds every nemesis event through here.
	targets map[string]targets
}

// NewTracker returns a Tracker that keeps the first maxFaults intervals (all when maxFaults is
// 0 or less), so that its memory is bounded whatever the history holds.
func NewTracker(maxFaults int) *Tracker {
	return &Tracker{max: max(maxFaults, 0)}
}

// Add takes the next event of the history. Events of other processes than the nemesis, and ISR
// samples, are ignored. Add keeps nothing of op's memory.
func (t *Tracker) Add(op *history.Op) {
	if !op.Process.Nemesis || op.F == fISR {
		return
	}
	if op.Type != history.Invoke {
		t.done(op)
		return
	}
	raw := op.Value.Raw
	p := pending{f: op.F, raw: bytes.Clone(raw), interval: -1, marker: -1}
	switch op.F {
	case history.FHealthy:
		t.markers = append(t.markers, Marker{T: op.Time, Index: op.Index, Label: "healthy?"})
		p.marker = len(t.markers) - 1
	case history.FHealAll:
		if !t.healAll {
			t.healAllAt, t.healAll = op.Time, true
		}
		t.markers = append(t.markers, Marker{T: op.Time, Index: op.Index, Label: history.FHealAll})
		p.marker = len(t.markers) - 1
		for _, i := range t.open {
			s := &t.spans[i]
			s.healing, s.Heal, s.HealedBy = true, op.Index, history.FHealAll
		}
		p.healAll = t.open
		t.open = nil
	case history.FHeal, history.FStart, history.FResume, history.FServiceStart:
		p.heal = true
		if i := t.matchHeal(op.F, t.readTargets(raw)); i >= 0 {
			s := &t.spans[i]
			s.healing, s.Heal, s.HealedBy = true, op.Index, op.F
			p.interval = i
			t.open = slices.DeleteFunc(t.open, func(j int) bool { return j == i })
		}
	default:
		t.seen++
		if t.max > 0 && len(t.spans) >= t.max {
			break
		}
		tg := t.readTargets(raw)
		t.spans = append(t.spans, span{Interval: Interval{Name: op.F, Fault: tg.Fault, Nodes: slices.Clone(tg.Nodes), Links: slices.Clone(tg.Links), Role: tg.Role,
			Start: op.Time, InPlace: -1, End: -1, Invoke: op.Index, Heal: -1}})
		p.interval = len(t.spans) - 1
		if !selfEnding(op.F) {
			t.open = append(t.open, p.interval)
		}
	}
	t.pend = append(t.pend, p)
}

// done pairs a nemesis completion with its invoke (see the package comment).
func (t *Tracker) done(op *history.Op) {
	raw := op.Value.Raw
	at := slices.IndexFunc(t.pend, func(p pending) bool { return p.f == op.F && bytes.Equal(p.raw, raw) })
	if at < 0 {
		at = slices.IndexFunc(t.pend, func(p pending) bool { return p.f == op.F })
	}
	if at < 0 {
		return
	}
	p := t.pend[at]
	t.pend = slices.Delete(t.pend, at, at+1)
	if p.marker >= 0 {
		m := &t.markers[p.marker]
		switch {
		case p.f == history.FHealthy && op.Type == history.OK:
			m.Label = "healthy"
		case p.f == history.FHealthy:
			m.Label = "not healthy"
		}
		m.T = op.Time
	}
	for _, i := range p.healAll {
		t.spans[i].End = op.Time
	}
	if p.interval < 0 {
		return
	}
	s := &t.spans[p.interval]
	if p.heal {
		s.End = op.Time
		return
	}
	switch op.Type {
	case history.Fail:
		s.dropped = true // it definitely did not happen
		t.open = slices.DeleteFunc(t.open, func(j int) bool { return j == p.interval })
	case history.Info:
		s.Uncertain = true
	}
	s.InPlace = op.Time
	if selfEnding(s.Name) {
		s.End, s.HealedBy = op.Time, Itself
	}
}

// matchHeal picks the open interval a heal event ends: one it can end (by the fault its value
// names, or by kind: start ends process faults, resume ends pauses), preferring the same nodes
// and links, then the oldest.
func (t *Tracker) matchHeal(f string, tg targets) int {
	best, bestScore := -1, -1
	nodes := slices.Sorted(slices.Values(tg.Nodes))
	for _, i := range t.open {
		iv := &t.spans[i]
		fits := tg.Fault != "" && (tg.Fault == iv.Name || tg.Fault == iv.Fault)
		if tg.Fault == "" {
			switch f {
			case history.FStart:
				fits = iv.Name == "kill" || iv.Name == "stop"
			case history.FResume:
				fits = iv.Name == "pause"
			default:
				fits = iv.Name != "kill" && iv.Name != "stop" && iv.Name != "pause"
			}
		}
		if !fits {
			continue
		}
		score := 0
		if len(tg.Nodes) > 0 && slices.Equal(nodes, slices.Sorted(slices.Values(iv.Nodes))) {
			score += 2
		}
		if len(tg.Links) > 0 && slices.Equal(tg.Links, iv.Links) {
			score++
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 && tg.Fault != "" {
		// A heal naming a fault that no open interval carries: fall back on kind.
		return t.matchHeal(f, targets{Nodes: tg.Nodes, Links: tg.Links})
	}
	return best
}

// Intervals returns the intervals kept so far in injection order, without those whose
// injection failed; one still open ends at end (the history's last t), by EndOfHistory unless
// a heal was invoked for it.
func (t *Tracker) Intervals(end int64) []Interval {
	if t.spans == nil {
		return nil
	}
	out := make([]Interval, 0, len(t.spans))
	for _, s := range t.spans {
		if s.dropped {
			continue
		}
		iv := s.Interval
		if iv.End < 0 {
			iv.End = end
			if !s.healing {
				iv.HealedBy = EndOfHistory
			}
		}
		out = append(out, iv)
	}
	return out
}

// Markers returns the heal-all and healthy events so far, in the order invoked.
func (t *Tracker) Markers() []Marker { return slices.Clone(t.markers) }

// HealAllAt returns the t of the first heal-all's invoke, and false when there was none.
func (t *Tracker) HealAllAt() (int64, bool) { return t.healAllAt, t.healAll }

// Dropped returns how many injections past the Tracker's bound were not kept.
func (t *Tracker) Dropped() int {
	if t.max == 0 {
		return 0
	}
	return max(t.seen-t.max, 0)
}

// targets is the part of a nemesis event's value that places a fault.
type targets struct {
	Nodes []int       `json:"nodes"`
	Links [][2]string `json:"links"`
	Fault string      `json:"fault"`
	Role  string      `json:"role"`
}

// readTargets is readValue through the cache, which stays small: past maxCached values it is
// not grown.
func (t *Tracker) readTargets(raw []byte) targets {
	if tg, ok := t.targets[string(raw)]; ok {
		return tg
	}
	tg := readTargets(raw)
	if t.targets == nil {
		t.targets = map[string]targets{}
	}
	if len(t.targets) < maxCached {
		t.targets[string(raw)] = tg
	}
	return tg
}

const maxCached = 256

func readTargets(raw []byte) targets {
	var t targets
	if len(raw) > 0 {
		// A value of another shape leaves the targets unknown; the fault is still shown.
		_ = json.Unmarshal(raw, &t)
	}
	return t
}

// selfEnding are faults over once their injection completes.
func selfEnding(f string) bool {
	switch f {
	case "disk-loss", "wipe", "wipe-disk", "wipe-data", "lose-disk", "disk-wipe", "lose-data":
		return true
	}
	return false
}
