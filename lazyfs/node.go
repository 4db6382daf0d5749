package lazyfs

import (
	"context"
	"io/fs"
	"math"
	"path"
	"path/filepath"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is go-fuse's loopback node over live, recording what it changes.
type node struct {
	gofs.LoopbackNode
	lz *lazyFS
}

// root returns the root node of live, every node below it made by newNode.
func (l *lazyFS) root() (gofs.InodeEmbedder, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(l.live, &st); err != nil {
		return nil, err
	}
	lr := &gofs.LoopbackRoot{Path: l.live, Dev: st.Dev, NewNode: l.newNode}
	lr.RootNode = l.newNode(lr, nil, "", &st)
	return lr.RootNode, nil
}

func (l *lazyFS) newNode(root *gofs.LoopbackRoot, _ *gofs.Inode, _ string, _ *syscall.Stat_t) gofs.InodeEmbedder {
	return &node{LoopbackNode: gofs.LoopbackNode{RootData: root}, lz: l}
}

// livePath is in's path relative to live; false once it has no name.
func livePath(in *gofs.Inode) (string, bool) {
	root := in.Root()
	p := ""
	for in != root {
		name, parent := in.Parent()
		if parent == nil {
			return "", false
		}
		p = path.Join(name, p)
		in = parent
	}
	return p, true
}

func (n *node) childPath(name string) (string, bool) {
	p, ok := livePath(n.EmbeddedInode())
	return path.Join(p, name), ok
}

// state returns the state of the file n is; a file with no name left gets one of its own.
func (n *node) state() *fileState {
	l := n.lz
	l.mu.Lock()
	defer l.mu.Unlock()
	ino := n.StableAttr().Ino
	if s := l.files[ino]; s != nil {
		return s
	}
	p, ok := livePath(n.EmbeddedInode())
	if !ok {
		return newFileState()
	}
	return l.stateFor(ino, p)
}

// readWrite opens write-only files read-write: a file's fsync reads live through its handle.
// The kernel has checked the caller's access already and keeps it for the caller's descriptor.
func readWrite(flags uint32) uint32 {
	if flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		return flags&^syscall.O_ACCMODE | syscall.O_RDWR
	}
	return flags
}

func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, readWrite(flags))
	if errno != 0 {
		return nil, 0, errno
	}
	s := n.state()
	if flags&syscall.O_TRUNC != 0 {
		s.truncated(0)
	}
	f, errno := n.lz.wrap(n.EmbeddedInode(), s, fh)
	return f, fl, errno
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	p, ok := n.childPath(name)
	if !ok {
		return nil, nil, 0, syscall.ENOENT
	}
	l := n.lz
	if errno := l.injectCreate(p); errno != 0 {
		return nil, nil, 0, errno
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ch, fh, fl, errno := n.LoopbackNode.Create(ctx, name, readWrite(flags), mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	s := newFileState()
	l.files[ch.StableAttr().Ino] = s
	l.record(op{kind: opCreate, path: p, file: s, mode: out.Mode & 0o7777, uid: int(out.Uid), gid: int(out.Gid)})
	f, errno := l.wrap(ch, s, fh)
	return ch, f, fl, errno
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	p, ok := n.childPath(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	l := n.lz
	l.mu.Lock()
	defer l.mu.Unlock()
	ch, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno == 0 {
		l.record(op{kind: opMkdir, path: p, mode: out.Mode & 0o7777, uid: int(out.Uid), gid: int(out.Gid)})
	}
	return ch, errno
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	p, ok := n.childPath(name)
	if !ok {
		return syscall.ENOENT
	}
	l := n.lz
	l.mu.Lock()
	defer l.mu.Unlock()
	errno := n.LoopbackNode.Rmdir(ctx, name)
	if errno == 0 {
		l.record(op{kind: opRmdir, path: p})
	}
	return errno
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	p, ok := n.childPath(name)
	if !ok {
		return syscall.ENOENT
	}
	l := n.lz
	l.mu.Lock()
	defer l.mu.Unlock()
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(l.live, p), &st); err != nil {
		return gofs.ToErrno(err)
	}
	s := l.stateFor(st.Ino, p)
	if errno := n.LoopbackNode.Unlink(ctx, name); errno != 0 {
		return errno
	}
	delete(l.files, st.Ino)
	l.record(op{kind: opUnlink, path: p, file: s})
	return 0
}

func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	// RENAME_EXCHANGE and RENAME_WHITEOUT would need journal entries of their own.
	if flags&^unix.RENAME_NOREPLACE != 0 {
		return syscall.ENOTSUP
	}
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	from, ok1 := n.childPath(name)
	to, ok2 := np.childPath(newName)
	if !ok1 || !ok2 {
		return syscall.ENOENT
	}
	l := n.lz
	l.mu.Lock()
	defer l.mu.Unlock()
	o, victim, errno := l.renameEntry(from, to)
	if errno != 0 {
		return errno
	}
	if errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags); errno != 0 {
		return errno
	}
	if o.file != nil && o.file == o.victim {
		return 0 // both names were one file: nothing changed
	}
	if o.victim != nil {
		delete(l.files, victim)
	}
	l.record(o)
	return 0
}

