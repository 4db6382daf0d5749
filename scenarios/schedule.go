package scenarios

import (
	"fmt"

	"github.com/verity-kafka/verity/nemesis"
)

// NemesisSchedule is s's fault schedule as the nemesis runs it, each fault built by its row of
// the catalogue (FaultSpec.Build).
func (s Resolved) NemesisSchedule(refs Refs) (nemesis.Schedule, error) {
	switch f := s.Faults; f.Kind {
	case ScheduleTimeline:
		var tl nemesis.Timeline
		for i, st := range f.Timeline {
			nf, err := st.Fault.Build(refs)
			if err != nil {
				return nil, fmt.Errorf("faults.timeline[%d]: %w", i, err)
			}
			tl = append(tl, nemesis.Step{At: st.At.Std(), For: st.For.Std(), Fault: nf})
		}
		return tl, nil
	case SchedulePeriodic:
		p := f.Periodic
		r := nemesis.Random{Interval: p.Interval.Std(), Quiet: p.Quiet, Hold: p.Hold.Std(), Start: p.Start.Std()}
		for i, sf := range p.Set {
			nf, err := sf.Build(refs)
			if err != nil {
				return nil, fmt.Errorf("faults.periodic.set[%d]: %w", i, err)
			}
			r.Faults = append(r.Faults, nf)
		}
		return r, nil
	}
	return nemesis.NoFaults{}, nil
}

// SingleFault is a schedule of one fault injected a third into a run of length d and healed a
// third later (a fault that ends by itself gets no duration), so that the run has a stretch
// before, during and after it: the matrix's fault axis.
func SingleFault(f Fault, d Duration) Schedule {
	if f.Name == FaultNone {
		return Schedule{Kind: ScheduleNone}
	}
	st := Step{At: d / 3, Fault: f}
	if spec, _ := LookupFault(f.Name); spec.Heals {
		st.For = d / 3
	}
	return Schedule{Kind: ScheduleTimeline, Timeline: []Step{st}}
}
