package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
)

// Kill sends SIGKILL to the target nodes (a crash: nothing flushed, no controlled shutdown).
// Heal starts them again with their data. Events: "kill", then "start".
type Kill struct{ Target Target }

// Stop sends SIGTERM (a clean shutdown: leadership moves away first) and waits until the nodes
// have stopped. Heal starts them. Events: "stop", then "start".
type Stop struct{ Target Target }

// Pause freezes the target nodes (cgroup freezer): connections stay open and nothing answers,
// like a long GC pause or a hung VM. Heal thaws them. Events: "pause", then "resume".
type Pause struct{ Target Target }

func (f Kill) Name() string               { return "kill" }
func (f Kill) String() string             { return "kill(" + f.Target.String() + ")" }
func (f Kill) Available(c Cluster) error  { return f.Target.Available(c) }
func (f Stop) Name() string               { return "stop" }
func (f Stop) String() string             { return "stop(" + f.Target.String() + ")" }
func (f Stop) Available(c Cluster) error  { return f.Target.Available(c) }
func (f Pause) Name() string              { return "pause" }
func (f Pause) String() string            { return "pause(" + f.Target.String() + ")" }
func (f Pause) Available(c Cluster) error { return f.Target.Available(c) }

func (f Kill) Inject(ctx context.Context, e *Env) (any, error) {
	return nodeAction(ctx, e, f.Target, "kill", e.Cluster.Kill)
}
func (f Kill) Heal(ctx context.Context, e *Env, state any) error {
	return startAgain(ctx, e, "kill", state, nil)
}
func (f Stop) Inject(ctx context.Context, e *Env) (any, error) {
	return nodeAction(ctx, e, f.Target, "stop", e.Cluster.Stop)
}
func (f Stop) Heal(ctx context.Context, e *Env, state any) error {
	return startAgain(ctx, e, "stop", state, nil)
}
func (f Pause) Inject(ctx context.Context, e *Env) (any, error) {
	return nodeAction(ctx, e, f.Target, "pause", e.Cluster.Pause)
}
func (f Pause) Heal(ctx context.Context, e *Env, state any) error {
	nodes, _ := state.([]int)
	var paused []int
	for _, id := range nodes {
		if e.Cluster.NodeStates()[id] == harness.NodePaused {
			paused = append(paused, id)
		}
	}
	if len(paused) == 0 {
		return nil // someone (heal-all) resumed them already
	}
	return e.Do(ctx, history.FResume, Targets{Nodes: paused, Fault: "pause"}, func(ctx context.Context) error {
		return parallel(paused, func(id int) error { return e.Cluster.Resume(ctx, id) })
	})
}

// nodeAction resolves t and applies act to every node at once, recorded as one event f. The
// state is the nodes, returned even on error: part of them may be down.
func nodeAction(ctx context.Context, e *Env, t Target, f string, act func(context.Context, int) error) (any, error) {
	nodes, role, err := t.Resolve(ctx, e)
	if err != nil {
		return nil, err
	}
	err = e.Do(ctx, f, Targets{Nodes: nodes, Role: role}, func(ctx context.Context) error {
		return parallel(nodes, func(id int) error { return act(ctx, id) })
	})
	return nodes, err
}

// startAgain starts the nodes in state ([]int) that are still stopped, recorded as "start";
// report, when not nil, adds to the start's completion what the started nodes tell.
func startAgain(ctx context.Context, e *Env, fault string, state any, report func(nodes []int, t *Targets)) error {
	nodes, _ := state.([]int)
	var down []int
	for _, id := range nodes {
		if e.Cluster.NodeStates()[id] != harness.NodeRunning {
			down = append(down, id)
		}
	}
	if len(down) == 0 {
		return nil // someone (heal-all) started them already
	}
	return e.DoReport(ctx, history.FStart, Targets{Nodes: down, Fault: fault}, func(ctx context.Context, t *Targets) error {
		err := parallel(down, func(id int) error { return e.Cluster.Start(ctx, id) })
		if report != nil {
			report(down, t)
		}
		return err
	})
}

// PowerLoss is a power failure of the target nodes: each is SIGKILLed and loses every write
// that no fsync had made durable (its page cache is gone), which a kill keeps. Heal starts them;
// the "start" event's completion says, per node, how many files and bytes were dropped. The
// cluster must run on the lazy filesystem (harness.Spec.PowerLoss). Events: "power-loss", then
// "start".
type PowerLoss struct{ Target Target }

