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

func (c *Checker) checkReorder() {
	groups := map[reorderKey][]uint32{}
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
		groups[k] = append(groups[k], id)
	}
	keys := make([]reorderKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b reorderKey) int {
		return cmp.Or(cmp.Compare(a.proc, b.proc), cmp.Compare(a.tp, b.tp))
	})
	sendOrder := func(a, b uint32) int {
		x, y := c.vals.at(a), c.vals.at(b)
		return cmp.Or(cmp.Compare(x.writeOrd, y.writeOrd), cmp.Compare(x.seq, y.seq))
	}
	for _, k := range keys {
		ids := groups[k]
		// Ids are given out as values are first seen, which is send order for every record
		// whose invoke came before any read of it: sorting is usually a no-op check.
		if !slices.IsSortedFunc(ids, sendOrder) {
			slices.SortStableFunc(ids, sendOrder)
		}
		maxOff, maxID := int64(-1), uint32(0)
		for _, id := range ids {
			st := c.vals.at(id)
			if st.off < maxOff {
				prev := c.vals.at(maxID)
				c.find(finding{a: guarantee.Reorder, v: maxID, v2: id, tp: k.tp, off: prev.off, tp2: k.tp, off2: st.off,
					ops: [4]uint32{prev.writeOrd, st.writeOrd, st.doneOrd, none}, proc: -1})
				continue
			}
			if st.off > maxOff {
				maxOff, maxID = st.off, id
			}
		}
	}
}
