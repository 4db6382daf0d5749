package faultspan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/history/histgen"
)

// feed builds a history for a Tracker: each event gets the next i, at the t given.
type feed struct {
	tr   *Tracker
	next int64
}

func newFeed() *feed { return &feed{tr: NewTracker(0)} }

// add feeds one nemesis event and returns its i.
func (f *feed) add(t int64, typ history.Type, name, value string) int64 {
	i := f.next
	f.next++
	op := history.Op{Index: i, Time: t, Process: history.NemesisP(), Type: typ, F: name}
	if value != "" {
		op.Value.Raw = json.RawMessage(value)
	}
	f.tr.Add(&op)
	return i
}

func find(ivs []Interval, name string) *Interval {
	for i := range ivs {
		if ivs[i].Name == name {
			return &ivs[i]
		}
	}
	return nil
}

// The faults of a run as the report's sample history has them: an isolation and a latency
// toxic healed by "heal" naming them, a disk loss that ends by itself, a pause that only
// heal-all ends, a bridge whose injection failed, then heal-all and healthy.
func TestPairing(t *testing.T) {
	iso := `{"nodes":[2],"links":[["1","2"],["2","1"],["3","2"],["2","3"]],"cut":"blackhole","role":"leader of verity-1"}`
	isoHeal := `{"nodes":[2],"links":[["1","2"],["2","1"],["3","2"],["2","3"]],"cut":"blackhole","fault":"isolate"}`
	lat := `{"nodes":[1,3],"links":[["client","1"]],"toxic":{"type":"latency","latency":100}}`
	latHeal := `{"nodes":[1,3],"links":[["client","1"]],"toxic":{"type":"latency","latency":100},"fault":"latency"}`
	f := newFeed()
	isoI := f.add(200, history.Invoke, "isolate", iso)
	f.add(201, history.OK, "isolate", iso)
	latI := f.add(300, history.Invoke, "latency", lat)
	f.add(301, history.OK, "latency", lat)
	isoH := f.add(400, history.Invoke, history.FHeal, isoHeal)
	f.add(401, history.OK, history.FHeal, isoHeal)
	latH := f.add(600, history.Invoke, history.FHeal, latHeal)
	f.add(601, history.OK, history.FHeal, latHeal)
	f.add(700, history.Invoke, "disk-loss", `{"nodes":[3]}`)
	f.add(720, history.OK, "disk-loss", `{"nodes":[3]}`)
	f.add(800, history.Invoke, "pause", `{"nodes":[1]}`)
	f.add(801, history.OK, "pause", `{"nodes":[1]}`)
	f.add(850, history.Invoke, "bridge", `{"nodes":[1,2,3]}`)
	f.add(851, history.Fail, "bridge", `{"nodes":[1,2,3]}`)
	all := f.add(950, history.Invoke, history.FHealAll, `{"nodes":[1]}`)
	f.add(951, history.OK, history.FHealAll, `{"nodes":[1]}`)
	f.add(960, history.Invoke, history.FHealthy, `{"note":"all brokers up"}`)
	f.add(970, history.OK, history.FHealthy, `{"note":"all brokers up"}`)
	ivs := f.tr.Intervals(1000)

	want := Interval{Name: "isolate", Nodes: []int{2}, Links: [][2]string{{"1", "2"}, {"2", "1"}, {"3", "2"}, {"2", "3"}},
		Role: "leader of verity-1", Start: 200, InPlace: 201, End: 401, Invoke: isoI, Heal: isoH, HealedBy: history.FHeal}
	if got := find(ivs, "isolate"); got == nil || !reflect.DeepEqual(*got, want) {
		t.Errorf("isolate interval %+v, want %+v", got, want)
	}
	if got := find(ivs, "latency"); got == nil || got.HealedBy != history.FHeal || got.End != 601 || got.Invoke != latI || got.Heal != latH {
		t.Errorf("latency interval %+v", got)
	}
	if got := find(ivs, "disk-loss"); got == nil || got.HealedBy != Itself || got.End != 720 || got.Heal != -1 {
		t.Errorf("disk-loss interval %+v (ends with its own completion)", got)
	}
	if got := find(ivs, "pause"); got == nil || got.HealedBy != history.FHealAll || got.End != 951 || got.Heal != all {
		t.Errorf("pause interval %+v (only heal-all ends it)", got)
	}
	if got := find(ivs, "bridge"); got != nil {
		t.Errorf("a fault whose injection failed is kept: %+v", got)
	}
	names := make([]string, len(ivs))
	for i := range ivs {
		names[i] = ivs[i].Name
	}
	if !slices.Equal(names, []string{"isolate", "latency", "disk-loss", "pause"}) {
		t.Errorf("intervals %v, want injection order", names)
	}
	wantM := []Marker{{T: 951, Index: all, Label: "heal-all"}, {T: 970, Index: all + 2, Label: "healthy"}}
	if m := f.tr.Markers(); !slices.Equal(m, wantM) {
		t.Errorf("markers %+v, want %+v", m, wantM)
	}
}