// renameEntry is the journal entry of renaming live's from to to, and the inode number of the
// file it would replace. A directory's files are tracked first: their durable copies stay under
// from until the rename is committed. Holds l.mu.
func (l *lazyFS) renameEntry(from, to string) (op, uint64, syscall.Errno) {
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(l.live, from), &st); err != nil {
		return op{}, 0, gofs.ToErrno(err)
	}
	o := op{kind: opRename, path: from, to: to, mode: st.Mode & 0o7777, uid: int(st.Uid), gid: int(st.Gid)}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		if err := l.trackTree(from); err != nil {
			return op{}, 0, gofs.ToErrno(err)
		}
	} else {
		o.file = l.stateFor(st.Ino, from)
	}
	var dst syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(l.live, to), &dst); err == nil && dst.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		o.victim = l.stateFor(dst.Ino, to)
	}
	return o, dst.Ino, 0
}

// trackTree tracks every file under live's directory dir. Holds l.mu.
func (l *lazyFS) trackTree(dir string) error {
	return filepath.WalkDir(filepath.Join(l.live, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		rel, err := filepath.Rel(l.live, p)
		if err != nil {
			return err
		}
		l.stateFor(st.Ino, rel)
		return nil
	})
}

func (n *node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if errno := n.LoopbackNode.Setattr(ctx, f, in, out); errno != 0 {
		return errno
	}
	if sz, ok := in.GetSize(); ok {
		if fh, ok := f.(*file); ok {
			fh.st.truncated(int64(sz))
		} else {
			n.state().truncated(int64(sz))
		}
	}
	return 0
}

func (n *node) CopyFileRange(ctx context.Context, fhIn gofs.FileHandle, offIn uint64, out *gofs.Inode, fhOut gofs.FileHandle, offOut, length, flags uint64) (uint32, syscall.Errno) {
	in, ok1 := fhIn.(*file)
	dst, ok2 := fhOut.(*file)
	if !ok1 || !ok2 {
		return 0, syscall.ENOTSUP
	}
	c, errno := n.LoopbackNode.CopyFileRange(ctx, in.LoopbackFile, offIn, out, dst.LoopbackFile, offOut, length, flags)
	dst.st.wrote(int64(offOut), int64(c))
	return c, errno
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	ds, ok := fh.(dirStream)
	if !ok {
		// Without its own Fsyncdir a directory's fsync would not commit the journal.
		return nil, 0, syscall.EIO
	}
	return &dir{dirStream: ds, lz: n.lz, in: n.EmbeddedInode()}, fl, 0
}

// Statfs reports a full disk (faults.go) as having no more room than it has.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	if errno := n.LoopbackNode.Statfs(ctx, out); errno != 0 {
		return errno
	}
	n.lz.statfsFull(out)
	return 0
}

// Names that would need durability rules of their own are refused.

