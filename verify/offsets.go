package verify

import (
	"slices"
)

// offsetLog is one partition's inferred log: the slot at each offset that some op reported.
//
// Offsets are any int64 from 0 (a long-lived topic's log starts wherever retention left it,
// 2^40 is no stranger than 0), so the log is kept in fixed-size pages in a map keyed by
// offset>>pageBits: a run of offsets costs 8 bytes each wherever it lies, and every checker
// sees one store, the same at every offset. A page starts as a short sorted list and becomes
// an array once it holds more than sparseMax slots, so that offsets scattered far apart (a
// corrupt or hostile history) cost tens of bytes each, not a page each. A two-entry cache of
// the array pages used last serves the common cases without a map lookup: consecutive reports
// in one page, and reports that alternate between two (a reader's position and the head where
// writers are acknowledged).
type offsetLog struct {
	pages map[int64]*page
	lastK int64          // key of last
	last  *[pageLen]slot // array of the page last used, nil if none
	prevK int64          // key of prev
	prev  *[pageLen]slot // array of the page used before last, nil if none
}

// cached returns the array of page k if the cache holds it, else nil.
func (l *offsetLog) cached(k int64) *[pageLen]slot {
	switch {
	case l.last != nil && k == l.lastK:
		return l.last
	case l.prev != nil && k == l.prevK:
		l.lastK, l.last, l.prevK, l.prev = l.prevK, l.prev, l.lastK, l.last
		return l.last
	}
	return nil
}

// use notes array page k as the one used last.
func (l *offsetLog) use(k int64, arr *[pageLen]slot) {
	if l.last != arr {
		l.prevK, l.prev = l.lastK, l.last
	}
	l.lastK, l.last = k, arr
}

const (
	pageBits  = 10
	pageLen   = 1 << pageBits
	pageMask  = pageLen - 1
	sparseMax = 32
)

// page holds the offsets k<<pageBits .. k<<pageBits+pageLen-1: in arr once it is an array,
// before that in idx (sorted offsets within the page) and sl (their slots).
type page struct {
	arr *[pageLen]slot
	idx []uint16
	sl  []slot
}

// get returns the slot at offset o; the zero slot if none was set.
func (l *offsetLog) get(o int64) slot {
	if o < 0 {
		return slot{}
	}
	k := o >> pageBits
	if arr := l.cached(k); arr != nil {
		return arr[o&pageMask]
	}
	pg := l.pages[k]
	if pg == nil {
		return slot{}
	}
	if pg.arr != nil {
		l.use(k, pg.arr)
		return pg.arr[o&pageMask]
	}
	if i, ok := slices.BinarySearch(pg.idx, uint16(o&pageMask)); ok {
		return pg.sl[i]
	}
	return slot{}
}

// set puts s at offset o (o ≥ 0; a negative offset names no position and is ignored).
func (l *offsetLog) set(o int64, s slot) {
	if o < 0 {
		return
	}
	k, i := o>>pageBits, o&pageMask
	if arr := l.cached(k); arr != nil {
		arr[i] = s
		return
	}
	if l.pages == nil {
		l.pages = map[int64]*page{}
	}
	pg := l.pages[k]
	if pg == nil {
		pg = &page{}
		// A page next to an array page continues a run: make it an array at once.
		if prev := l.pages[k-1]; prev != nil && prev.arr != nil {
			pg.arr = new([pageLen]slot)
		}
		l.pages[k] = pg
	}
	if pg.arr == nil {
		j, found := slices.BinarySearch(pg.idx, uint16(i))
		if found {
			pg.sl[j] = s
			return
		}
		if len(pg.idx) < sparseMax {
			pg.idx = slices.Insert(pg.idx, j, uint16(i))
			pg.sl = slices.Insert(pg.sl, j, s)
			return
		}
		arr := new([pageLen]slot)
		for j, x := range pg.idx {
			arr[x] = pg.sl[j]
		}
		pg.arr, pg.idx, pg.sl = arr, nil, nil
	}
	pg.arr[i] = s
	l.use(k, pg.arr)
}

// each calls f on every set offset in [lo, hi], in increasing order, until f returns false.
func (l *offsetLog) each(lo, hi int64, f func(o int64, s slot) bool) {
	lo = max(lo, 0)
	if hi < lo || len(l.pages) == 0 {
		return
	}
	klo, khi := lo>>pageBits, hi>>pageBits
	var keys []int64
	if uint64(khi-klo) < uint64(len(l.pages)) {
		for k := klo; ; k++ {
			if _, ok := l.pages[k]; ok {
				keys = append(keys, k)
			}
			if k == khi {
				break
			}
		}
	} else {
		keys = make([]int64, 0, len(l.pages))
		for k := range l.pages {
			if k >= klo && k <= khi {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
	}
	for _, k := range keys {
		pg, base := l.pages[k], k<<pageBits
		if pg.arr != nil {
			from, to := int64(0), int64(pageMask)
			if k == klo {
				from = lo & pageMask
			}
			if k == khi {
				to = hi & pageMask
			}
			for i := from; i <= to; i++ {
				if s := pg.arr[i]; s.val != 0 && !f(base+i, s) {
					return
				}
			}
			continue
		}
		for j, x := range pg.idx {
			if o := base + int64(x); o >= lo && o <= hi && !f(o, pg.sl[j]) {
				return
			}
		}
	}
}

// filled reports whether every offset in [lo, hi] is set (true for an empty range).
func (l *offsetLog) filled(lo, hi int64) bool {
	if hi < lo {
		return true
	}
	if lo < 0 {
		return false
	}
	// The ranges asked about are mostly the few offsets between two transactions' records,
	// within one page: look at an array page directly.
	if k := lo >> pageBits; k == hi>>pageBits {
		if pg := l.pages[k]; pg == nil {
			return false
		} else if pg.arr != nil {
			for _, s := range pg.arr[lo&pageMask : hi&pageMask+1] {
				if s.val == 0 {
					return false
				}
			}
			return true
		}
	}
	n := int64(0)
	l.each(lo, hi, func(_ int64, s slot) bool {
		if s.val == 0 {
			return false
		}
		n++
		return true
	})
	return n == hi-lo+1
}
