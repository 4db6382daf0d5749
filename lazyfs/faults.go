package lazyfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/verity-kafka/verity/lazyfs/control"
)

// Disk faults (control.DiskFault) are rules the daemon holds in memory; every write, fsync and
// read through the mount asks the rules of its op whether to fail or wait. What a faulted call
// leaves behind:
//
//   - An EIO or ENOSPC write writes nothing: live, the file's dirty ranges and so the durable
//     model are as before the call.
//   - An EIO fsync copies nothing to durable and leaves the file's writes pending, as a
//     transient error would: a later fsync (or a sync) may still make them durable, and a power
//     cut before that drops them. (Linux may instead forget dirty pages whose writeback failed;
//     that is not modelled.)
//   - A slow call waits, then does what it would have done.
//   - A full disk (control.KindFull) counts the bytes written to the paths it matches; a write
//     that would take the count past AfterBytes fails whole, and a smaller one that still fits
//     succeeds, as on a disk with that little room left. With no room left, creating a file
//     there fails too, and statfs reports no more free space than the smallest room left.
//
// Faults do not survive the daemon: Announce marks the last status cleared.

// Indexes of the ops in faultSet.byOp.
const (
	opWrite = iota
	opFsync
	opRead
	numOps
)

var opIndex = map[control.FaultOp]int{control.OpWrite: opWrite, control.OpFsync: opFsync, control.OpRead: opRead}

// faultSet is the rules set together. It never changes once in force, only its rules'
// counters, so that a call reads it with one atomic load and no lock.
type faultSet struct {
	setAt time.Time
	rules []*rule
	byOp  [numOps][]*rule // nil for an op no rule matches, so that its calls skip the path
	full  []*rule
}

// rule is one compiled control.DiskFault and what it did.
type rule struct {
	spec  control.DiskFault
	pat   control.PathPattern
	delay time.Duration

	spent   atomic.Bool  // a once rule has hit
	written atomic.Int64 // a full disk's bytes written
	hits    atomic.Int64

	mu       sync.Mutex // guards firstHit and paths, taken only on a hit
	firstHit time.Time
	paths    []string
}

func compileFaults(rules []control.DiskFault) (*faultSet, error) {
	if err := (control.Faults{Rules: rules}).Validate(); err != nil {
		return nil, err
	}
	set := &faultSet{setAt: time.Now()}
	for _, d := range rules {
		if d.Kind == control.KindFull {
			d.Op = control.OpWrite
		}
		pat, _ := control.CompilePath(d.Path)
		r := &rule{spec: d, pat: pat, delay: d.DelayDuration()}
		set.rules = append(set.rules, r)
		set.byOp[opIndex[d.Op]] = append(set.byOp[opIndex[d.Op]], r)
		if d.Kind == control.KindFull {
			set.full = append(set.full, r)
		}
	}
	return set, nil
}

// faultsFor returns the rules in force for op, nil when there are none: with no faults set a
// call pays one atomic load.
func (l *lazyFS) faultsFor(op int) []*rule {
	if set := l.faults.Load(); set != nil {
		return set.byOp[op]
	}
	return nil
}

// take reports whether r hits a call it matches. The compare-and-swap makes a once rule hit
// exactly one call however many race for it.
func (r *rule) take() bool {
	return !r.spec.Once || r.spent.CompareAndSwap(false, true)
}

// room is how many more bytes a full disk takes.
func (r *rule) room() int64 { return max(0, r.spec.AfterBytes-r.written.Load()) }

// reserve counts n bytes about to be written, or reports that they do not fit. Counting before
// the write, not after, keeps concurrent writes from all fitting in the same room.
func (r *rule) reserve(n int64) bool {
	for {
		w := r.written.Load()
		if w+n > r.spec.AfterBytes {
			return false
		}
		if r.written.CompareAndSwap(w, w+n) {
			return true
		}
	}
}

// inject applies rules, those of one op, to a call on the file at p that writes n bytes (0 for
// other ops): it waits out the slow rules, then returns the errno of the first error or full
// rule that fails the call, or 0. Each full rule that returned 0 has counted the n bytes.
func (l *lazyFS) inject(ctx context.Context, rules []*rule, p string, n int64) syscall.Errno {
	for _, r := range rules {
		if r.spec.Kind == control.KindSlow && r.pat.Match(p) && r.take() {
			l.hit(r, p)
			t := time.NewTimer(r.delay)
			select {
			case <-t.C:
			case <-ctx.Done(): // the caller was interrupted (or the mount is going)
				t.Stop()
				return syscall.EINTR
			}
		}
	}
	for _, r := range rules {
		if r.spec.Kind == control.KindError && r.pat.Match(p) && r.take() {
			l.hit(r, p)
			return syscall.EIO
		}
	}
	for i, r := range rules {
		if r.spec.Kind != control.KindFull || !r.pat.Match(p) || r.reserve(n) {
			continue
		}
		unreserve(rules[:i], p, n) // nothing is written, so nothing counts
		l.hit(r, p)
		return syscall.ENOSPC
	}
	return 0
}

