package verify

import (
	"cmp"
	"slices"

	"github.com/verity-kafka/verity/verify/guarantee"
)

// reorder: one producer's acknowledged records, in the order it handed them to its client
// (invoke order, then position within a transaction), must have increasing offsets within a
// partition. Records sent more than once (an application resend) have no single send
// position and are left out; so are records whose offset no ack or read reported, records
// the final log provably lacks (lost-write's findings), and records whose offset the final log
// shows holding another record (the log rolled back past them).

type reorderKey struct {
	proc int32
	tp   uint32
}

// reorderAt is a record of a group, with what the check compares of its state, so that the
// comparisons need not look the state up again.
type reorderAt struct {
	id            uint32
	writeOrd, seq uint32
	off           int64
}

func (c *Checker) checkReorder() {
	groups := map[reorderKey][]reorderAt{}
	for id := uint32(1); id < c.vals.len(); id++ {
		st := c.vals.at(id)
		if st.off < 0 || st.flags&fResent != 0 || st.writeOrd == none || !c.committedWrite(st) {
			continue
		}
		// A record the final log lacks (truncated by an unclean election or a lost disk) has
		// no position in it: its acknowledged offset may since hold another record. lost-write
		// reports it; comparing that offset with later ones would call the loss a reordering.
		if _, absent := c.absentFromFinal(st); absent {
			continue
		}
		// Nor has a record whose offset the final log shows holding another record: the copy
		// there was lost when the log rolled back (an inconsistent offset), and the one the
		// producer wrote again is elsewhere.
		if v, ok := c.parts.ps[st.tp].finalAt[st.off]; ok && v != id {
			continue
		}
		k := reorderKey{st.proc, st.tp}
		groups[k] = append(groups[k], reorderAt{id: id, writeOrd: st.writeOrd, seq: st.seq, off: st.off})
	}
	keys := make([]reorderKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b reorderKey) int {
		return cmp.Or(cmp.Compare(a.proc, b.proc), cmp.Compare(a.tp, b.tp))
	})
	sendOrder := func(x, y reorderAt) int {
		return cmp.Or(cmp.Compare(x.writeOrd, y.writeOrd), cmp.Compare(x.seq, y.seq))
	}
	for _, k := range keys {
		recs := groups[k]
		// Ids are given out as values are first seen, which is send order for every record
		// whose invoke came before any read of it: sorting is usually a no-op check.
		if !slices.IsSortedFunc(recs, sendOrder) {
			slices.SortStableFunc(recs, sendOrder)
		}
		maxOff, maxID := int64(-1), uint32(0)
		for _, r := range recs {
			id := r.id
			if r.off < maxOff {
				st := c.vals.at(id)
				prev := c.vals.at(maxID)
				c.find(finding{a: guarantee.Reorder, v: maxID, v2: id, tp: k.tp, off: prev.off, tp2: k.tp, off2: st.off,
					ops: [4]uint32{prev.writeOrd, st.writeOrd, st.doneOrd, none}, proc: -1})
				continue
			}
			if r.off > maxOff {
				maxOff, maxID = r.off, id
			}
		}
	}
}
