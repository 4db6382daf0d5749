package harness

import (
	"slices"
	"testing"
)

// TestServiceLinks: the services' links exist only for the services asked for, are carried by
// proxy-client's client-<service> proxy, and are never among Links (faults that pick node links
// must not touch them).
func TestServiceLinks(t *testing.T) {
	pg, ledger := Link{ClientEndpoint, PostgresEndpoint}, Link{ClientEndpoint, LedgerEndpoint}

	none := layout(Spec{Nodes: 1})
	if ls := none.ServiceLinks(); len(ls) != 0 {
		t.Errorf("no services: ServiceLinks() = %v", ls)
	}
	if _, _, _, err := none.linkProxies(pg, ""); err == nil {
		t.Error("a link to a service the cluster does not run must be an error")
	}
	if none.PostgresDSN() != "" || none.LedgerURL() != "" {
		t.Error("no services: PostgresDSN and LedgerURL must be empty")
	}

	both := layout(Spec{Nodes: 3, Postgres: true, Ledger: true})
	if got := both.ServiceLinks(); !slices.Equal(got, []Link{pg, ledger}) {
		t.Errorf("ServiceLinks() = %v, want [%s %s]", got, pg, ledger)
	}
	if got, want := both.Links(), layout(Spec{Nodes: 3}).Links(); !slices.Equal(got, want) {
		t.Errorf("services change Links(): %v, want %v", got, want)
	}
	for l, name := range map[Link]string{pg: "client-postgres", ledger: "client-ledger"} {
		box, _, names, err := both.linkProxies(l, "")
		if err != nil || box != both.clientProxy || !slices.Equal(names, []string{name}) {
			t.Errorf("%s proxies = %v, %v: want [%s] in proxy-client", l, names, err, name)
		}
	}
	if _, _, _, err := both.linkProxies(Link{1, PostgresEndpoint}, ""); err == nil {
		t.Error("only clients reach a service: 1->postgres must be an error")
	}

	onlyLedger := layout(Spec{Nodes: 1, Ledger: true})
	if got := onlyLedger.ServiceLinks(); !slices.Equal(got, []Link{ledger}) {
		t.Errorf("ledger only: ServiceLinks() = %v", got)
	}
	if _, _, _, err := onlyLedger.linkProxies(pg, ""); err == nil {
		t.Error("ledger only: a link to postgres must be an error")
	}
}

func TestServiceEndpoints(t *testing.T) {
	ids := []int{ClientEndpoint, PostgresEndpoint, LedgerEndpoint}
	if len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) || slices.Max(ids) > 0 {
		t.Errorf("endpoints %v must be distinct and none a node id (> 0)", ids)
	}
	for _, tc := range []struct {
		l    Link
		want string
	}{
		{Link{ClientEndpoint, PostgresEndpoint}, "client->postgres"},
		{Link{ClientEndpoint, LedgerEndpoint}, "client->ledger"},
		{Link{ClientEndpoint, 2}, "client->2"},
		{Link{1, 101}, "1->101"},
	} {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.l, got, tc.want)
		}
	}
	if got := postgresDSN("127.0.0.1:5432"); got != "postgres://verity:verity@127.0.0.1:5432/verity?sslmode=disable" {
		t.Errorf("postgresDSN = %q", got)
	}
	if got := postgresDSN("[::1]:5432"); got != "postgres://verity:verity@[::1]:5432/verity?sslmode=disable" {
		t.Errorf("postgresDSN (IPv6) = %q", got)
	}
}

func TestServicesValidate(t *testing.T) {
	for _, s := range []Spec{
		{PostgresImage: "postgres:15"},
		{LedgerImage: "verity/ledger:1"},
		{Ledger: true, PostgresImage: "postgres:15"},
	} {
		if err := s.withDefaults().validate(); err == nil {
			t.Errorf("validate(%+v) = nil, want an error: an image override needs its service", s)
		}
	}
	for _, s := range []Spec{
		{Postgres: true, PostgresImage: "postgres:15"},
		{Ledger: true, LedgerImage: "verity/ledger:1"},
		{Postgres: true, Ledger: true},
	} {
		if err := s.withDefaults().validate(); err != nil {
			t.Errorf("validate(%+v) = %v", s, err)
		}
	}
	if got := (Spec{Postgres: true, Ledger: true}).services(); len(got) != 2 || got[0].endpoint != PostgresEndpoint || got[1].endpoint != LedgerEndpoint {
		t.Errorf("services() = %+v", got)
	}
}
