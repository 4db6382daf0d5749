package verify

import (
	"encoding/json"
	"slices"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// faultState collects the faults of the run: from the config, and from nemesis events.
type faultState struct {
	kinds     map[string]bool
	diskNodes map[int]bool
	diskAny   bool // a disk loss on nodes not named
	unclean   bool
}

func newFaultState(cfg guarantee.Config) faultState {
	f := cfg.FaultsOf()
	s := faultState{kinds: map[string]bool{}, diskNodes: map[int]bool{}, diskAny: f.DiskLossNodes != 0,
		unclean: f.UncleanElection}
	for _, k := range f.Kinds {
		s.kinds[k] = true
	}
	return s
}

func (s *faultState) observe(op *history.Op) {
	if op.Type == history.Fail || op.F == "isr" || op.F == "" {
		return
	}
	k := guarantee.FaultKind(op.F)
	if !s.kinds[k] {
		s.kinds[string([]byte(k))] = true
	}
	switch k {
	case guarantee.FaultUncleanElection:
		s.unclean = true
	case guarantee.FaultDiskLoss:
		var t history.Faults
		if len(op.Value.Raw) > 0 && json.Unmarshal(op.Value.Raw, &t) == nil && len(t.Nodes) > 0 {
			for _, n := range t.Nodes {
				s.diskNodes[n] = true
			}
		} else {
			s.diskAny = true
		}
	}
}

func (s *faultState) result() guarantee.Faults {
	f := guarantee.Faults{UncleanElection: s.unclean, DiskLossNodes: len(s.diskNodes)}
	if f.DiskLossNodes == 0 && s.diskAny {
		f.DiskLossNodes = -1
	}
	for k := range s.kinds {
		f.Kinds = append(f.Kinds, k)
	}
	slices.Sort(f.Kinds)
	return f
}
