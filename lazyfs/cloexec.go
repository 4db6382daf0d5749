package lazyfs

import (
	"os"
	"strconv"
	"syscall"
)

// fuseCloseOnExec marks every descriptor of /dev/fuse that this process holds close-on-exec.
// go-fuse's direct mount leaves its descriptor inheritable, so the application the daemon
// starts would hold the FUSE connection too. When the node is then SIGKILLed, the application's
// threads wait, unkillably, for answers to requests the dead daemon had taken, and the
// connection is not aborted while any process holds a descriptor of it: the container's init
// stays a zombie and the engine cannot remove the container.
func fuseCloseOnExec() error {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == "/dev/fuse" {
			syscall.CloseOnExec(fd)
		}
	}
	return nil
}
