package nemesis

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-kafka/verity/harness"
)

// Service faults act on the service alone: a cut of the clients' link to it, or its process
// killed and started; never a Kafka node or link.
func TestServiceFaults(t *testing.T) {
	ctx := t.Context()
	pg := harness.Link{From: harness.ClientEndpoint, To: harness.PostgresEndpoint}

	fc, _, n, h := setup(t, 3, false)
	inj, err := n.Inject(ctx, ServiceCut{Service: harness.PostgresEndpoint})
	require.NoError(t, err)
	require.Equal(t, map[harness.Link]harness.CutKind{pg: harness.CutBlackhole}, fc.Cuts(), "only the link to the database is cut")
	require.NoError(t, n.Heal(ctx, inj))
	require.Empty(t, fc.Cuts())
	es := h.events(t)
	require.Equal(t, [][2]string{{"client", "postgres"}}, es[0].T.Links, "the event names the service by name")

	fc, _, n, _ = setup(t, 3, false)
	inj, err = n.Inject(ctx, ServiceKill{Service: harness.PostgresEndpoint})
	require.NoError(t, err)
	require.NoError(t, n.Heal(ctx, inj))
	require.Equal(t, []string{"service-kill -2", "service-start -2"}, fc.Calls())
	for id, st := range fc.NodeStates() {
		require.Equal(t, harness.NodeRunning, st, "node %d untouched", id)
	}

	require.ErrorContains(t, ServiceCut{Service: harness.LedgerEndpoint}.Available(fc), "no service behind client->ledger")
}