// histgen's nemesis kills a node and starts it again: every kill ends by its start.
func TestHistgenKillsEndByStart(t *testing.T) {
	var gen bytes.Buffer
	if err := histgen.Generate(&gen, 20000, 3); err != nil {
		t.Fatal(err)
	}
	r, err := history.NewReader(&gen)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTracker(0)
	var op history.Op
	var end int64
	for {
		if err := r.Next(&op); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		tr.Add(&op)
		end = op.Time
	}
	kills := 0
	for _, f := range tr.Intervals(end) {
		if f.Name != "kill" {
			t.Errorf("interval %+v: histgen injects only kills", f)
			continue
		}
		kills++
		if f.HealedBy != history.FStart || f.End < f.InPlace || f.InPlace < f.Start || f.Heal <= f.Invoke {
			t.Errorf("kill %+v not ended by its start", f)
		}
	}
	if kills == 0 {
		t.Error("no kill interval from histgen's nemesis")
	}
}

// heal-all ends every fault open at its invoke, at its completion; a fault injected after it
// is not among them.
func TestHealAllClosesEveryOpenFault(t *testing.T) {
	f := newFeed()
	f.add(10, history.Invoke, "kill", `{"nodes":[1]}`)
	f.add(11, history.OK, "kill", `{"nodes":[1]}`)
	f.add(20, history.Invoke, "isolate", `{"nodes":[2]}`)
	f.add(21, history.OK, "isolate", `{"nodes":[2]}`)
	f.add(30, history.Invoke, "pause", `{"nodes":[3]}`)
	all := f.add(40, history.Invoke, history.FHealAll, "")
	f.add(45, history.OK, "pause", `{"nodes":[3]}`)
	f.add(50, history.Invoke, "latency", `{"nodes":[1]}`)
	f.add(60, history.OK, history.FHealAll, "")
	ivs := f.tr.Intervals(100)
	if len(ivs) != 4 {
		t.Fatalf("intervals %+v", ivs)
	}
	for _, iv := range ivs[:3] {
		if iv.HealedBy != history.FHealAll || iv.End != 60 || iv.Heal != all {
			t.Errorf("%s: %+v, want ended by heal-all at 60", iv.Name, iv)
		}
	}
	if p := ivs[2]; p.InPlace != 45 {
		t.Errorf("pause in place at %d, want its completion at 45 after heal-all's invoke", p.InPlace)
	}
	if l := ivs[3]; l.HealedBy != EndOfHistory || l.End != 100 {
		t.Errorf("latency injected after heal-all: %+v, want open to the end of the history", l)
	}
}

