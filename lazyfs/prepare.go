package lazyfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/verity-kafka/verity/lazyfs/control"
	"golang.org/x/sys/unix"
)

// Drop is what Prepare did to a store: after a power cut (Cut), the files and bytes live held
// that durable did not.
type Drop struct {
	Cut bool
	// Files is how many files in live were missing from durable or differed from their copy.
	Files int64
	// Bytes is how many bytes of those files were not the same bytes at the same offset in
	// durable, counting those past the end of the durable copy.
	Bytes int64
}

// Cut marks store for a power cut: the next Prepare drops what is not durable. The mark is
// written atomically and durably, so a node killed right after sees it.
func Cut(store string) error {
	if err := writeAtomic(store, cutMark, []byte(time.Now().UTC().Format(time.RFC3339)+"\n")); err != nil {
		return fmt.Errorf("marking %s for a power cut: %w", store, err)
	}
	return nil
}

// Prepare readies store for a mount; run it before Mount, with nothing mounted over the store.
// It makes live/ and durable/ (owned by uid and gid) if they are missing. If Cut marked the store
// it makes live an exact copy of durable, as a power cut would leave the disk, writes what was
// dropped to last-drop.json and removes the mark. Otherwise the machine kept its page cache (a
// first start, a clean stop, a killed process): it makes durable an exact copy of live.
func Prepare(store string, uid, gid int) (Drop, error) {
	live, durable := filepath.Join(store, liveDir), filepath.Join(store, durableDir)
	for _, d := range []string{live, durable} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return Drop{}, fmt.Errorf("preparing the lazy filesystem store: %w", err)
		}
		if err := os.Lchown(d, uid, gid); err != nil {
			return Drop{}, fmt.Errorf("preparing the lazy filesystem store: %w", err)
		}
	}
	// The daemon before this one is gone (one daemon per store): a request signalled to its pid
	// would reach nothing, or, as its node's container starts again, this daemon before it
	// listens. Requesters wait while the store says a daemon is starting (awaitDaemon), from
	// before the copies below, which take longest.
	if err := writeAtomic(store, daemonPid, []byte(daemonStarting+"\n")); err != nil {
		return Drop{}, fmt.Errorf("preparing the lazy filesystem store: %w", err)
	}
	mark := filepath.Join(store, cutMark)
	if _, err := os.Lstat(mark); errors.Is(err, fs.ErrNotExist) {
		m := mirror{}
		if err := m.dir(live, durable); err != nil {
			return Drop{}, fmt.Errorf("copying live to durable in %s: %w", store, err)
		}
		return Drop{}, nil
	} else if err != nil {
		return Drop{}, fmt.Errorf("looking for the power cut mark: %w", err)
	}
	m := mirror{count: true}
	if err := m.dir(durable, live); err != nil {
		return Drop{}, fmt.Errorf("dropping what was not durable in %s: %w", store, err)
	}
	m.drop.Cut = true
	return m.drop, recordDrop(store, m.drop)
}

// recordDrop writes last-drop.json, then removes the mark: a node that finds no mark has the
// figures of its own start.
func recordDrop(store string, d Drop) error {
	rec, err := json.Marshal(control.Drop{Files: d.Files, Bytes: d.Bytes, At: time.Now().UTC().Format(time.RFC3339)})
	if err != nil {
		return err
	}
	if err := writeAtomic(store, dropFile, append(rec, '\n')); err != nil {
		return fmt.Errorf("recording the power cut's drop: %w", err)
	}
	if err := os.Remove(filepath.Join(store, cutMark)); err != nil {
		return fmt.Errorf("removing the power cut mark: %w", err)
	}
	if err := syncDir(store); err != nil {
		return fmt.Errorf("removing the power cut mark: %w", err)
	}
	return nil
}

// writeAtomic replaces dir/name with data through a temporary file, durably.
func writeAtomic(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(dir)
}

// mirror makes a tree an exact copy of another: the names, contents, sizes, modes, owners and
// times of its regular files and directories. With count it compares contents and counts what
// the copy loses; without, it copies only files whose size or modification time differ.
type mirror struct {
	count bool
	drop  Drop
}

