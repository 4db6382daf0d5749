// Package lazyfs is a FUSE filesystem that models a power cut. A store directory holds live/,
// which the mount shows and which every change reaches at once, and durable/, which holds only
// what was fsynced: what the disk would keep if the power failed now. Prepare, run before each
// mount, either drops from live everything that is not durable (after Cut marked the store: a
// power cut) or makes durable everything live holds (a crashed process loses nothing, as the
// page cache survives it).
//
// What becomes durable, and when:
//
//   - Data. Writes, truncations, fallocate and copy_file_range change live at once; the file
//     remembers the byte ranges they touched and the lowest size it was cut to. fsync or
//     fdatasync of the file copies those ranges from live to its durable copy, gives the copy
//     live's size and fsyncs it. Shared writable mmaps reach the filesystem as ordinary writes
//     on writeback (msync, fsync, munmap), so the same rule covers them.
//   - Names. create, mkdir, rename, unlink and rmdir change live at once and join one ordered
//     journal; fsync of any directory replays the whole journal on durable, as a journal commit
//     does. A rename moves a file's durable copy if it was under the old name and gives a file
//     that had none an empty one (the name is durable, its data is not); the target it replaced
//     is no longer durable. Entries that durable can no longer follow are skipped.
//   - A file's own name. fsync of a file that has no durable copy yet first commits the journal
//     up to the entry that gave the file its name, as ext4 and xfs do for a new file. A prefix
//     of the journal rather than that one name, because a name written out of order could land
//     where durable still holds another file whose rename away is not committed yet.
//
// Hard links, symbolic links, device nodes, O_TMPFILE and renameat2's RENAME_EXCHANGE are
// refused with ENOTSUP: Kafka uses none of them, and each would need durability rules of its
// own; extended attributes are not supported at all. Mode, owner and times change live only: a
// durable copy takes mode and owner from live when it is made, and Prepare copies all three.
//
// A file is tracked by its live inode number from the first time it is touched; until then its
// durable copy has its live path, which is what Prepare leaves and what the journal preserves
// (renaming a directory first tracks every file under it).
//
// Disk faults (EIO, a full disk, slow calls; faults.go and package control) can be set and
// cleared on a mounted filesystem.
package lazyfs

import (
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/verity-kafka/verity/lazyfs/control"
)

// Names in the store directory.
const (
	liveDir    = "live"
	durableDir = "durable"
	cutMark    = control.CutMark
	dropFile   = control.DropFile
)

// lazyFS is the state of one mount: the journal of names and which durable copy belongs to
// which file.
type lazyFS struct {
	live, durable string
	log           *slog.Logger

	// mu orders the journal with the changes to live it records, and guards everything below
	// and each fileState's durable and named fields. A file's own mu is taken before it.
	mu      sync.Mutex
	files   map[uint64]*fileState // by live inode number: the files live still names
	owners  map[string]*fileState // by durable path: whose copy each durable file is
	pending []op
	seq     uint64

	// faults are the disk faults in force, nil when none (faults.go).
	faults atomic.Pointer[faultSet]
	// faultMu orders setting and clearing faults; it guards lastFaults and clearedAt.
	faultMu    sync.Mutex
	lastFaults *faultSet // the last set, in force or cleared, for the status
	clearedAt  time.Time
	statusKick chan struct{} // a hit since the status was last written
}

func newLazyFS(store string, log *slog.Logger) *lazyFS {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &lazyFS{
		live:    filepath.Join(store, liveDir),
		durable: filepath.Join(store, durableDir),
		log:     log,
		files:   map[uint64]*fileState{},
		owners:  map[string]*fileState{},

		statusKick: make(chan struct{}, 1),
	}
}

// fileState is what a file has changed in live since its last fsync, and where its durable copy
// is.
type fileState struct {
	// mu is held across a data sync, so that two fsyncs of one file do not interleave; it
	// guards dirty and trunc.
	mu    sync.Mutex
	dirty spans
	trunc int64 // the lowest size set since the last sync, -1 if none

	durable string // path of its durable copy under durable/, "" if it has none
	named   uint64 // seq of the last journal entry that gave it a name
}

func newFileState() *fileState { return &fileState{trunc: -1} }

// wrote records that [off, off+n) changed in live.
func (s *fileState) wrote(off, n int64) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.dirty = s.dirty.add(off, off+n)
	s.mu.Unlock()
}

// truncated records that live was given size sz: the durable copy must lose what lies past the
// lowest such size even if the file grew again before its fsync.
func (s *fileState) truncated(sz int64) {
	s.mu.Lock()
	if s.trunc < 0 || sz < s.trunc {
		s.trunc = sz
	}
	s.mu.Unlock()
}

// stateFor returns the state of the live file with inode ino at path p, tracking it from now on
// if it was untouched (its durable copy is then at p). Holds l.mu.
func (l *lazyFS) stateFor(ino uint64, p string) *fileState {
	if s := l.files[ino]; s != nil {
		return s
	}
	s := newFileState()
	l.files[ino] = s
	if l.owners[p] == nil {
		l.setDurable(s, p)
	}
	return s
}

// setDurable makes p the path of s's durable copy; another file whose copy was at p has none
// any more. Holds l.mu.
func (l *lazyFS) setDurable(s *fileState, p string) {
	if s.durable != "" && l.owners[s.durable] == s {
		delete(l.owners, s.durable)
	}
	s.durable = p
	if p == "" {
		return
	}
	if old := l.owners[p]; old != nil && old != s {
		old.durable = ""
	}
	l.owners[p] = s
}

// dropUnder forgets the durable copies at dir and under it. Holds l.mu.
func (l *lazyFS) dropUnder(dir string) {
	for p, s := range l.owners {
		if under(p, dir) {
			s.durable = ""
			delete(l.owners, p)
		}
	}
}

// moveUnder records that the durable directory from is now to. Holds l.mu.
func (l *lazyFS) moveUnder(from, to string) {
	var moved []*fileState
	for p, s := range l.owners {
		if under(p, from) {
			delete(l.owners, p)
			s.durable = to + p[len(from):]
			moved = append(moved, s)
		}
	}
	for _, s := range moved {
		l.owners[s.durable] = s
	}
}

func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// span is the half-open byte range [start, end).
type span struct{ start, end int64 }

// spans is a sorted list of disjoint, non-touching spans.
type spans []span

// add merges [start, end) into the list.
func (s spans) add(start, end int64) spans {
	if end <= start {
		return s
	}
	i := sort.Search(len(s), func(i int) bool { return s[i].end >= start })
	j := i
	for j < len(s) && s[j].start <= end {
		start, end = min(start, s[j].start), max(end, s[j].end)
		j++
	}
	return slices.Replace(s, i, j, span{start, end})
}
