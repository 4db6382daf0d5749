package harness

import (
	"slices"
	"testing"
)

func layout(s Spec) *Cluster {
	s = s.withDefaults()
	return &Cluster{spec: s, members: s.members(), clientProxy: &proxyBox{name: "client"},
		nodeProxies: map[int]*proxyBox{}}
}

func TestLinksCombined(t *testing.T) {
	c := layout(Spec{Nodes: 3})
	links := c.Links()
	want := []Link{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 1}, {2, 3}, {3, 1}, {3, 2}}
	if !slices.Equal(links, want) {
		t.Fatalf("Links() = %v, want %v", links, want)
	}
	_, _, names, err := c.linkProxies(Link{1, 2}, "")
	if err != nil || !slices.Equal(names, []string{"n1-n2-internal", "n1-n2-controller"}) {
		t.Errorf("1->2 proxies = %v, %v: a combined peer carries replication and quorum traffic", names, err)
	}
	for tr, want := range map[Traffic]string{TrafficReplication: "n1-n2-internal", TrafficController: "n1-n2-controller"} {
		_, lts, names, err := c.linkProxies(Link{1, 2}, tr)
		if err != nil || !slices.Equal(names, []string{want}) || !slices.Equal(lts, []LinkTraffic{{Link{1, 2}, tr}}) {
			t.Errorf("1->2 %s proxies = %v %v, %v; want %s alone", tr, names, lts, err, want)
		}
	}
	if _, _, _, err := c.linkProxies(Link{1, 2}, TrafficClient); err == nil {
		t.Error("a node->node link carries no client traffic: want an error")
	}
	_, _, names, err = c.linkProxies(Link{ClientEndpoint, 3}, "")
	if err != nil || !slices.Equal(names, []string{"client-n3"}) {
		t.Errorf("client->3 proxies = %v, %v", names, err)
	}
	if _, _, _, err := c.linkProxies(Link{1, 9}, ""); err == nil {
		t.Error("a link to a node that does not exist must be an error")
	}
}

func TestLinksDedicated(t *testing.T) {
	c := layout(Spec{Nodes: 2, DedicatedControllers: true})
	has := func(l Link) bool { return slices.Contains(c.Links(), l) }
	for _, l := range []Link{{1, 2}, {1, 101}, {101, 102}} {
		if !has(l) {
			t.Errorf("Links() lacks %s", l)
		}
	}
	for _, l := range []Link{{101, 1}, {ClientEndpoint, 101}} {
		if has(l) {
			t.Errorf("Links() has %s, which carries no traffic", l)
		}
	}
	_, _, names, err := c.linkProxies(Link{1, 101}, "")
	if err != nil || !slices.Equal(names, []string{"n1-n101-controller"}) {
		t.Errorf("1->101 proxies = %v, %v", names, err)
	}
	if _, _, _, err := c.linkProxies(Link{1, 101}, TrafficReplication); err == nil {
		t.Error("a broker replicates from no controller: want an error")
	}
	if ts, err := c.TrafficOf(Link{1, 2}); err != nil || !slices.Equal(ts, []Traffic{TrafficReplication}) {
		t.Errorf("1->2 between broker-only nodes carries %v, %v; want replication alone", ts, err)
	}
	if _, _, _, err := c.linkProxies(Link{ClientEndpoint, 101}, ""); err == nil {
		t.Error("clients never talk to a dedicated controller: want an error")
	}
}

func TestTrustedBrokers(t *testing.T) {
	c := layout(Spec{Nodes: 3})
	c.state = map[int]NodeState{1: NodeRunning, 2: NodeRunning, 3: NodeRunning}
	c.cuts = map[LinkTraffic]CutKind{}
	if got := c.trustedBrokers(); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("healthy: trusted = %v", got)
	}
	// Isolating node 1 cuts 1<->2 and 1<->3: node 1 reaches one controller of three (itself),
	// nodes 2 and 3 reach two: they stay trusted, node 1 does not.
	// Replication alone cut changes nothing: every broker still follows the quorum.
	for _, l := range []Link{{1, 2}, {2, 1}, {1, 3}, {3, 1}} {
		c.cuts[LinkTraffic{l, TrafficReplication}] = CutBlackhole
	}
	if got := c.trustedBrokers(); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("replication of 1 cut: trusted = %v, want all", got)
	}
	for _, l := range []Link{{1, 2}, {2, 1}, {1, 3}, {3, 1}} {
		c.cuts[LinkTraffic{l, TrafficController}] = CutBlackhole
	}
	if got := c.trustedBrokers(); !slices.Equal(got, []int32{2, 3}) {
		t.Errorf("1 isolated: trusted = %v, want [2 3]", got)
	}
	c.state[3] = NodeStopped
	if got := c.trustedBrokers(); len(got) != 0 {
		t.Errorf("1 isolated and 3 stopped: no majority anywhere, trusted = %v", got)
	}
}

// The one rule of which proxies accept: a stopped destination refuses whatever the cuts, a cut to
// refuse refuses whatever the destination, and nothing else refuses.
func TestAcceptsWhen(t *testing.T) {
	for _, c := range []struct {
		up   bool
		cut  CutKind
		want bool
	}{
		{true, "", true},
		{true, CutBlackhole, true}, // the timeout toxics hold its connections, the proxy accepts them
		{true, CutRefuse, false},
		{false, "", false}, // healed while its node is down: refused until the node starts
		{false, CutBlackhole, false},
		{false, CutRefuse, false},
	} {
		if got := acceptsWhen(c.up, c.cut); got != c.want {
			t.Errorf("acceptsWhen(up %t, cut %q) = %t, want %t", c.up, c.cut, got, c.want)
		}
	}
}

func TestWholeCut(t *testing.T) {
	both := []Traffic{TrafficReplication, TrafficController}
	for _, c := range []struct {
		cut  map[Traffic]CutKind
		want CutKind
	}{
		{map[Traffic]CutKind{}, ""},
		{map[Traffic]CutKind{TrafficReplication: CutRefuse}, ""},
		{map[Traffic]CutKind{TrafficReplication: CutRefuse, TrafficController: CutRefuse}, CutRefuse},
		{map[Traffic]CutKind{TrafficReplication: CutBlackhole, TrafficController: CutBlackhole}, CutBlackhole},
		{map[Traffic]CutKind{TrafficReplication: CutRefuse, TrafficController: CutBlackhole}, CutBlackhole},
		{map[Traffic]CutKind{TrafficController: CutBlackhole, TrafficReplication: CutRefuse}, CutBlackhole},
	} {
		if got := wholeCut(both, c.cut); got != c.want {
			t.Errorf("wholeCut(%v) = %q, want %q", c.cut, got, c.want)
		}
	}
}
