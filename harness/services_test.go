package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
)

// TestServicesSpec: the services' image overrides need their service; Start refuses them before
// it talks to any engine.
func TestServicesSpec(t *testing.T) {
	for _, tc := range []struct {
		spec harness.Spec
		want string
	}{
		{harness.Spec{PostgresImage: "postgres:15"}, "PostgresImage"},
		{harness.Spec{LedgerImage: "verity/ledger:1"}, "LedgerImage"},
		{harness.Spec{Postgres: true, LedgerImage: "verity/ledger:1"}, "only used with Ledger"},
	} {
		_, err := harness.Start(t.Context(), tc.spec)
		require.ErrorContains(t, err, tc.want, "%+v", tc.spec)
	}
	pg := harness.Link{From: harness.ClientEndpoint, To: harness.PostgresEndpoint}
	require.Equal(t, "client->postgres", pg.String())
	require.Equal(t, "client->ledger", harness.Link{From: harness.ClientEndpoint, To: harness.LedgerEndpoint}.String())
	require.Equal(t, "client->2", harness.Link{From: harness.ClientEndpoint, To: 2}.String())
	require.Equal(t, "1->3", harness.Link{From: 1, To: 3}.String())
}

// TestServicesCluster starts one node with PostgreSQL and the ledger beside it and checks that
// each service is reached through its own link, that the link's faults and the services'
// restarts do what they say, and that Close saves their logs and removes them. Two starts that
// fail because of a service come first: they must leave nothing behind.
func TestServicesCluster(t *testing.T) {
	harnesstest.RequireDocker(t)
	ctx := withTimeout(t, 8*time.Minute)

	t.Run("a service image missing: Start fails before anything starts", func(t *testing.T) {
		_, err := harness.Start(ctx, harness.Spec{Nodes: 1, RunID: "t-svc-noimage", Ledger: true, LedgerImage: "verity/no-such-ledger:0"})
		require.ErrorIs(t, err, harness.ErrImage)
		require.ErrorContains(t, err, "VERITY_LEDGER_IMAGE")
		left, err := harness.Leftovers(ctx, "t-svc-noimage")
		require.NoError(t, err)
		require.Zero(t, left)
	})

	t.Run("a service that exits fails Start, which removes everything and keeps its log", func(t *testing.T) {
		// The PostgreSQL image without POSTGRES_PASSWORD, standing in for the ledger, refuses
		// to initialize and exits at once, as the official image does.
		im, err := harness.ChooseImages(ctx, harness.Spec{Postgres: true})
		require.NoError(t, err)
		dir := t.TempDir()
		_, err = harness.Start(ctx, harness.Spec{Nodes: 1, RunID: "t-svc-exit", Ledger: true, LedgerImage: im.Postgres, ArtifactDir: dir})
		require.ErrorContains(t, err, "ledger exited")
		require.ErrorContains(t, err, "POSTGRES_PASSWORD", "the error shows the service's last log lines")
		t.Logf("Start: %v", err)
		left, err := harness.Leftovers(ctx, "t-svc-exit")
		require.NoError(t, err)
		require.Zero(t, left, "a failed start must remove what it started")
		b, err := os.ReadFile(filepath.Join(dir, "logs", "ledger.log"))
		require.NoError(t, err)
		require.Contains(t, string(b), "POSTGRES_PASSWORD")
	})

	c := harnesstest.Start(t, harness.Spec{Nodes: 1, Postgres: true, Ledger: true})
	pgLink := harness.Link{From: harness.ClientEndpoint, To: harness.PostgresEndpoint}
	ledgerLink := harness.Link{From: harness.ClientEndpoint, To: harness.LedgerEndpoint}
	require.Equal(t, []harness.Link{pgLink, ledgerLink}, c.ServiceLinks())
	for _, l := range c.Links() {
		require.False(t, l.To < 0, "Links() must leave the services out, has %s", l)
	}
	dsn, ledger := c.PostgresDSN(), c.LedgerURL()
	require.NotEmpty(t, dsn)
	require.True(t, strings.HasPrefix(ledger, "http://"), ledger)
	im := c.Images()
	require.NotEmpty(t, im.Postgres)
	require.NotEmpty(t, im.PostgresID)
	require.Equal(t, harness.StandInLedgerImage, im.Ledger)
	require.NotEmpty(t, im.LedgerID)
	t.Logf("postgres %s (%s), ledger %s; images: %s", dsn, im.Postgres, ledger, im.Why)

	connect := func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, dsn) }
	mustConnect := func(t *testing.T) *pgx.Conn {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		conn, err := connect(cctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		return conn
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	pay := func(t *testing.T, event string) time.Duration {
		t.Helper()
		began := time.Now()
		body := fmt.Sprintf(`{"event_id":%q,"amount":1,"source":"services-test"}`, event)
		resp, err := hc.Post(ledger+"/payments", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode, "POST /payments: %s", b)
		return time.Since(began)
	}
	entries := func(t *testing.T) int {
		t.Helper()
		resp, err := hc.Get(ledger + "/ledger")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var l struct {
			Entries []json.RawMessage `json:"entries"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&l))
		return len(l.Entries)
	}

	t.Run("postgres: a table is written and read back through the link", func(t *testing.T) {
		conn := mustConnect(t)
		_, err := conn.Exec(ctx, `CREATE TABLE effects (id int PRIMARY KEY, note text NOT NULL)`)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, `INSERT INTO effects VALUES (1, 'committed')`)
		require.NoError(t, err)
		var note string
		require.NoError(t, conn.QueryRow(ctx, `SELECT note FROM effects WHERE id = 1`).Scan(&note))
		require.Equal(t, "committed", note)
		var fsync string
		require.NoError(t, conn.QueryRow(ctx, `SHOW fsync`).Scan(&fsync))
		require.Equal(t, "on", fsync, "the database's durability is under test: fsync stays on")
	})

	t.Run("cut client->postgres: a new connection fails; heal: it works again", func(t *testing.T) {
		for _, kind := range []harness.CutKind{harness.CutBlackhole, harness.CutRefuse} {
			require.NoError(t, c.Cut(ctx, pgLink, kind))
			require.Contains(t, c.Cuts(), pgLink)
			refused, err := c.Refused(pgLink)
			require.NoError(t, err)
			require.Equal(t, kind == harness.CutRefuse, refused)
			short, cancel := context.WithTimeout(ctx, 3*time.Second)
			began := time.Now()
			conn, err := connect(short)
			cancel()
			if err == nil {
				_ = conn.Close(ctx)
			}
			require.Error(t, err, "a connection through a link cut (%s) must fail", kind)
			t.Logf("cut (%s): connecting failed after %s: %v", kind, time.Since(began).Round(time.Millisecond), err)
			require.NoError(t, c.Heal(ctx, pgLink))
			require.NotContains(t, c.Cuts(), pgLink)
			conn = mustConnect(t)
			var n int
			require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM effects`).Scan(&n))
			require.Equal(t, 1, n)
		}
	})

	t.Run("latency on client->ledger slows a POST by at least its delay", func(t *testing.T) {
		const delay = 300 * time.Millisecond
		// fastest is the quickest of three POSTs: noise on a busy machine only adds time.
		fastest := func(what string) time.Duration {
			return min(pay(t, what+"-1"), pay(t, what+"-2"), pay(t, what+"-3"))
		}
		base := fastest("before")
		name, err := c.AddToxic(ctx, ledgerLink, harness.Latency("downstream", delay, 0))
		require.NoError(t, err)
		slow := fastest("slowed")
		require.NoError(t, c.RemoveToxic(ctx, ledgerLink, name))
		after := fastest("after")
		t.Logf("fastest POST /payments: %s before, %s with a %s toxic on %s, %s after", base, slow, delay, ledgerLink, after)
		require.GreaterOrEqual(t, slow, delay, "every POST under the toxic carries its delay")
		require.Less(t, after, delay, "removing the toxic removes its delay")
	})

	t.Run("restart postgres: committed rows stay, open connections end", func(t *testing.T) {
		held := mustConnect(t)
		require.NoError(t, held.Ping(ctx))
		require.NoError(t, c.RestartService(ctx, harness.PostgresEndpoint))
		require.Equal(t, harness.NodeRunning, c.ServiceState(harness.PostgresEndpoint))
		short, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := held.Exec(short, `SELECT 1`)
		cancel()
		require.Error(t, err, "a connection open across the crash must be gone")
		t.Logf("connection held across the restart: %v", err)
		conn := mustConnect(t)
		var note string
		require.NoError(t, conn.QueryRow(ctx, `SELECT note FROM effects WHERE id = 1`).Scan(&note))
		require.Equal(t, "committed", note)
	})

	t.Run("kill postgres: its link refuses; Restore starts it again", func(t *testing.T) {
		require.NoError(t, c.KillService(ctx, harness.PostgresEndpoint))
		require.Equal(t, harness.NodeStopped, c.ServiceState(harness.PostgresEndpoint))
		refused, err := c.Refused(pgLink)
		require.NoError(t, err)
		require.True(t, refused, "a crashed server's host refuses connections")
		require.NoError(t, c.Restore(ctx))
		require.Equal(t, harness.NodeRunning, c.ServiceState(harness.PostgresEndpoint))
		conn := mustConnect(t)
		require.NoError(t, conn.Ping(ctx))
	})

	t.Run("restart the ledger: it comes back empty", func(t *testing.T) {
		pay(t, "lost-on-restart")
		require.Positive(t, entries(t))
		require.NoError(t, c.RestartService(ctx, harness.LedgerEndpoint))
		require.Zero(t, entries(t), "the ledger keeps its records in memory only")
	})

	t.Run("close saves the services' logs and removes them", func(t *testing.T) {
		// Every mount of the PostgreSQL container is the run's named, labelled volume: the
		// image's VOLUME gets no anonymous volume that nothing would remove.
		pg := c.Service(harness.PostgresEndpoint)
		require.NotNil(t, pg)
		require.NotEmpty(t, pg.Volume)
		dc, err := testcontainers.NewDockerClientWithOpts(ctx)
		require.NoError(t, err)
		defer dc.Close()
		for _, s := range []*harness.Service{pg, c.Service(harness.LedgerEndpoint)} {
			in, err := dc.ContainerInspect(ctx, s.Name, client.ContainerInspectOptions{})
			require.NoError(t, err)
			require.Equal(t, c.RunID(), in.Container.Config.Labels[harness.Label], "%s is labelled", s.Name)
			for _, m := range in.Container.Mounts {
				require.Equal(t, pg.Volume, m.Name, "%s mounts %+v", s.Name, m)
			}
		}
		// Nothing of the run is published beyond this machine: every container's host ports,
		// the nodes' and services' too (which nothing uses), are on 127.0.0.1.
		cs, err := dc.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).Add("label", harness.Label+"="+c.RunID())})
		require.NoError(t, err)
		require.NotEmpty(t, cs.Items)
		for _, ct := range cs.Items {
			in, err := dc.ContainerInspect(ctx, ct.ID, client.ContainerInspectOptions{})
			require.NoError(t, err)
			require.NotEmpty(t, in.Container.NetworkSettings.Ports, "%s publishes no port", in.Container.Name)
			for port, bs := range in.Container.NetworkSettings.Ports {
				for _, b := range bs {
					require.Equal(t, "127.0.0.1", b.HostIP.String(), "%s publishes %s on %s", in.Container.Name, port, b.HostIP)
				}
			}
		}

		require.NoError(t, c.Close(ctx))
		for _, name := range []string{"postgres", "ledger", "node-1"} {
			b, err := os.ReadFile(filepath.Join(c.ArtifactDir(), "logs", name+".log"))
			require.NoError(t, err)
			require.NotEmpty(t, b, "%s.log", name)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			t.Logf("%s.log: %d lines, last: %s", name, len(lines), lines[len(lines)-1])
		}
		left, err := harness.Leftovers(ctx, c.RunID())
		require.NoError(t, err)
		require.Zero(t, left, "Close must remove the services, their volume and everything else")
		_, err = dc.VolumeInspect(ctx, pg.Volume, client.VolumeInspectOptions{})
		require.Error(t, err, "PostgreSQL's data volume %s must be gone", pg.Volume)
	})
}
