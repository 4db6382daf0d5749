package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/report"
	"github.com/verity-kafka/verity/scenarios"
	"github.com/verity-kafka/verity/verify/results"
)

func TestMatrixCells(t *testing.T) {
	m := MatrixSpec{Base: builtin(t, "default"), Runs: 3, Axes: []MatrixAxis{
		{Name: "acks", Values: []string{"1", "all"}},
		{Name: "min-isr", Values: []string{"1", "2"}},
	}}
	cells, err := m.cells()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cells {
		got = append(got, report.AxesLabel(c.axes))
		if c.shape != cells[0].shape {
			t.Errorf("%s: shape %v differs: the cells could not share a cluster", report.AxesLabel(c.axes), c.shape)
		}
	}
	want := "acks=1,min-isr=1 acks=1,min-isr=2 acks=all,min-isr=1 acks=all,min-isr=2"
	if strings.Join(got, " ") != want {
		t.Errorf("cells %v, want %s", got, want)
	}
	c := cells[0].scenario
	if *c.Client.Acks != kafkaconf.AcksLeader || c.Client.Idempotence != nil || c.Topics[0].MinInsyncReplicas != 1 {
		t.Errorf("acks=1,min-isr=1: client %+v, min ISR %d", c.Client, c.Topics[0].MinInsyncReplicas)
	}
}

// A flush axis over a power-loss scenario: with flush.messages=1 the scenario's positive control
// (lost-write likely) is denied by the table, so that cell drops the claim and says so; the
// default cell keeps it. Both share one cluster.
func TestMatrixDropsDeniedClaims(t *testing.T) {
	m := MatrixSpec{Base: builtin(t, "power-loss-all-replicas"), Runs: 1, Axes: []MatrixAxis{
		{Name: "flush", Values: []string{"default", "1"}},
	}}
	cells, err := m.cells()
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2 || cells[0].shape != cells[1].shape || !cells[0].shape.PowerLoss {
		t.Fatalf("%d cells, shapes %v %v: want two on one lazy-filesystem cluster", len(cells), cells[0].shape, cells[1].shape)
	}
	if l := cells[0].scenario.Expect.Likely; len(l) != 1 || len(cells[0].notes) != 0 {
		t.Errorf("flush=default: likely %v, notes %v; want the claim kept", l, cells[0].notes)
	}
	if l := cells[1].scenario.Expect.Likely; len(l) != 0 || len(cells[1].notes) != 1 || !strings.Contains(cells[1].notes[0], "lost-write is likely does not hold with --flush=1") {
		t.Errorf("flush=1: likely %v, notes %v; want the claim dropped with a note", l, cells[1].notes)
	}
	if got := cells[1].scenario.Topics[0].Config["flush.messages"]; got != "1" {
		t.Errorf("flush=1: topic config %v", cells[1].scenario.Topics[0].Config)
	}
	if l := m.Base.Expect.Likely; len(l) != 1 {
		t.Errorf("the base scenario lost its claim: %v", l)
	}
}

func TestMatrixFaultAxisAndShapes(t *testing.T) {
	m := MatrixSpec{Base: builtin(t, "default"), Runs: 1, Axes: []MatrixAxis{
		{Name: "nodes", Values: []string{"3", "4"}},
		{Name: "fault", Values: []string{"kill", "rolling-bounce-hard", "none"}},
	}}
	cells, err := m.cells()
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 6 || cells[0].shape == cells[3].shape {
		t.Fatalf("%d cells; shapes %v %v: want 6 cells on two shapes", len(cells), cells[0].shape, cells[3].shape)
	}
	kill := cells[0].scenario.Faults
	if len(kill.Timeline) != 1 || kill.Timeline[0].At != scenarios.Duration(20*time.Second) || kill.Timeline[0].For != scenarios.Duration(20*time.Second) {
		t.Errorf("kill cell schedule %+v: want one step a third in, for a third", kill)
	}
	if b := cells[1].scenario.Faults.Timeline; len(b) != 1 || b[0].For != 0 {
		t.Errorf("rolling bounce ends by itself: got %+v", b)
	}
	if n := cells[2].scenario.Faults; n.Kind != scenarios.ScheduleNone {
		t.Errorf("none: %+v", n)
	}
}

func TestMatrixBadAxes(t *testing.T) {
	for _, c := range []struct {
		axis MatrixAxis
		want string
	}{
		{MatrixAxis{Name: "colour", Values: []string{"red"}}, "want one of"},
		{MatrixAxis{Name: "acks", Values: []string{"2"}}, "acks"},
		{MatrixAxis{Name: "min-isr", Values: []string{"x"}}, "want a whole number"},
		{MatrixAxis{Name: "min-isr", Values: []string{"4"}}, "min"},
		{MatrixAxis{Name: "unclean", Values: []string{"maybe"}}, "true or false"},
		{MatrixAxis{Name: "fault", Values: []string{"meteor"}}, "meteor"},
		{MatrixAxis{Name: "seed", Values: []string{"1"}}, "want one of"},
		{MatrixAxis{Name: "acks"}, "no values"},
	} {
		err := CheckMatrix(MatrixSpec{Base: builtin(t, "default"), Runs: 1, Axes: []MatrixAxis{c.axis}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.axis, err, c.want)
		}
	}
}

func TestMatrixSavedAndWorst(t *testing.T) {
	m := &MatrixResult{ClustersStarted: 2, StartClose: 20 * time.Second, Runs: make([]MatrixRun, 12)}
	if got := m.Saved(); got != 100*time.Second {
		t.Errorf("saved %s, want 10 runs × 10 s", got)
	}
	pass := &Outcome{Results: &results.Results{Verdict: results.Pass}}
	slow := &Outcome{Results: &results.Results{Verdict: results.Pass, Liveness: &results.Liveness{Verdict: results.LivenessFail}}}
	fail := &Outcome{Results: &results.Results{Verdict: results.Fail}}
	m.Runs = []MatrixRun{{Outcome: pass}, {Outcome: pass}}
	if got := m.Worst(); got != results.OutcomePass {
		t.Errorf("all pass: worst %s, want pass", got)
	}
	m.Runs = append(m.Runs, MatrixRun{Err: errTest})
	if got := m.Worst(); got != results.OutcomeUnknown {
		t.Errorf("a run that did not complete: worst %s, want unknown", got)
	}
	m.Runs = append(m.Runs, MatrixRun{Outcome: slow})
	if got := m.Worst(); got != results.OutcomeLivenessFail {
		t.Errorf("a run that broke a stated bound: worst %s, want fail (liveness)", got)
	}
	m.Runs = append(m.Runs, MatrixRun{Outcome: fail})
	if got := m.Worst(); got != results.OutcomeFail {
		t.Errorf("a failed run: worst %s, want fail", got)
	}
}

var errTest = errString("boom")

type errString string

func (e errString) Error() string { return string(e) }
