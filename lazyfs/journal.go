package lazyfs

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

type opKind int

const (
	opCreate opKind = iota
	opMkdir
	opRename
	opUnlink
	opRmdir
)

// op is one change of names in live, waiting for a commit to reach durable. Paths are relative
// to the store's live/ and durable/.
type op struct {
	kind     opKind
	seq      uint64
	path, to string
	file     *fileState // the file it creates, renames or unlinks; nil for a directory
	victim   *fileState // the file a rename replaced
	mode     uint32     // permission bits of what it creates or renames
	uid, gid int
}

// record appends o to the journal. Holds l.mu.
func (l *lazyFS) record(o op) {
	l.seq++
	o.seq = l.seq
	if o.file != nil && (o.kind == opCreate || o.kind == opRename) {
		o.file.named = o.seq
	}
	l.pending = append(l.pending, o)
}

// commit applies the journal to durable up to and including entry seq, then fsyncs the durable
// directories it changed. An entry durable cannot follow is skipped and logged: the syscall that
// asked for the commit does not fail for it. Holds l.mu.
func (l *lazyFS) commit(seq uint64) error {
	dirs := map[string]bool{}
	n := 0
	for ; n < len(l.pending) && l.pending[n].seq <= seq; n++ {
		o := l.pending[n]
		if err := l.apply(o, dirs); err != nil {
			l.log.Warn("lazyfs: journal entry not applied to the durable copy", "path", o.path, "to", o.to, "err", err)
		}
	}
	l.pending = slices.Delete(l.pending, 0, n)
	var errs []error
	for d := range dirs {
		errs = append(errs, syncDir(filepath.Join(l.durable, d)))
	}
	return errors.Join(errs...)
}

func (l *lazyFS) apply(o op, dirs map[string]bool) error {
	dirs[filepath.Dir(o.path)] = true
	switch o.kind {
	case opCreate:
		if o.file.durable != "" {
			return nil // its own fsync gave it a copy already
		}
		return l.emptyCopy(o.file, o.path, o)
	case opMkdir:
		if err := l.mkdirs(filepath.Dir(o.path)); err != nil {
			return err
		}
		return mkdir(filepath.Join(l.durable, o.path), o.mode, o.uid, o.gid)
	case opRmdir:
		l.dropUnder(o.path)
		return os.RemoveAll(filepath.Join(l.durable, o.path))
	case opUnlink:
		if o.file.durable != o.path {
			return nil // its copy is elsewhere, or it had none
		}
		l.setDurable(o.file, "")
		return os.Remove(filepath.Join(l.durable, o.path))
	case opRename:
		dirs[filepath.Dir(o.to)] = true
		if o.file == nil {
			return l.renameDir(o.path, o.to)
		}
		return l.renameFile(o)
	}
	return fmt.Errorf("unknown journal entry %d", o.kind)
}

func (l *lazyFS) renameDir(from, to string) error {
	src := filepath.Join(l.durable, from)
	if _, err := os.Lstat(src); err != nil {
		return err
	}
	// live's rename needed the target empty or absent; what durable still holds there is gone.
	l.dropUnder(to)
	if err := os.RemoveAll(filepath.Join(l.durable, to)); err != nil {
		return err
	}
	if err := l.mkdirs(filepath.Dir(to)); err != nil {
		return err
	}
	if err := os.Rename(src, filepath.Join(l.durable, to)); err != nil {
		return err
	}
	l.moveUnder(from, to)
	return nil
}

func (l *lazyFS) renameFile(o op) error {
	switch o.file.durable {
	case o.path:
		if err := l.mkdirs(filepath.Dir(o.to)); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(l.durable, o.path), filepath.Join(l.durable, o.to)); err != nil {
			return err
		}
		l.setDurable(o.file, o.to)
		return nil
	case "":
		return l.emptyCopy(o.file, o.to, o)
	}
	return nil // its copy is under a name this entry does not mention
}

// emptyCopy gives s an empty durable copy at p: its name is durable, its data not yet.
func (l *lazyFS) emptyCopy(s *fileState, p string, o op) error {
	if err := l.mkdirs(filepath.Dir(p)); err != nil {
		return err
	}
	f, err := createCopy(filepath.Join(l.durable, p), o.mode, o.uid, o.gid)
	if err != nil {
		return err
	}
	l.setDurable(s, p)
	return f.Close()
}

