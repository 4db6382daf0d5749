package harness_test

import (
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
)

// remoteChild marks the process TestRemoteEngine starts: testcontainers reads its engine
// settings once per process, so the cluster on the "remote" engine runs in a fresh one.
const remoteChild = "VERITY_REMOTE_ENGINE_CHILD"

// TestRemoteEngine runs a cluster through an engine reached as DOCKER_HOST=tcp://IP:PORT, IP
// being this machine's first non-loopback address: a TCP forwarder to the local engine's socket
// stands for a remote engine (docker-in-docker, a shared CI engine). Clients must reach the
// brokers at IP, not 127.0.0.1, and everything must be removed as on a local engine.
func TestRemoteEngine(t *testing.T) {
	if os.Getenv(remoteChild) != "" {
		onRemoteEngine(t)
		return
	}
	harnesstest.RequireDocker(t)
	ip := outwardIPv4(t)
	fw, conns := forwardToSocket(t, ip, "/var/run/docker.sock")
	ctx := withTimeout(t, 4*time.Minute)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRemoteEngine$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), remoteChild+"=1", "DOCKER_HOST=tcp://"+fw, "TESTCONTAINERS_HOST_OVERRIDE=")
	out, err := cmd.CombinedOutput()
	t.Logf("child output:\n%s", out)
	require.NoError(t, err, "the cluster on the engine at tcp://%s", fw)
	require.Contains(t, string(out), "bootstrap "+ip+":", "clients reach the brokers at the engine's host")
	require.Positive(t, conns.Load(), "the child reached the engine through the forwarder")
	left, err := harness.Leftovers(ctx, "t-remote")
	require.NoError(t, err)
	require.Zero(t, left)
}

// onRemoteEngine is the child: a one-node cluster, ten acknowledged records read back.
func onRemoteEngine(t *testing.T) {
	host, remote, err := harness.EngineHost()
	require.NoError(t, err)
	require.True(t, remote, "DOCKER_HOST=%s is taken for a remote engine at %s", os.Getenv("DOCKER_HOST"), host)
	c := harnesstest.Start(t, harness.Spec{Nodes: 1, RunID: "t-remote"})
	ctx := withTimeout(t, 3*time.Minute)
	for _, b := range c.Bootstrap() {
		t.Logf("bootstrap %s", b)
		require.True(t, strings.HasPrefix(b, host+":"), "bootstrap %s is on the engine's host %s", b, host)
	}
	require.NoError(t, c.CreateTopic(ctx, harness.TopicSpec{Name: "remote", Partitions: 1, RF: 1}))
	prod := newProducer(t, c, "remote", 0, sarama.WaitForAll)
	acks := prod.mustSend(10)
	mustReadBack(t, ctx, c, "remote", 0, acks)
}

// outwardIPv4 is the first IPv4 address of an interface that is up and not the loopback.
func outwardIPv4(t *testing.T) string {
	t.Helper()
	ifs, err := net.Interfaces()
	require.NoError(t, err)
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := i.Addrs()
		require.NoError(t, err)
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				return n.IP.String()
			}
		}
	}
	t.Fatal("this machine has no non-loopback IPv4 address to stand for a remote engine's host")
	return ""
}

// forwardToSocket listens on ip and forwards every connection to the unix socket sock, until the
// test ends. It returns the listening address and a count of connections.
func forwardToSocket(t *testing.T, ip, sock string) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	require.NoError(t, err)
	var conns atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			wg.Go(func() {
				defer in.Close()
				up, err := net.Dial("unix", sock)
				if err != nil {
					return
				}
				defer up.Close()
				done := make(chan struct{}, 2)
				pipe := func(dst, src net.Conn) {
					_, _ = io.Copy(dst, src)
					if c, ok := dst.(interface{ CloseWrite() error }); ok {
						_ = c.CloseWrite()
					}
					done <- struct{}{}
				}
				go pipe(up, in)
				go pipe(in, up)
				<-done
				<-done
			})
		}
	})
	return ln.Addr().String(), &conns
}
