package nemesis

import (
	"context"
	"fmt"
	"slices"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
)

// Faults on the side-effect services that sinks write to (harness.PostgresEndpoint,
// harness.LedgerEndpoint). They never touch Kafka: the cut is on the link from the clients to
// the service, and a restart is the service's process.

// ServiceCut cuts the clients' link to a service. Event "sink-cut"; healed by "heal".
type ServiceCut struct {
	Service int // harness.PostgresEndpoint or harness.LedgerEndpoint
	Cut     harness.CutKind
}

func (f ServiceCut) link() harness.Link {
	return harness.Link{From: harness.ClientEndpoint, To: f.Service}
}
func (f ServiceCut) Name() string   { return "sink-cut" }
func (f ServiceCut) String() string { return "sink-cut(" + f.link().String() + ")" }
func (f ServiceCut) Available(c Cluster) error {
	if !slices.Contains(c.ServiceLinks(), f.link()) {
		return fmt.Errorf("the cluster runs no service behind %s (a scenario with a sink of that store starts one)", f.link())
	}
	return nil
}
func (f ServiceCut) Inject(ctx context.Context, e *Env) (any, error) {
	return cutLinks(ctx, e, f.Name(), f.Cut, []harness.Link{f.link()}, Targets{Role: "the sinks' " + f.link().String(), Note: "the clients cannot reach the service"})
}
func (f ServiceCut) Heal(ctx context.Context, e *Env, state any) error {
	return healLinks(ctx, e, state)
}

// ServiceKill kills a service's process (SIGKILL) and starts it again when healed: for
// PostgreSQL a database crash and recovery (committed transactions survive, open ones are
// lost); for the ledger, whose state is in memory, a loss of that state. Events "service-kill",
// then "service-start".
type ServiceKill struct{ Service int }

func (f ServiceKill) link() harness.Link {
	return harness.Link{From: harness.ClientEndpoint, To: f.Service}
}
func (f ServiceKill) Name() string   { return "service-kill" }
func (f ServiceKill) String() string { return "service-kill(" + serviceName(f.Service) + ")" }
func (f ServiceKill) Available(c Cluster) error {
	if !slices.Contains(c.ServiceLinks(), f.link()) {
		return fmt.Errorf("the cluster runs no such service (a scenario with a sink of that store starts one)")
	}
	return nil
}
func (f ServiceKill) Inject(ctx context.Context, e *Env) (any, error) {
	err := e.Do(ctx, f.Name(), Targets{Role: serviceName(f.Service)}, func(ctx context.Context) error { return e.Cluster.KillService(ctx, f.Service) })
	return f.Service, err
}
func (f ServiceKill) Heal(ctx context.Context, e *Env, _ any) error {
	return e.Do(ctx, history.FServiceStart, Targets{Role: serviceName(f.Service), Fault: f.Name()}, func(ctx context.Context) error {
		return e.Cluster.StartService(ctx, f.Service)
	})
}

// serviceName is the name the harness gives a service endpoint ("postgres", "ledger").
func serviceName(endpoint int) string {
	return linkPair(harness.Link{From: harness.ClientEndpoint, To: endpoint})[1]
}