// start ends a kill or stop, preferring the one on its nodes, then the oldest; never another
// fault on the same nodes.
func TestStartEndsKill(t *testing.T) {
	f := newFeed()
	f.add(10, history.Invoke, "kill", `{"nodes":[1]}`)
	f.add(11, history.OK, "kill", `{"nodes":[1]}`)
	f.add(20, history.Invoke, "isolate", `{"nodes":[2]}`)
	f.add(21, history.OK, "isolate", `{"nodes":[2]}`)
	f.add(30, history.Invoke, "stop", `{"nodes":[2]}`)
	f.add(31, history.OK, "stop", `{"nodes":[2]}`)
	s2 := f.add(40, history.Invoke, history.FStart, `{"nodes":[2]}`)
	f.add(41, history.OK, history.FStart, `{"nodes":[2]}`)
	s := f.add(50, history.Invoke, history.FStart, "")
	f.add(51, history.OK, history.FStart, "")
	ivs := f.tr.Intervals(100)
	if k := find(ivs, "kill"); k == nil || k.HealedBy != history.FStart || k.End != 51 || k.Heal != s {
		t.Errorf("kill %+v, want ended by the start without nodes", k)
	}
	if st := find(ivs, "stop"); st == nil || st.HealedBy != history.FStart || st.End != 41 || st.Heal != s2 {
		t.Errorf("stop %+v, want ended by the start of node 2", st)
	}
	if i := find(ivs, "isolate"); i == nil || i.HealedBy != EndOfHistory {
		t.Errorf("isolate %+v: a start does not end it", i)
	}
}

// resume ends a pause, not a kill of the same node; start does not end a pause.
func TestResumeEndsPause(t *testing.T) {
	f := newFeed()
	f.add(10, history.Invoke, "kill", `{"nodes":[1]}`)
	f.add(11, history.OK, "kill", `{"nodes":[1]}`)
	f.add(20, history.Invoke, "pause", `{"nodes":[1]}`)
	f.add(21, history.OK, "pause", `{"nodes":[1]}`)
	r := f.add(30, history.Invoke, history.FResume, `{"nodes":[1]}`)
	f.add(31, history.OK, history.FResume, `{"nodes":[1]}`)
	ivs := f.tr.Intervals(100)
	if p := find(ivs, "pause"); p == nil || p.HealedBy != history.FResume || p.End != 31 || p.Heal != r {
		t.Errorf("pause %+v, want ended by resume", p)
	}
	if k := find(ivs, "kill"); k == nil || k.HealedBy != EndOfHistory || k.End != 100 {
		t.Errorf("kill %+v: resume does not end it", k)
	}

	f = newFeed()
	f.add(10, history.Invoke, "pause", `{"nodes":[1]}`)
	f.add(11, history.OK, "pause", `{"nodes":[1]}`)
	f.add(20, history.Invoke, history.FStart, `{"nodes":[1]}`)
	f.add(21, history.OK, history.FStart, `{"nodes":[1]}`)
	if p := f.tr.Intervals(100)[0]; p.HealedBy != EndOfHistory {
		t.Errorf("pause %+v: start does not end it", p)
	}
}

// A heal that names a fault ends that fault, whatever its kind would match; one that names a
// fault nothing open carries falls back on its kind.
func TestHealNamesItsFault(t *testing.T) {
	f := newFeed()
	f.add(10, history.Invoke, "latency", `{"nodes":[1]}`)
	f.add(11, history.OK, "latency", `{"nodes":[1]}`)
	f.add(20, history.Invoke, "kill", `{"nodes":[2],"fault":"rolling-bounce"}`)
	f.add(21, history.OK, "kill", `{"nodes":[2],"fault":"rolling-bounce"}`)
	f.add(30, history.Invoke, history.FHeal, `{"nodes":[2],"fault":"rolling-bounce"}`)
	f.add(31, history.OK, history.FHeal, `{"nodes":[2],"fault":"rolling-bounce"}`)
	f.add(40, history.Invoke, history.FHeal, `{"fault":"bridge"}`)
	f.add(41, history.OK, history.FHeal, `{"fault":"bridge"}`)
	ivs := f.tr.Intervals(100)
	if k := find(ivs, "kill"); k == nil || k.HealedBy != history.FHeal || k.End != 31 || k.Label() != "rolling-bounce: kill [2]" {
		t.Errorf("kill %+v, want ended by the heal naming its fault", k)
	}
	if l := find(ivs, "latency"); l == nil || l.HealedBy != history.FHeal || l.End != 41 {
		t.Errorf("latency %+v, want ended by the heal of a fault not open, by kind", l)
	}
}