// createCopy creates (or empties) the durable file at path with the given mode and owner.
func createCopy(path string, mode uint32, uid, gid int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(f.Chmod(fs.FileMode(mode&0o777)), f.Chown(uid, gid)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// mkdirs makes the durable directory rel and its missing parents, each with the mode and owner
// of its live counterpart (or of its durable parent, when live has none any more).
func (l *lazyFS) mkdirs(rel string) error {
	if rel == "." || rel == "" {
		return nil
	}
	path := filepath.Join(l.durable, rel)
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil
	}
	if err := l.mkdirs(filepath.Dir(rel)); err != nil {
		return err
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(l.live, rel), &st); err != nil {
		if err := syscall.Stat(filepath.Dir(path), &st); err != nil {
			return err
		}
	}
	return mkdir(path, st.Mode&0o7777, int(st.Uid), int(st.Gid))
}

func mkdir(path string, mode uint32, uid, gid int) error {
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return errors.Join(syscall.Chmod(path, mode&0o7777), os.Lchown(path, uid, gid))
}

// syncFile makes durable what file s changed in live since its last sync, reading live through
// liveFd. name gives the file's current live path, for a file that needs a durable name.
func (l *lazyFS) syncFile(s *fileState, name func() (string, bool), liveFd int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	dst, err := l.openCopy(s, name)
	if err != nil || dst == nil {
		return err
	}
	defer dst.Close()
	var st unix.Stat_t
	if err := unix.Fstat(liveFd, &st); err != nil {
		return fmt.Errorf("reading the size of the live file: %w", err)
	}
	if err := resize(dst, s.trunc, st.Size); err != nil {
		return err
	}
	for _, r := range s.dirty {
		if err := copyRange(int(dst.Fd()), liveFd, r.start, min(r.end, st.Size)); err != nil {
			return fmt.Errorf("copying bytes %d-%d to the durable copy: %w", r.start, r.end, err)
		}
	}
	if err := dst.Sync(); err != nil {
		return fmt.Errorf("syncing the durable copy: %w", err)
	}
	s.dirty, s.trunc = nil, -1
	return nil
}

// resize gives the durable copy live's size, first cutting it to trunc (if set) so that bytes a
// shrink removed do not come back when the file grew again.
func resize(dst *os.File, trunc, size int64) error {
	if trunc >= 0 && trunc < size {
		if err := dst.Truncate(trunc); err != nil {
			return fmt.Errorf("truncating the durable copy: %w", err)
		}
	}
	if err := dst.Truncate(size); err != nil {
		return fmt.Errorf("truncating the durable copy: %w", err)
	}
	return nil
}

// openCopy opens s's durable copy for writing. A file without one first commits the journal up to
// the entry that named it; if that gave it none (it has no name durable can follow), it gets a
// copy at its current live path holding all its data. nil: the file has no name left at all.
func (l *lazyFS) openCopy(s *fileState, name func() (string, bool)) (*os.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.durable == "" && s.named > 0 {
		if err := l.commit(s.named); err != nil {
			return nil, fmt.Errorf("committing the journal: %w", err)
		}
	}
	if s.durable != "" {
		f, err := os.OpenFile(filepath.Join(l.durable, s.durable), os.O_WRONLY, 0)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
		l.log.Warn("lazyfs: durable copy missing, making it again", "path", s.durable)
		l.setDurable(s, "")
	}
	p, ok := name()
	if !ok {
		s.dirty, s.trunc = nil, -1
		return nil, nil
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(l.live, p), &st); err != nil {
		return nil, err
	}
	if err := l.mkdirs(filepath.Dir(p)); err != nil {
		return nil, err
	}
	f, err := createCopy(filepath.Join(l.durable, p), st.Mode, int(st.Uid), int(st.Gid))
	if err != nil {
		return nil, err
	}
	l.setDurable(s, p)
	s.dirty = spans{{0, math.MaxInt64}}
	return f, syncDir(filepath.Dir(filepath.Join(l.durable, p)))
}

// copyRange copies bytes [off, end) from src to the same offsets in dst, stopping early where src
// ends.
func copyRange(dst, src int, off, end int64) error {
	for off < end {
		in, out := off, off
		n, err := unix.CopyFileRange(src, &in, dst, &out, int(min(end-off, 1<<30)), 0)
		if err != nil {
			return copyRangeSlow(dst, src, off, end)
		}
		if n == 0 {
			return nil
		}
		off += int64(n)
	}
	return nil
}

// copyRangeSlow is copyRange where the kernel cannot copy between the two files.
func copyRangeSlow(dst, src int, off, end int64) error {
	buf := make([]byte, min(end-off, 1<<20))
	for off < end {
		n, err := unix.Pread(src, buf[:min(end-off, int64(len(buf)))], off)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if _, err := unix.Pwrite(dst, buf[:n], off); err != nil {
			return err
		}
		off += int64(n)
	}
	return nil
}

// syncDir fsyncs a directory; one that no longer exists needs nothing.
func syncDir(path string) error {
	d, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