// unreserve takes back n bytes the full rules among rules counted for a write to p that did
// not write them.
func unreserve(rules []*rule, p string, n int64) {
	if n <= 0 {
		return
	}
	for _, r := range rules {
		if r.spec.Kind == control.KindFull && r.pat.Match(p) {
			r.written.Add(-n)
		}
	}
}

// injectWrite is inject for a write of n bytes to the file at p, returning also what to call
// with the bytes the write did write.
func (l *lazyFS) injectWrite(ctx context.Context, rules []*rule, p string, n int64) (syscall.Errno, func(int64)) {
	if errno := l.inject(ctx, rules, p, n); errno != 0 {
		return errno, nil
	}
	return 0, func(wrote int64) { unreserve(rules, p, n-wrote) }
}

// injectCreate fails the creation of a file at p when a full disk matching it has no room.
func (l *lazyFS) injectCreate(p string) syscall.Errno {
	set := l.faults.Load()
	if set == nil {
		return 0
	}
	for _, r := range set.full {
		if r.pat.Match(p) && r.room() == 0 {
			l.hit(r, p)
			return syscall.ENOSPC
		}
	}
	return 0
}

// statfsFull makes out report no more free space than the smallest room of the full disks.
func (l *lazyFS) statfsFull(out *fuse.StatfsOut) {
	set := l.faults.Load()
	if set == nil || out.Bsize == 0 {
		return
	}
	for _, r := range set.full {
		blocks := uint64(r.room()) / uint64(out.Bsize)
		out.Bfree, out.Bavail = min(out.Bfree, blocks), min(out.Bavail, blocks)
	}
}

// hit records that r failed or delayed a call on p.
func (l *lazyFS) hit(r *rule, p string) {
	r.hits.Add(1)
	r.mu.Lock()
	if r.firstHit.IsZero() {
		r.firstHit = time.Now()
	}
	if len(r.paths) < control.MaxStatusPaths && !slices.Contains(r.paths, p) {
		r.paths = append(r.paths, p)
	}
	r.mu.Unlock()
	select { // the status writer coalesces hits; a call never waits for the store
	case l.statusKick <- struct{}{}:
	default:
	}
}

// SetFaults puts rules in force in place of any before them; an invalid rule sets none.
func (s *Server) SetFaults(rules []control.DiskFault) error {
	set, err := compileFaults(rules)
	if err != nil {
		return err
	}
	l := s.lz
	l.faultMu.Lock()
	l.lastFaults, l.clearedAt = set, time.Time{}
	l.faults.Store(set)
	l.faultMu.Unlock()
	return s.writeFaultStatus()
}

// ClearFaults ends the faults in force; their status stays readable.
func (s *Server) ClearFaults() error {
	l := s.lz
	l.faultMu.Lock()
	if l.faults.Swap(nil) != nil {
		l.clearedAt = time.Now()
	}
	l.faultMu.Unlock()
	return s.writeFaultStatus()
}

// FaultStatus is what the last rules set did.
func (s *Server) FaultStatus() control.FaultStatus {
	l := s.lz
	l.faultMu.Lock()
	defer l.faultMu.Unlock()
	st := control.FaultStatus{Rules: []control.RuleStatus{}}
	set := l.lastFaults
	if set == nil {
		return st
	}
	st.Active = l.faults.Load() == set
	st.SetAt = set.setAt.UTC().Format(time.RFC3339Nano)
	if !l.clearedAt.IsZero() {
		st.ClearedAt = l.clearedAt.UTC().Format(time.RFC3339Nano)
	}
	for _, r := range set.rules {
		rs := control.RuleStatus{Rule: r.spec, Hits: r.hits.Load()}
		if r.spec.Kind == control.KindFull {
			rs.Written = r.written.Load()
		}
		r.mu.Lock()
		if !r.firstHit.IsZero() {
			rs.FirstHit = r.firstHit.UTC().Format(time.RFC3339Nano)
		}
		rs.Paths = slices.Clone(r.paths)
		r.mu.Unlock()
		st.Rules = append(st.Rules, rs)
	}
	return st
}