func (f PowerLoss) Name() string   { return "power-loss" }
func (f PowerLoss) String() string { return "power-loss(" + f.Target.String() + ")" }
func (f PowerLoss) Available(c Cluster) error {
	if !c.PowerLoss() {
		return errors.New("power-loss needs the nodes on the lazy filesystem (scenario: power_loss: true)")
	}
	return f.Target.Available(c)
}
func (f PowerLoss) Inject(ctx context.Context, e *Env) (any, error) {
	return nodeAction(ctx, e, f.Target, f.Name(), e.Cluster.PowerCut)
}
func (f PowerLoss) Heal(ctx context.Context, e *Env, state any) error {
	return startAgain(ctx, e, f.Name(), state, func(nodes []int, t *Targets) {
		for _, id := range nodes {
			if d, ok := e.Cluster.Dropped(id); ok {
				if t.Dropped == nil {
					t.Dropped = map[int]harness.Drop{}
				}
				t.Dropped[id] = d
			}
		}
	})
}

// DiskLoss is permanent disk loss: each target node is killed, its data directory emptied, and
// it is started again, empty; it formats its storage anew and must refill from the leaders.
// One event, "disk-loss" (the name the checker counts disk losses by); the node is back when
// it completes, so Heal has nothing to undo and records nothing.
type DiskLoss struct{ Target Target }

func (f DiskLoss) Name() string   { return "disk-loss" }
func (f DiskLoss) String() string { return "disk-loss(" + f.Target.String() + ")" }
func (f DiskLoss) Available(c Cluster) error {
	// With one broker the lost data has nowhere to come back from: that is not a fault the
	// cluster is meant to survive, and the run could never get healthy.
	if err := needBrokers(c, 2); err != nil {
		return err
	}
	return f.Target.Available(c)
}
func (f DiskLoss) Inject(ctx context.Context, e *Env) (any, error) {
	state, err := nodeAction(ctx, e, f.Target, f.Name(), e.Cluster.WipeDisk)
	if err != nil {
		return state, err // a node may be left stopped: Heal starts it
	}
	return nil, nil
}
func (f DiskLoss) Heal(ctx context.Context, e *Env, state any) error {
	if state == nil {
		return nil
	}
	return startAgain(ctx, e, f.Name(), state, nil)
}

// RollingBounce restarts every broker in turn, in an order drawn from the seeded source, as
// Kafka's replication_test does: clean (SIGTERM) or hard (SIGKILL), and the next node only once
// the cluster is healthy again (every broker registered and answering clients, every ISR full).
// The whole bounce happens inside Inject; events per node: "stop" or "kill", then "start".
type RollingBounce struct {
	Hard bool
	// Gate bounds the wait for health between two nodes; default 2 minutes. A cluster that
	// is not healthy by then ends the bounce with an error rather than take a second node
	// down (in a combined 3-node cluster that would also take the quorum).
	Gate time.Duration
}

func (f RollingBounce) Name() string {
	if f.Hard {
		return "rolling-bounce-hard"
	}
	return "rolling-bounce"
}
func (f RollingBounce) String() string { return f.Name() + "(every broker)" }
func (f RollingBounce) Available(c Cluster) error {
	// One node at a time keeps the others serving only when there are others.
	return needBrokers(c, 2)
}

func (f RollingBounce) Inject(ctx context.Context, e *Env) (any, error) {
	order := slices.Clone(e.Cluster.Brokers())
	slices.Sort(order)
	e.Rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	down, act := "stop", e.Cluster.Stop
	if f.Hard {
		down, act = "kill", e.Cluster.Kill
	}
	for k, id := range order {
		t := Targets{Nodes: []int{id}, Role: fmt.Sprintf("broker %d of %d, order %v", k+1, len(order), order), Fault: f.Name()}
		if err := e.Do(ctx, down, t, func(ctx context.Context) error { return act(ctx, id) }); err != nil {
			return []int{id}, err
		}
		if err := e.Do(ctx, history.FStart, t, func(ctx context.Context) error { return e.Cluster.Start(ctx, id) }); err != nil {
			return []int{id}, err
		}
		if k == len(order)-1 {
			break // the last node's recovery is the run's business (Recover waits for it)
		}
		if err := e.gate(ctx, f.Gate, fmt.Sprintf("restarting broker %d", id), "bounce"); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// defaultGate bounds the wait for a healthy cluster between two nodes of a rolling fault.
const defaultGate = 2 * time.Minute

// gate waits, at most d (0: defaultGate), for the cluster to be healthy after a rolling fault's
// step (after) took a node down and back, so that the next step does not take a second node
// while the first is still out (in a combined 3-node cluster that would also take the quorum).
func (e *Env) gate(ctx context.Context, d time.Duration, after, what string) error {
	if d <= 0 {
		d = defaultGate
	}
	gctx, cancel := context.WithTimeout(ctx, d)
	err := e.n.waitHealthy(gctx)
	cancel()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("after %s, the cluster was not healthy within %s, so the %s stops here: %w", after, d, what, err)
}

func (f RollingBounce) Heal(ctx context.Context, e *Env, state any) error {
	if state == nil {
		return nil
	}
	return startAgain(ctx, e, f.Name(), state, nil)
}
