package scenarios

import (
	"maps"
	"slices"
)

// ScheduledFaults lists, sorted and once each, the faults s's schedule may inject (the parts of
// compounds, not "compound"; never "none"). The history header names them as planned; the
// checker counts only those its nemesis events show took effect.
func (s Scenario) ScheduledFaults() []string {
	seen := map[string]bool{}
	var walk func(f Fault)
	walk = func(f Fault) {
		switch f.Name {
		case FaultNone:
		case FaultCompound:
			for _, p := range f.Parts {
				walk(p)
			}
		default:
			seen[string(f.Name)] = true
		}
	}
	for _, st := range s.Faults.Timeline {
		walk(st.Fault)
	}
	if p := s.Faults.Periodic; p != nil {
		for _, f := range p.Set {
			walk(f)
		}
	}
	if len(seen) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(seen))
}