// A failed injection did not happen: it is dropped, and no heal ends it; an info one may have
// happened, and is kept, uncertain.
func TestFailedInjectionDropped(t *testing.T) {
	f := newFeed()
	f.add(10, history.Invoke, "bridge", `{"nodes":[1,2,3]}`)
	f.add(11, history.Fail, "bridge", `{"nodes":[1,2,3]}`)
	f.add(20, history.Invoke, "isolate", `{"nodes":[1]}`)
	f.add(21, history.Info, "isolate", `{"nodes":[1]}`)
	f.add(30, history.Invoke, history.FHeal, "")
	f.add(31, history.OK, history.FHeal, "")
	ivs := f.tr.Intervals(100)
	if len(ivs) != 1 || ivs[0].Name != "isolate" || !ivs[0].Uncertain || ivs[0].HealedBy != history.FHeal || ivs[0].End != 31 {
		t.Errorf("intervals %+v, want only the uncertain isolate, ended by the heal", ivs)
	}
}

// A disk loss is over when its injection completes: it ends there, and heal-all does not
// reach it.
func TestSelfEndingDiskLoss(t *testing.T) {
	f := newFeed()
	i := f.add(10, history.Invoke, "disk-loss", `{"nodes":[3]}`)
	f.add(20, history.OK, "disk-loss", `{"nodes":[3]}`)
	f.add(30, history.Invoke, history.FHealAll, "")
	f.add(31, history.OK, history.FHealAll, "")
	want := Interval{Name: "disk-loss", Nodes: []int{3}, Start: 10, InPlace: 20, End: 20, Invoke: i, Heal: -1, HealedBy: Itself}
	if ivs := f.tr.Intervals(100); len(ivs) != 1 || !reflect.DeepEqual(ivs[0], want) {
		t.Errorf("intervals %+v, want %+v", ivs, want)
	}

	f = newFeed()
	f.add(10, history.Invoke, "disk-loss", `{"nodes":[3]}`)
	if ivs := f.tr.Intervals(100); len(ivs) != 1 || ivs[0].End != 100 || ivs[0].HealedBy != EndOfHistory {
		t.Errorf("a disk loss that never completed: %+v, want open to the end of the history", ivs)
	}
}

// A fault nothing healed ends at the end of the history; one whose heal never completed ends
// there too, by that heal.
func TestEndOfHistory(t *testing.T) {
	f := newFeed()
	f.add(10, history.Invoke, "kill", `{"nodes":[1]}`)
	f.add(11, history.OK, "kill", `{"nodes":[1]}`)
	f.add(20, history.Invoke, "isolate", `{"nodes":[2]}`)
	f.add(21, history.OK, "isolate", `{"nodes":[2]}`)
	h := f.add(30, history.Invoke, history.FHeal, `{"nodes":[2]}`)
	ivs := f.tr.Intervals(90)
	if k := find(ivs, "kill"); k == nil || k.End != 90 || k.HealedBy != EndOfHistory || k.Heal != -1 {
		t.Errorf("kill %+v, want ended by the end of the history", k)
	}
	if i := find(ivs, "isolate"); i == nil || i.End != 90 || i.HealedBy != history.FHeal || i.Heal != h {
		t.Errorf("isolate %+v, want its heal, ending at the end of the history", i)
	}
	f.add(40, history.OK, history.FHeal, `{"nodes":[2]}`)
	if i := find(f.tr.Intervals(90), "isolate"); i == nil || i.End != 40 {
		t.Errorf("isolate %+v: Intervals must not fix what it closed at the end", i)
	}
}

// HealAllAt is the first heal-all's invoke, not its completion nor a later one.
func TestHealAllAt(t *testing.T) {
	f := newFeed()
	if at, ok := f.tr.HealAllAt(); ok || at != 0 {
		t.Errorf("HealAllAt before any heal-all: %d, %v", at, ok)
	}
	f.add(10, history.Invoke, "kill", `{"nodes":[1]}`)
	f.add(50, history.Invoke, history.FHealAll, "")
	f.add(60, history.OK, history.FHealAll, "")
	f.add(70, history.Invoke, history.FHealAll, "")
	if at, ok := f.tr.HealAllAt(); !ok || at != 50 {
		t.Errorf("HealAllAt %d, %v, want 50, true", at, ok)
	}
}