// dir mirrors directory src onto the existing directory dst.
func (m *mirror) dir(src, dst string) error {
	names, err := readNames(src)
	if err != nil {
		return err
	}
	old, err := readNames(dst)
	if err != nil {
		return err
	}
	for name := range old {
		if !names[name] {
			if err := m.remove(filepath.Join(dst, name)); err != nil {
				return err
			}
		}
	}
	for name := range names {
		if err := m.entry(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return copyMeta(src, dst)
}

func readNames(dir string) (map[string]bool, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(ents))
	for _, e := range ents {
		names[e.Name()] = true
	}
	return names, nil
}

func (m *mirror) entry(src, dst string) error {
	sst, err := os.Lstat(src)
	if err != nil {
		return err
	}
	dstSt, err := os.Lstat(dst)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if dstSt != nil && dstSt.Mode().Type() != sst.Mode().Type() {
		if err := m.remove(dst); err != nil {
			return err
		}
		dstSt = nil
	}
	switch {
	case sst.IsDir():
		if dstSt == nil {
			if err := os.Mkdir(dst, 0o700); err != nil {
				return err
			}
		}
		return m.dir(src, dst)
	case sst.Mode().IsRegular():
		if err := m.file(src, dst, sst, dstSt); err != nil {
			return fmt.Errorf("copying %s: %w", src, err)
		}
	default:
		return nil // the mount makes no links, fifos, sockets or devices
	}
	return copyMeta(src, dst)
}

// remove removes dst and all under it, counting its files as dropped.
func (m *mirror) remove(dst string) error {
	if m.count {
		err := filepath.WalkDir(dst, func(_ string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			m.drop.Files++
			if info.Mode().IsRegular() {
				m.drop.Bytes += info.Size()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return os.RemoveAll(dst)
}

// file mirrors regular file src onto dst (dstSt nil: there is none yet).
func (m *mirror) file(src, dst string, sst, dstSt fs.FileInfo) error {
	if dstSt == nil {
		return copyWhole(src, dst)
	}
	if m.count {
		return m.patch(src, dst, sst.Size(), dstSt.Size())
	}
	if sst.Size() != dstSt.Size() || !sst.ModTime().Equal(dstSt.ModTime()) {
		return copyWhole(src, dst)
	}
	return nil
}

func copyWhole(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// patch rewrites the chunks of dst that differ from src and gives it src's size, counting the
// differing bytes, and dst's bytes past src's end, as dropped.
func (m *mirror) patch(src, dst string, srcSize, dstSize int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer out.Close()
	const chunk = 1 << 20
	a, b := make([]byte, chunk), make([]byte, chunk)
	var differ int64
	for off := int64(0); off < min(srcSize, dstSize); off += chunk {
		n := int(min(chunk, min(srcSize, dstSize)-off))
		if _, err := in.ReadAt(a[:n], off); err != nil {
			return err
		}
		if _, err := out.ReadAt(b[:n], off); err != nil {
			return err
		}
		if bytes.Equal(a[:n], b[:n]) {
			continue
		}
		differ += countDiff(a[:n], b[:n])
		if _, err := out.WriteAt(a[:n], off); err != nil {
			return err
		}
	}
	if dstSize > srcSize {
		differ += dstSize - srcSize
	}
	if err := out.Truncate(srcSize); err != nil {
		return err
	}
	if dstSize < srcSize {
		if err := copyRange(int(out.Fd()), int(in.Fd()), dstSize, srcSize); err != nil {
			return err
		}
	}
	if differ > 0 || dstSize != srcSize {
		m.drop.Files++
		m.drop.Bytes += differ
	}
	return out.Close()
}

func countDiff(a, b []byte) int64 {
	var n int64
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// copyMeta gives dst the owner, mode and times of src.
func copyMeta(src, dst string) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(src, &st); err != nil {
		return err
	}
	if err := os.Lchown(dst, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	if err := syscall.Chmod(dst, st.Mode&0o7777); err != nil {
		return err
	}
	ts := []unix.Timespec{unix.Timespec(st.Atim), unix.Timespec(st.Mtim)}
	return unix.UtimesNanoAt(unix.AT_FDCWD, dst, ts, unix.AT_SYMLINK_NOFOLLOW)
}
