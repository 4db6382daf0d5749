package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Removed counts what a reap removed.
type Removed struct{ Containers, Networks, Volumes int }

// Any reports whether anything was counted.
func (r Removed) Any() bool { return r != Removed{} }

// Add adds o's counts to r's.
func (r *Removed) Add(o Removed) {
	r.Containers += o.Containers
	r.Networks += o.Networks
	r.Volumes += o.Volumes
}

// ReapOptions choose what Reap removes.
type ReapOptions struct {
	// Run limits the reap to one run id; empty: every run.
	Run string
	// All removes runs whose process may still be running too: on this host, a process with
	// the owner's pid exists; on another host (a shared or remote engine), nothing can be told.
	All bool
	// DryRun removes nothing and reports what would be removed.
	DryRun bool
}

// RunLeft is one run's leftovers and what Reap did with them.
type RunLeft struct {
	ID    string
	Owner string // "host/pid", or "" when the resources do not say (older runs)
	// Alive says why the run was kept: its owner still runs here, or runs on another host;
	// empty when the owner is gone or not recorded.
	Alive string
	Found Removed
	// Removed is what was removed: Found unless the run was kept or the reap was a dry run.
	Removed Removed
}

// Kept reports whether Reap left the run alone because its process may still run.
func (r RunLeft) Kept() bool { return r.Alive != "" }

// Reap removes what runs left behind: every container, network and volume labelled
// io.verity.run (of opts.Run only, when set) whose run's process is gone. It reports every run
// it found, in run id order.
func Reap(ctx context.Context, opts ReapOptions) ([]RunLeft, error) {
	e, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	return reap(ctx, e, opts)
}

// thisOwner is the owner label of runs this process starts.
func thisOwner() string {
	host, _ := os.Hostname()
	return host + "/" + strconv.Itoa(os.Getpid())
}

// ownerAlive says whether the process owner ("host/pid") may still be running, and why; "" when
// it is gone or owner is not recorded.
func ownerAlive(owner string) string {
	host, pidText, ok := strings.Cut(owner, "/")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 {
		return ""
	}
	if here, _ := os.Hostname(); host != here {
		return "started on host " + host + ", where this reap cannot tell whether it still runs"
	}
	// Signal 0 checks that the process exists without touching it; EPERM: it exists, another
	// user's. A pid reused since keeps the run too: the safe side.
	if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
		return "its process " + pidText + " still runs"
	}
	return ""
}

// labelledThing is one container, network or volume labelled io.verity.run.
type labelledThing struct{ ID, Name, Run, Owner string }

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
		l.containers = append(l.containers, labelledThing{c.ID, strings.Join(c.Names, ","), c.Labels[Label], c.Labels[OwnerLabel]})
	}
	ns, err := e.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return l, fmt.Errorf("listing networks labelled %s: %w", label, err)
	}
	for _, n := range ns.Items {
		l.networks = append(l.networks, labelledThing{n.ID, n.Name, n.Labels[Label], n.Labels[OwnerLabel]})
	}
	vs, err := e.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return l, fmt.Errorf("listing volumes labelled %s: %w", label, err)
	}
	for _, v := range vs.Items {
		l.volumes = append(l.volumes, labelledThing{v.Name, v.Name, v.Labels[Label], v.Labels[OwnerLabel]})
	}
	return l, nil
}

// byRun counts what l holds by run, with each run's owner.
func (l labelled) byRun() map[string]*RunLeft {
	runs := map[string]*RunLeft{}
	at := func(t labelledThing) *RunLeft {
		r := runs[t.Run]
		if r == nil {
			r = &RunLeft{ID: t.Run}
			runs[t.Run] = r
		}
		r.Owner = cmp.Or(r.Owner, t.Owner)
		return r
	}
	for _, c := range l.containers {
		at(c).Found.Containers++
	}
	for _, n := range l.networks {
		at(n).Found.Networks++
	}
	for _, v := range l.volumes {
		at(v).Found.Volumes++
	}
	return runs
}

func reap(ctx context.Context, e *engine, opts ReapOptions) ([]RunLeft, error) {
	l, err := listLabelled(ctx, e, opts.Run)
	if err != nil {
		return nil, err
	}
	runs := l.byRun()
	remove := map[string]bool{}
	for id, r := range runs {
		if !opts.All {
			r.Alive = ownerAlive(r.Owner)
		}
		remove[id] = !r.Kept() && !opts.DryRun
	}
	var errs []error
	for _, c := range l.containers {
		if !remove[c.Run] {
			continue
		}
		_, err := e.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("removing container %s: %w", c.Name, err))
			continue
		}
		runs[c.Run].Removed.Containers++
	}
	for _, n := range l.networks {
		if !remove[n.Run] {
			continue
		}
		if _, err := e.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("removing network %s: %w", n.Name, err))
			continue
		}
		runs[n.Run].Removed.Networks++
	}
	for _, v := range l.volumes {
		if !remove[v.Run] {
			continue
		}
		if _, err := e.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil && !isGone(err) {
			errs = append(errs, fmt.Errorf("removing volume %s: %w", v.Name, err))
			continue
		}
		runs[v.Run].Removed.Volumes++
	}
	out := make([]RunLeft, 0, len(runs))
	for _, id := range slices.Sorted(maps.Keys(runs)) {
		out = append(out, *runs[id])
	}
	return out, errors.Join(errs...)
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
	for id, r := range l.byRun() {
		byRun[id] = r.Found
	}
	return byRun, nil
}

func isGone(err error) bool { return cerrdefs.IsNotFound(err) }
