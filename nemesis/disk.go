package nemesis

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/lazyfs/control"
)

// DiskFault makes the target nodes' lazy filesystems fail or slow the calls Rules name: EIO
// (disk-error), ENOSPC (disk-full), delays (slow-disk); docs/power-loss.md, Disk faults. The
// cluster must run on the lazy filesystem (harness.Spec.PowerLoss). The inject event carries
// the rules; Heal clears them and records, per node, what each rule did (hits, first hit, the
// paths it hit), then starts the brokers the fault stopped (a broker halts when its only log
// directory fails) and restarts those it failed a directory of that still run (with several
// log directories a broker goes on without the failed one, which stays offline until the
// broker restarts, KIP-112): the disk is replaced. Events: the fault's name, "heal", and
// "start" for those it starts or restarts.
type DiskFault struct {
	// Fault is the catalogue name the events carry.
	Fault  string
	Target Target
	Rules  control.Faults
}

func (f DiskFault) Name() string { return f.Fault }
func (f DiskFault) String() string {
	rules := make([]string, len(f.Rules.Rules))
	for i, r := range f.Rules.Rules {
		rules[i] = describeRule(r)
	}
	return f.Fault + "(" + f.Target.String() + ": " + strings.Join(rules, "; ") + ")"
}

// describeRule says in a few words what r does, for logs and progress lines.
func describeRule(r control.DiskFault) string {
	var what string
	switch r.Kind {
	case control.KindError:
		what = "EIO on " + string(r.Op)
		if r.Once {
			what += " once"
		}
	case control.KindFull:
		what = fmt.Sprintf("ENOSPC after %d bytes", r.AfterBytes)
	case control.KindSlow:
		what = string(r.Op) + " +" + r.Delay
	}
	return what + " under " + r.Path
}

func (f DiskFault) Available(c Cluster) error {
	if !c.PowerLoss() {
		return fmt.Errorf("%s needs the nodes on the lazy filesystem (scenario: power_loss: true)", f.Fault)
	}
	if err := f.Rules.Validate(); err != nil {
		return fmt.Errorf("%s: %w", f.Fault, err)
	}
	return f.Target.Available(c)
}

func (f DiskFault) Inject(ctx context.Context, e *Env) (any, error) {
	nodes, role, err := f.Target.Resolve(ctx, e)
	if err != nil {
		return nil, err
	}
	t := Targets{Nodes: nodes, Role: role, DiskRules: f.Rules.Rules}
	st := diskState{nodes: nodes, since: time.Now()}
	err = e.Do(ctx, f.Fault, t, func(ctx context.Context) error {
		return parallel(nodes, func(id int) error { return e.Cluster.SetDiskFaults(ctx, id, f.Rules) })
	})
	return st, err
}

// diskState is what a disk fault's Heal needs: its nodes, and when it began to set its rules
// (a node whose set failed reports the rules set before, which are not this fault's).
type diskState struct {
	nodes []int
	since time.Time
}

func (f DiskFault) Heal(ctx context.Context, e *Env, state any) error {
	ds, _ := state.(diskState)
	nodes := ds.nodes
	if len(nodes) == 0 {
		return nil
	}
	status := map[int]control.FaultStatus{}
	err := e.DoReport(ctx, history.FHeal, Targets{Nodes: nodes, Fault: f.Fault}, func(ctx context.Context, t *Targets) error {
		var mu sync.Mutex
		t.Disk = status
		return parallel(nodes, func(id int) error {
			st, err := e.Cluster.ClearDiskFaults(ctx, id)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			t.Disk[id] = st
			return nil
		})
	})
	if err != nil {
		return err
	}
	if err := restartFailed(ctx, e, f.Fault, ds, status); err != nil {
		return err
	}
	// A broker the fault stopped (its log directory failed) is started with its data, as
	// after a crash.
	return startAgain(ctx, e, f.Fault, nodes, nil)
}

// restartFailed restarts the running nodes whose disk rules, set by this fault, failed a call
// (status), so that the log directory Kafka took offline comes back.
func restartFailed(ctx context.Context, e *Env, fault string, ds diskState, status map[int]control.FaultStatus) error {
	var failed []int
	for _, id := range ds.nodes {
		if failedACall(status[id], ds.since) && e.Cluster.NodeStates()[id] == harness.NodeRunning {
			failed = append(failed, id)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	t := Targets{Nodes: failed, Fault: fault, Note: "restarted: a log directory the fault failed stays offline until its broker restarts"}
	return e.Do(ctx, history.FStart, t, func(ctx context.Context) error {
		return parallel(failed, func(id int) error {
			if err := e.Cluster.Stop(ctx, id); err != nil {
				return err
			}
			return e.Cluster.Start(ctx, id)
		})
	})
}

// failedACall reports whether a rule of st, set at or after since, failed a call (a delay
// fails none).
func failedACall(st control.FaultStatus, since time.Time) bool {
	if set, err := time.Parse(time.RFC3339Nano, st.SetAt); err != nil || set.Before(since) {
		return false
	}
	for _, r := range st.Rules {
		if r.Hits > 0 && r.Rule.Kind != control.KindSlow {
			return true
		}
	}
	return false
}