// A completion pairs with the pending invoke of the same f and value, else the oldest of the f.
func TestCompletionPairsByValue(t *testing.T) {
	f := newFeed()
	f.add(10, history.Invoke, "kill", `{"nodes":[1]}`)
	f.add(11, history.Invoke, "kill", `{"nodes":[2]}`)
	f.add(20, history.Info, "kill", `{"nodes":[2]}`)
	f.add(30, history.OK, "kill", `{"nodes":[9]}`)
	ivs := f.tr.Intervals(100)
	if len(ivs) != 2 || ivs[0].InPlace != 30 || ivs[0].Uncertain || ivs[1].InPlace != 20 || !ivs[1].Uncertain {
		t.Errorf("intervals %+v", ivs)
	}
}

// The Tracker keeps no memory of the ops it was given: a caller may reuse an op's value.
func TestAddKeepsNoValue(t *testing.T) {
	tr := NewTracker(0)
	buf := []byte(`{"nodes":[1]}`)
	tr.Add(&history.Op{Index: 0, Time: 10, Process: history.NemesisP(), Type: history.Invoke, F: "kill", Value: history.Payload{Raw: buf}})
	copy(buf, `{"nodes":[2]}`)
	tr.Add(&history.Op{Index: 1, Time: 11, Process: history.NemesisP(), Type: history.Invoke, F: "kill", Value: history.Payload{Raw: buf}})
	tr.Add(&history.Op{Index: 2, Time: 20, Process: history.NemesisP(), Type: history.Info, F: "kill", Value: history.Payload{Raw: []byte(`{"nodes":[2]}`)}})
	ivs := tr.Intervals(100)
	if len(ivs) != 2 || ivs[0].Uncertain || !ivs[1].Uncertain {
		t.Errorf("intervals %+v: the info completion of node 2's kill paired with node 1's", ivs)
	}
}

// Client ops and ISR samples are no faults, whatever their f.
func TestIgnoresOtherEvents(t *testing.T) {
	tr := NewTracker(0)
	tr.Add(&history.Op{Index: 0, Time: 1, Process: history.Client(1), Type: history.Invoke, F: "kill"})
	tr.Add(&history.Op{Index: 1, Time: 2, Process: history.NemesisP(), Type: history.Invoke, F: "isr"})
	tr.Add(&history.Op{Index: 2, Time: 3, Process: history.NemesisP(), Type: history.OK, F: "isr",
		Value: history.Payload{Raw: []byte(`{"topic":"t","partition":0,"isr":[1]}`)}})
	if ivs := tr.Intervals(10); len(ivs) != 0 {
		t.Errorf("intervals %+v, want none", ivs)
	}
}

// NewTracker's bound keeps the first intervals and counts the rest; the zero value keeps all.
func TestMaxFaults(t *testing.T) {
	add := func(tr *Tracker) {
		for i := range 5 {
			tr.Add(&history.Op{Index: int64(i), Time: int64(i), Process: history.NemesisP(), Type: history.Invoke, F: "kill"})
		}
	}
	tr := NewTracker(2)
	add(tr)
	if ivs := tr.Intervals(10); len(ivs) != 2 || ivs[1].Invoke != 1 || tr.Dropped() != 3 {
		t.Errorf("bound 2: %d intervals, %d dropped", len(ivs), tr.Dropped())
	}
	var zero Tracker
	add(&zero)
	if ivs := zero.Intervals(10); len(ivs) != 5 || zero.Dropped() != 0 {
		t.Errorf("zero value: %d intervals, %d dropped", len(ivs), zero.Dropped())
	}
}

func TestLabel(t *testing.T) {
	for _, c := range []struct {
		iv   Interval
		want string
	}{
		{Interval{Name: "kill", Nodes: []int{2}}, "kill [2]"},
		{Interval{Name: "kill", Fault: "rolling-bounce-hard", Nodes: []int{3}}, "rolling-bounce-hard: kill [3]"},
		{Interval{Name: "isolate", Fault: "isolate"}, "isolate"},
	} {
		if got := c.iv.Label(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.iv, got, c.want)
		}
	}
}