// writeFaultStatus writes FaultStatus to the store, once some rules were set.
func (s *Server) writeFaultStatus() error {
	s.statusMu.Lock() // writeAtomic's temporary file is one per name
	defer s.statusMu.Unlock()
	st := s.FaultStatus()
	if st.SetAt == "" {
		return nil
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(s.store, control.FaultStatusFile, append(b, '\n')); err != nil {
		return fmt.Errorf("writing the fault status: %w", err)
	}
	return nil
}

// statusEvery is the most often hits rewrite the status file.
const statusEvery = 100 * time.Millisecond

// writeStatuses rewrites the status file after hits, at most every statusEvery, until stop is
// closed, then once more if hits are pending.
func (s *Server) writeStatuses(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			select {
			case <-s.lz.statusKick:
				s.logStatusErr(s.writeFaultStatus())
			default:
			}
			return
		case <-s.lz.statusKick:
		}
		s.logStatusErr(s.writeFaultStatus())
		select {
		case <-stop:
		case <-time.After(statusEvery):
		}
	}
}

func (s *Server) logStatusErr(err error) {
	if err != nil {
		s.lz.log.Warn("lazyfs: fault status", "err", err)
	}
}

// AnswerFaults serves a RequestFaults: it does what the request in the store asks, then
// acknowledges it, with the error if it failed (the requester must not wait forever).
func (s *Server) AnswerFaults() error {
	b, err := os.ReadFile(filepath.Join(s.store, control.FaultRequestFile))
	if err != nil {
		return fmt.Errorf("reading the fault request: %w", err)
	}
	var req control.FaultRequest
	doErr := json.Unmarshal(b, &req)
	if doErr == nil {
		doErr = req.Validate()
	}
	if doErr == nil && req.Action == control.ActionSet {
		doErr = s.SetFaults(req.Rules)
	} else if doErr == nil {
		doErr = s.ClearFaults()
	}
	ack := control.FaultAck{Nonce: req.Nonce}
	if doErr != nil {
		ack.Error = doErr.Error()
	}
	out, err := json.Marshal(ack)
	if err != nil {
		return err
	}
	return errors.Join(doErr, writeAtomic(s.store, control.FaultAckFile, append(out, '\n')))
}

// RequestFaults asks store's daemon (SIGUSR2) to set or clear faults, and waits until it has
// answered this request; an invalid request is refused before the daemon sees it.
func RequestFaults(ctx context.Context, store string, req control.FaultRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	pid, err := awaitDaemon(ctx, store)
	if err != nil {
		return err
	}
	req.Nonce = strconv.FormatInt(time.Now().UnixNano(), 10)
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if err := writeAtomic(store, control.FaultRequestFile, append(b, '\n')); err != nil {
		return fmt.Errorf("requesting faults: %w", err)
	}
	if err := signalDaemon(pid, syscall.SIGUSR2); err != nil {
		return err
	}
	var ack control.FaultAck
	err = awaitAnswer(ctx, store, control.FaultAckFile, func(b []byte) bool {
		return json.Unmarshal(b, &ack) == nil && ack.Nonce == req.Nonce
	})
	if err != nil {
		return fmt.Errorf("waiting for the daemon to %s faults: %w", req.Action, err)
	}
	if ack.Error != "" {
		return fmt.Errorf("the daemon refused to %s faults: %s", req.Action, ack.Error)
	}
	return nil
}

// ReadFaultStatus reads the status of the last faults set on store; with none set since the
// store was made it is empty and not active.
func ReadFaultStatus(store string) (control.FaultStatus, error) {
	st := control.FaultStatus{Rules: []control.RuleStatus{}}
	b, err := os.ReadFile(filepath.Join(store, control.FaultStatusFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	} else if err != nil {
		return st, fmt.Errorf("reading the fault status: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("reading the fault status: %w", err)
	}
	return st, nil
}

// endFaults, at a daemon's start, marks the faults of the daemon before it cleared (they were in
// its memory only) and forgets its last request.
func endFaults(store string) error {
	for _, name := range []string{control.FaultRequestFile, control.FaultAckFile} {
		if err := os.Remove(filepath.Join(store, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	st, err := ReadFaultStatus(store)
	if err != nil || !st.Active {
		return err
	}
	st.Active, st.ClearedAt = false, time.Now().UTC().Format(time.RFC3339Nano)
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(store, control.FaultStatusFile, append(b, '\n'))
}
