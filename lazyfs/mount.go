package lazyfs

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Options tune a mount.
type Options struct {
	// Logger gets what the filesystem could not do on durable (a journal entry it skipped, a
	// failed fsync); nil discards it.
	Logger *slog.Logger
	// Debug logs every FUSE request.
	Debug bool
}

// Server is a mounted lazy filesystem.
type Server struct {
	lz    *lazyFS
	srv   *fuse.Server
	store string
	stop  func() bool
	mu    sync.Mutex // one unmount at a time: go-fuse's Unmount is not safe to call concurrently

	statusMu   sync.Mutex    // one write of the fault status at a time
	unmounted  chan struct{} // closed once unmounted, ending the status writer
	unmountEnd sync.Once
	writerDone chan struct{} // closed once the status writer has ended
}

// Mount shows store's live directory at mountpoint, until Unmount or until ctx is done. Run
// Prepare on store first: the filesystem starts from live and durable being equal. Other users
// may use the mount (the daemon runs as root, the application as another user, and what they
// create is theirs).
func Mount(ctx context.Context, mountpoint, store string, opts Options) (*Server, error) {
	l := newLazyFS(store, opts.Logger)
	root, err := l.root()
	if err != nil {
		return nil, fmt.Errorf("opening the live directory of %s: %w", store, err)
	}
	sec := time.Second
	srv, err := gofs.Mount(mountpoint, root, &gofs.Options{
		EntryTimeout: &sec,
		AttrTimeout:  &sec,
		MountOptions: fuse.MountOptions{
			AllowOther:  true,
			DirectMount: os.Geteuid() == 0,
			FsName:      "verity-lazyfs",
			Name:        "lazyfs",
			Debug:       opts.Debug,
			// The kernel checks permissions as a disk's filesystem would; the daemon, root,
			// would let anyone do anything.
			Options: []string{"default_permissions"},
			// Passthrough would let the kernel write live without telling us.
			DisabledCapabilities: fuse.CAP_PASSTHROUGH,
			// With extended attributes the kernel asks for security.capability before every
			// write, a second round trip; the model keeps no xattrs, and Kafka sets none.
			DisableXAttrs: true,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("mounting %s over %s: %w", mountpoint, l.live, err)
	}
	if err := fuseCloseOnExec(); err != nil {
		_ = srv.Unmount()
		return nil, fmt.Errorf("keeping the FUSE connection from the application: %w", err)
	}
	s := &Server{lz: l, srv: srv, store: store, unmounted: make(chan struct{}), writerDone: make(chan struct{})}
	go func() {
		defer close(s.writerDone)
		s.writeStatuses(s.unmounted)
	}()
	s.stop = context.AfterFunc(ctx, func() { _ = s.unmount() })
	return s, nil
}

// Unmount unmounts the filesystem; it fails while files on it are open. Calling it again after
// it succeeded does nothing.
func (s *Server) Unmount() error {
	s.stop()
	return s.unmount()
}

func (s *Server) unmount() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.srv.Unmount(); err != nil {
		return fmt.Errorf("unmounting the lazy filesystem: %w", err)
	}
	// The status is final once Unmount returns: a store removed next is not written again.
	s.unmountEnd.Do(func() { close(s.unmounted) })
	<-s.writerDone
	return nil
}
