package verify

import (
	"encoding/json"
	"slices"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify/guarantee"
)

// faultState collects the faults that took effect, from the nemesis's events, and scopes them
// to the partitions whose replicas they touched.
//
// A nemesis event is an invoke and a completion carrying the same value (its completions name
// no invoke: nemesis actions and ISR observations interleave). The fault counts at its
// completion when that is ok (it happened) or info (part of it may have); an invoke alone, a
// failed completion, or a fault named only in the config's schedule did nothing to the
// cluster.
//
// A disk loss on nodes N touches a partition whose replica set meets N, and the lost disks the
// table compares with min ISR are counted per partition: those among its replicas. A power loss
// counts the same way, but per event: what matters is how many replicas lost their unsynced
// records at once, since a replica that lost them alone refills from the others. An unclean
// election that names a topic (and partition) touches that partition (every partition of the
// topic if it names none); one that names nodes, the partitions with a replica among them; one
// that names nothing, every partition. Replica sets come from the ISR observations ("replicas");
// a partition never observed with them is touched by every disk loss and every election not
// named for another partition, as a run without observations would be judged.
type faultState struct {
	kinds     map[string]bool
	diskNodes []int   // sorted, distinct
	diskAny   bool    // a disk loss on nodes not named
	power     [][]int // the nodes of each power loss, sorted
	powerAny  bool    // a power loss on nodes not named
	unclean   []uncleanEvent
	replicas  map[uint32][]int // by partition: every replica observed, sorted
	// controllers are the KRaft voters the header names, sorted; nil when it names none.
	controllers []int
	byTP        map[uint32]guarantee.Faults
}

// uncleanEvent is the scope of one forced unclean election.
type uncleanEvent struct {
	topic     *string
	partition *int32
	nodes     []int
}

// faultTargets is the part of a nemesis event's value that scopes it.
type faultTargets struct {
	Nodes     []int   `json:"nodes"`
	Topic     *string `json:"topic"`
	Partition *int32  `json:"partition"`
}

func newFaultState(controllers []int) faultState {
	var ctl []int
	if len(controllers) > 0 {
		ctl = slices.Sorted(slices.Values(controllers))
	}
	return faultState{kinds: map[string]bool{}, replicas: map[uint32][]int{}, controllers: ctl}
}

func (s *faultState) observe(op *history.Op) {
	if (op.Type != history.OK && op.Type != history.Info) || op.F == "isr" || op.F == "" {
		return
	}
	k := guarantee.FaultKind(op.F)
	if !s.kinds[k] && !history.EndsAFault(k) {
		s.kinds[string([]byte(k))] = true
	}
	if k != guarantee.FaultDiskLoss && k != guarantee.FaultUncleanElection && k != guarantee.FaultPowerLoss {
		return
	}
	s.byTP = nil
	var t faultTargets
	if len(op.Value.Raw) > 0 && json.Unmarshal(op.Value.Raw, &t) != nil {
		t = faultTargets{} // unreadable: scope it to everything
	}
	switch k {
	case guarantee.FaultDiskLoss:
		if len(t.Nodes) == 0 {
			s.diskAny = true
			return
		}
		for _, n := range t.Nodes {
			if i, found := slices.BinarySearch(s.diskNodes, n); !found {
				s.diskNodes = slices.Insert(s.diskNodes, i, n)
			}
		}
	case guarantee.FaultPowerLoss:
		if len(t.Nodes) == 0 {
			s.powerAny = true
			return
		}
		nodes := slices.Clone(t.Nodes)
		slices.Sort(nodes)
		s.power = append(s.power, slices.Compact(nodes))
	case guarantee.FaultUncleanElection:
		s.unclean = append(s.unclean, uncleanEvent{topic: t.Topic, partition: t.Partition, nodes: t.Nodes})
	}
}

// observeReplicas adds replica ids observed for tp.
func (s *faultState) observeReplicas(tp uint32, ids []int) {
	if len(ids) == 0 {
		return
	}
	have := s.replicas[tp]
	for _, n := range ids {
		if i, found := slices.BinarySearch(have, n); !found {
			have = slices.Insert(have, i, n)
			s.byTP = nil
		}
	}
	s.replicas[tp] = have
}

// all is what the run did to the cluster as a whole: every fault that took effect.
func (s *faultState) all() guarantee.Faults {
	f := guarantee.Faults{UncleanElection: len(s.unclean) > 0, DiskLossNodes: len(s.diskNodes)}
	if f.DiskLossNodes == 0 && s.diskAny {
		f.DiskLossNodes = -1
	}
	f.PowerLossNodes = s.powerNodes(nil)
	f.Controllers = len(s.controllers)
	f.ControllerPowerLoss = s.powerNodes(s.controllers)
	f.ControllerDiskLoss = s.controllerDisks()
	for k := range s.kinds {
		f.Kinds = append(f.Kinds, k)
	}
	slices.Sort(f.Kinds)
	return f
}

// of is what the run did to partition p (id tp): the faults that touched its replicas.
func (s *faultState) of(tp uint32, p *partition) guarantee.Faults {
	if f, ok := s.byTP[tp]; ok {
		return f
	}
	f := s.all()
	reps := s.replicas[tp] // nil: never observed, so every disk loss counts
	if reps != nil {
		f.DiskLossNodes = 0
		for _, n := range s.diskNodes {
			if _, in := slices.BinarySearch(reps, n); in {
				f.DiskLossNodes++
			}
		}
		if f.DiskLossNodes == 0 && s.diskAny {
			f.DiskLossNodes = -1
		}
	}
	f.PowerLossNodes = s.powerNodes(reps)
	f.UncleanElection = slices.ContainsFunc(s.unclean, func(u uncleanEvent) bool { return u.touches(p, reps) })
	if s.byTP == nil {
		s.byTP = map[uint32]guarantee.Faults{}
	}
	s.byTP[tp] = f
	return f
}

// controllerDisks counts the controllers whose disk was lost (every lost disk when the header
// names no controllers); -1 when only disk losses on unnamed nodes could have hit them.
func (s *faultState) controllerDisks() int {
	n := 0
	for _, id := range s.diskNodes {
		if _, in := slices.BinarySearch(s.controllers, id); in || s.controllers == nil {
			n++
		}
	}
	if n == 0 && s.diskAny {
		return -1
	}
	return n
}

// powerNodes is the most replicas among reps (nil: not known, every node counts) that one power
// loss hit; -1 when only power losses on unnamed nodes could have hit them.
func (s *faultState) powerNodes(reps []int) int {
	most := 0
	for _, nodes := range s.power {
		n := 0
		for _, id := range nodes {
			if _, in := slices.BinarySearch(reps, id); in || reps == nil {
				n++
			}
		}
		most = max(most, n)
	}
	if most == 0 && s.powerAny {
		return -1
	}
	return most
}

// touches reports whether the election could have changed partition p, whose replicas are
// reps (nil: not known).
func (u *uncleanEvent) touches(p *partition, reps []int) bool {
	switch {
	case u.topic != nil:
		return *u.topic == p.topic && (u.partition == nil || *u.partition == p.part)
	case len(u.nodes) > 0:
		if reps == nil {
			return true
		}
		for _, n := range u.nodes {
			if _, in := slices.BinarySearch(reps, n); in {
				return true
			}
		}
		return false
	}
	return true
}
