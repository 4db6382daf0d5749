package verify

import (
	"maps"
	"slices"

	"github.com/verity-kafka/verity/verify/guarantee"
)

// metadata-lost: metadata the KRaft quorum committed was lost. The brokers learn a partition's
// leader and leader epoch only from committed records of the metadata log, and the controller
// raises the epoch at every leader change, so across a partition's life one epoch names one
// leader and the epoch never goes back. The "isr" observations carry both ("leader",
// "leader_epoch"); two kinds of evidence follow from them:
//
//   - an epoch reused: two observations of the same epoch name different leaders. A broker that
//     lags shows an older epoch with its own leader, never the same epoch with another one, so
//     one pair is proof.
//   - an epoch gone back: an observation shows an epoch below one observed before, and no later
//     observation brings it back. A single broker answering from metadata that trails by a few
//     records could show an older epoch for one sample; the next sample, with the current
//     epoch, clears it (the observer records every change of epoch). What is left at the end
//     of the history is what the cluster settled on.
//
// A sample with leader -1 says that no leader was known (a broker answers LEADER_NOT_AVAILABLE
// with leader -1 and the partition's current epoch when the leader is not alive in its view): it
// names no second leader, so it never makes an epoch reused, but its epoch is the metadata's and
// takes part in the gone-back rule like any other. A sample with epoch -1 (no answer carried
// an epoch), or without a leader epoch at all (hand-written or older histories), is not checked.

// metaPart is what the observations showed of one partition's metadata.
type metaPart struct {
	leaders map[int32]epochSeen // by leader epoch: the leader first observed with it
	reused  map[int32]bool      // epochs already reported as naming two leaders
	top     epochSeen           // the highest epoch observed
	seen    bool
	back    *goneBack // an epoch below top, not contradicted since
}

type epochSeen struct {
	epoch, leader int32
	ord           uint32
}

// goneBack is an observation (low) below the highest epoch observed before it (high).
type goneBack struct{ high, low epochSeen }

// metaEvidence is the leader epochs a metadata-lost finding compares: first as observed at its
// first op, then at its second.
type metaEvidence struct{ first, then epochSeen }

type metaState struct {
	parts    map[uint32]*metaPart
	evidence []metaEvidence // indexed by finding.meta
	observed bool           // an observation carried a leader epoch
}

// observe takes one observation of partition tp: leader and epoch, at ordinal ord.
func (s *metaState) observe(c *Checker, tp uint32, leader, epoch int32, ord uint32) {
	if epoch < 0 {
		return
	}
	if s.parts == nil {
		s.parts = map[uint32]*metaPart{}
	}
	s.observed = true
	p := s.parts[tp]
	if p == nil {
		p = &metaPart{leaders: map[int32]epochSeen{}, reused: map[int32]bool{}}
		s.parts[tp] = p
	}
	now := epochSeen{epoch: epoch, leader: leader, ord: ord}
	if first, ok := p.leaders[epoch]; leader < 0 {
		// No leader known: nothing to compare.
	} else if !ok {
		p.leaders[epoch] = now
	} else if first.leader != leader && !p.reused[epoch] {
		// One finding per epoch: the watcher samples a partition below min ISR every tick,
		// and every later sample of the second leader would repeat the same evidence.
		p.reused[epoch] = true
		s.find(c, tp, first, now)
	}
	switch {
	case !p.seen || epoch >= p.top.epoch:
		if p.back != nil && epoch >= p.back.high.epoch {
			p.back = nil
		}
		if !p.seen || epoch > p.top.epoch {
			p.top = now
		}
		p.seen = true
	case p.back == nil:
		p.back = &goneBack{high: p.top, low: now}
	}
}

// checkMetadataLost reports the epochs that went back and stayed back.
func (c *Checker) checkMetadataLost() {
	s := &c.meta
	for _, tp := range slices.Sorted(maps.Keys(s.parts)) {
		if p := s.parts[tp]; p.back != nil {
			s.find(c, tp, p.back.high, p.back.low)
		}
	}
}

func (s *metaState) find(c *Checker, tp uint32, first, then epochSeen) {
	s.evidence = append(s.evidence, metaEvidence{first: first, then: then})
	c.find(finding{a: guarantee.MetadataLost, tp: tp, off: -1, off2: -1, ops: [4]uint32{first.ord, then.ord, none, none},
		proc: -1, meta: uint32(len(s.evidence))})
}