func (n *node) Link(context.Context, gofs.InodeEmbedder, string, *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

func (n *node) Symlink(context.Context, string, string, *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

func (n *node) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

func (n *node) Tmpfile(context.Context, uint32, uint32, *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.ENOTSUP
}

// dirStream is what go-fuse's loopback directory handle does.
type dirStream interface {
	gofs.FileReaddirenter
	gofs.FileSeekdirer
	gofs.FileReleasedirer
	gofs.FileFsyncdirer
}

// dir is an open directory. go-fuse sends FSYNCDIR to the handle's Fsyncdir, never to the node.
type dir struct {
	dirStream
	lz *lazyFS
	in *gofs.Inode
}

// Fsyncdir commits the journal. live itself needs no fsync: only durable survives a power cut.
func (d *dir) Fsyncdir(ctx context.Context, _ uint32) syscall.Errno {
	l := d.lz
	if rules := l.faultsFor(opFsync); rules != nil {
		p, _ := livePath(d.in)
		if errno := l.inject(ctx, rules, p, 0); errno != 0 {
			return errno // before the commit: a failed fsync makes nothing durable
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.commit(l.seq); err != nil {
		l.log.Warn("lazyfs: committing the journal", "err", err)
		return syscall.EIO
	}
	return 0
}

// file is an open live file, recording what it changes.
type file struct {
	*gofs.LoopbackFile
	lz *lazyFS
	st *fileState
	in *gofs.Inode
	fd int // the LoopbackFile's descriptor, open until Release
}

// wrap makes the handle go-fuse's loopback opened a recording one.
func (l *lazyFS) wrap(in *gofs.Inode, s *fileState, fh gofs.FileHandle) (gofs.FileHandle, syscall.Errno) {
	lf, ok := fh.(*gofs.LoopbackFile)
	if !ok {
		// Its writes would not be recorded.
		return nil, syscall.EIO
	}
	fd, _ := lf.PassthroughFd()
	return &file{LoopbackFile: lf, lz: l, st: s, in: in, fd: fd}, 0
}

// PassthroughFd refuses FUSE passthrough: the kernel would then read and write the live file
// itself, and no write would be recorded.
func (f *file) PassthroughFd() (int, bool) { return 0, false }

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if rules := f.lz.faultsFor(opWrite); rules != nil {
		p, _ := livePath(f.in)
		errno, wrote := f.lz.injectWrite(ctx, rules, p, int64(len(data)))
		if errno != 0 {
			return 0, errno // before the write: a failed write changes neither live nor the model
		}
		n, errno := f.write(ctx, data, off)
		wrote(int64(n))
		return n, errno
	}
	return f.write(ctx, data, off)
}

func (f *file) write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n, errno := f.LoopbackFile.Write(ctx, data, off)
	f.st.wrote(off, int64(n))
	return n, errno
}

func (f *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	if rules := f.lz.faultsFor(opWrite); rules != nil {
		var size int64
		for _, d := range data {
			size += int64(len(d))
		}
		p, _ := livePath(f.in)
		errno, wrote := f.lz.injectWrite(ctx, rules, p, size)
		if errno != 0 {
			return 0, errno
		}
		n, errno := f.writev(ctx, data, off)
		wrote(int64(n))
		return n, errno
	}
	return f.writev(ctx, data, off)
}

func (f *file) writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	n, errno := f.LoopbackFile.Writev(ctx, data, off)
	f.st.wrote(off, int64(n))
	return n, errno
}

func (f *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if rules := f.lz.faultsFor(opRead); rules != nil {
		p, _ := livePath(f.in)
		if errno := f.lz.inject(ctx, rules, p, 0); errno != 0 {
			return nil, errno
		}
	}
	return f.LoopbackFile.Read(ctx, buf, off)
}

func (f *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if errno := f.LoopbackFile.Allocate(ctx, off, size, mode); errno != 0 {
		return errno
	}
	switch {
	case mode&(unix.FALLOC_FL_COLLAPSE_RANGE|unix.FALLOC_FL_INSERT_RANGE) != 0:
		f.st.wrote(int64(off), math.MaxInt64-int64(off)) // everything after off moved
	case mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) != 0:
		f.st.wrote(int64(off), int64(size))
	}
	return 0
}

// Fsync serves fsync and fdatasync alike: both must make the size durable.
func (f *file) Fsync(ctx context.Context, _ uint32) syscall.Errno {
	if rules := f.lz.faultsFor(opFsync); rules != nil {
		p, _ := livePath(f.in)
		if errno := f.lz.inject(ctx, rules, p, 0); errno != 0 {
			return errno // before the sync: a failed fsync makes nothing durable
		}
	}
	name := func() (string, bool) { return livePath(f.in) }
	if err := f.lz.syncFile(f.st, name, f.fd); err != nil {
		f.lz.log.Warn("lazyfs: fsync", "err", err)
		return gofs.ToErrno(err)
	}
	return 0
}
