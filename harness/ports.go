package harness

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// portClashAttempts bounds how often a container is created or started again after the engine
// could not publish one of its ports. The engine picks a free host port from the range the
// kernel also gives outgoing connections, and on a busy machine one of those can take the port
// between the pick and the bind; the next attempt gets another port.
const portClashAttempts = 5

// portClash reports whether err is the engine failing to publish a port because the host port
// it chose is taken.
func portClash(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "address already in use") || strings.Contains(msg, "port is already allocated")
}

// publish makes req publish exactly ports, on an ephemeral host port each, reachable from this
// machine only (127.0.0.1; a remote engine's loopback is not ours, so there every IPv4 interface
// of its machine). A request that names no port would publish every port its image exposes, on
// every interface, so nodes and services name theirs even though only the proxies' are used.
// A single IPv4 binding also keeps "the" mapped port unambiguous: Docker 20.10 may give the IPv4
// and IPv6 bindings of one port different host ports. It keeps req's own HostConfigModifier.
func (c *Cluster) publish(req *testcontainers.ContainerRequest, ports ...string) {
	bind := netip.MustParseAddr("127.0.0.1")
	if c.eng.remote {
		bind = netip.IPv4Unspecified()
	}
	req.ExposedPorts = append(req.ExposedPorts, ports...)
	exposed := req.ExposedPorts
	inner := req.HostConfigModifier
	req.HostConfigModifier = func(hc *container.HostConfig) {
		if inner != nil {
			inner(hc)
		}
		hc.PortBindings = network.PortMap{}
		for _, e := range exposed {
			hc.PortBindings[network.MustParsePort(e)] = []network.PortBinding{{HostIP: bind}}
		}
	}
}

// runContainer creates the container req asks for, and starts it if start, trying again while
// the engine cannot publish its ports (retryPortClash). A failed attempt's container is removed
// so that the next can take its name. What the last attempt returned is returned: a container
// that failed to start is kept for its log.
func (c *Cluster) runContainer(ctx context.Context, req testcontainers.ContainerRequest, start bool) (ctr testcontainers.Container, err error) {
	err = c.retryPortClash(req.Name, func() error {
		ctr, err = testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
			ContainerRequest: req, Started: start, Logger: tcLogger{c.log},
		})
		return err
	}, func() error {
		_, err := c.eng.ContainerRemove(ctx, req.Name, client.ContainerRemoveOptions{Force: true})
		return err
	})
	return ctr, err
}

// startContainer starts the existing container id (a node or service stopped by a fault), again
// while the engine cannot publish its ports (retryPortClash).
func (c *Cluster) startContainer(ctx context.Context, id string) error {
	return c.retryPortClash(id, func() error {
		_, err := c.eng.ContainerStart(ctx, id, client.ContainerStartOptions{})
		return err
	}, nil)
}

// retryPortClash runs attempt, again (up to portClashAttempts times in all) while it fails because
// the engine could not publish a port on the host port it chose; reset, when set, clears what a
// failed attempt left before the next.
func (c *Cluster) retryPortClash(what string, attempt, reset func() error) error {
	for n := 1; ; n++ {
		err := attempt()
		if !portClash(err) || n == portClashAttempts {
			return err
		}
		c.log.Warn("a host port the engine chose was taken; trying again", "container", what, "attempt", n, "err", err)
		if reset != nil {
			if rerr := reset(); rerr != nil {
				return fmt.Errorf("%w; clearing the attempt to try again: %w", err, rerr)
			}
		}
	}
}
