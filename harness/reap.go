package harness

import (
	"context"
	"errors"
	"fmt"

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

func reap(ctx context.Context, e *engine, runID string) (Removed, error) {
	var rm Removed
	label := Label
	if runID != "" {
		label += "=" + runID
	}
	f := make(client.Filters).Add("label", label)
	var errs []error

	cs, err := e.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return rm, fmt.Errorf("listing containers labelled %s: %w", label, err)
	}
	for _, ctr := range cs.Items {
		_, err := e.ContainerRemove(ctx, ctr.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("removing container %v: %w", ctr.Names, err))
			continue
		}
		rm.Containers++
	}
	ns, err := e.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return rm, errors.Join(append(errs, fmt.Errorf("listing networks labelled %s: %w", label, err))...)
	}
	for _, n := range ns.Items {
		if _, err := e.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("removing network %s: %w", n.Name, err))
			continue
		}
		rm.Networks++
	}
	vs, err := e.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return rm, errors.Join(append(errs, fmt.Errorf("listing volumes labelled %s: %w", label, err))...)
	}
	for _, v := range vs.Items {
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
	byRun, err := LeftoversByRun(ctx)
	if err != nil {
		return Removed{}, err
	}
	var n Removed
	for id, r := range byRun {
		if runID == "" || id == runID {
			n.Containers += r.Containers
			n.Networks += r.Networks
			n.Volumes += r.Volumes
		}
	}
	return n, nil
}

// LeftoversByRun counts what is labelled io.verity.run, by run ID, without removing it.
func LeftoversByRun(ctx context.Context) (map[string]Removed, error) {
	e, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	f := make(client.Filters).Add("label", Label)
	byRun := map[string]Removed{}
	cs, err := e.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	for _, c := range cs.Items {
		r := byRun[c.Labels[Label]]
		r.Containers++
		byRun[c.Labels[Label]] = r
	}
	ns, err := e.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing networks: %w", err)
	}
	for _, n := range ns.Items {
		r := byRun[n.Labels[Label]]
		r.Networks++
		byRun[n.Labels[Label]] = r
	}
	vs, err := e.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing volumes: %w", err)
	}
	for _, v := range vs.Items {
		r := byRun[v.Labels[Label]]
		r.Volumes++
		byRun[v.Labels[Label]] = r
	}
	return byRun, nil
}

func isGone(err error) bool { return cerrdefs.IsNotFound(err) }
