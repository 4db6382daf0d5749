package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Removed counts what a reap removed.
type Removed struct{ Containers, Networks, Volumes int }

// Reap removes every container, network and volume labelled io.verity.run=runID, or of every
// run when runID is empty: what killed runs left behind.
func Reap(ctx context.Context, runID string) (Removed, error) {
	e, err := connect(ctx)
	if err != nil {
		return Removed{}, err
	}
	defer e.Close()
	return reap(ctx, e, runID)
}

// labelledThing is one container, network or volume labelled io.verity.run.
type labelledThing struct{ ID, Name, Run string }

// labelled is what carries io.verity.run=runID (any run if empty).
type labelled struct{ containers, networks, volumes []labelledThing }

func listLabelled(ctx context.Context, e *engine, runID string) (labelled, error) {
	var l labelled
	label := Label
	if runID != "" {
		label += "=" + runID
	}
	f := make(client.Filters).Add("label", label)
	cs, err := e.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return l, fmt.Errorf("listing containers labelled %s: %w", label, err)
	}
	for _, c := range cs.Items {
		l.containers = append(l.containers, labelledThing{c.ID, strings.Join(c.Names, ","), c.Labels[Label]})
	}
	ns, err := e.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return l, fmt.Errorf("listing networks labelled %s: %w", label, err)
	}
	for _, n := range ns.Items {
		l.networks = append(l.networks, labelledThing{n.ID, n.Name, n.Labels[Label]})
	}
	vs, err := e.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return l, fmt.Errorf("listing volumes labelled %s: %w", label, err)
	}
	for _, v := range vs.Items {
		l.volumes = append(l.volumes, labelledThing{v.Name, v.Name, v.Labels[Label]})
	}
	return l, nil
}

func reap(ctx context.Context, e *engine, runID string) (Removed, error) {
	var rm Removed
	l, err := listLabelled(ctx, e, runID)
	if err != nil {
		return rm, err
	}
	var errs []error
	for _, c := range l.containers {
		_, err := e.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("removing container %s: %w", c.Name, err))
			continue
		}
		rm.Containers++
	}
	for _, n := range l.networks {
		if _, err := e.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("removing network %s: %w", n.Name, err))
			continue
		}
		rm.Networks++
	}
	for _, v := range l.volumes {
		if _, err := e.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("removing volume %s: %w", v.Name, err))
			continue
		}
		rm.Volumes++
	}
	return rm, errors.Join(errs...)
}

// Leftovers counts what is labelled for runID (every run if empty) without removing it.
func Leftovers(ctx context.Context, runID string) (Removed, error) {
	e, err := connect(ctx)
	if err != nil {
		return Removed{}, err
	}
	defer e.Close()
	l, err := listLabelled(ctx, e, runID)
	return Removed{len(l.containers), len(l.networks), len(l.volumes)}, err
}

// LeftoversByRun counts what is labelled io.verity.run, by run ID, without removing it.
func LeftoversByRun(ctx context.Context) (map[string]Removed, error) {
	e, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	l, err := listLabelled(ctx, e, "")
	if err != nil {
		return nil, err
	}
	byRun := map[string]Removed{}
	for _, c := range l.containers {
		r := byRun[c.Run]
		r.Containers++
		byRun[c.Run] = r
	}
	for _, n := range l.networks {
		r := byRun[n.Run]
		r.Networks++
		byRun[n.Run] = r
	}
	for _, v := range l.volumes {
		r := byRun[v.Run]
		r.Volumes++
		byRun[v.Run] = r
	}
	return byRun, nil
}

func isGone(err error) bool { return cerrdefs.IsNotFound(err) }
