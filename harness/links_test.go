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
	_, names, err := c.linkProxies(Link{1, 2})
	if err != nil || !slices.Equal(names, []string{"n1-n2-internal", "n1-n2-controller"}) {
		t.Errorf("1->2 proxies = %v, %v: a combined peer carries replication and quorum traffic", names, err)
	}
	_, names, err = c.linkProxies(Link{ClientEndpoint, 3})
	if err != nil || !slices.Equal(names, []string{"client-n3"}) {
		t.Errorf("client->3 proxies = %v, %v", names, err)
	}
	if _, _, err := c.linkProxies(Link{1, 9}); err == nil {
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
	_, names, err := c.linkProxies(Link{1, 101})
	if err != nil || !slices.Equal(names, []string{"n1-n101-controller"}) {
		t.Errorf("1->101 proxies = %v, %v", names, err)
	}
	if _, _, err := c.linkProxies(Link{ClientEndpoint, 101}); err == nil {
		t.Error("clients never talk to a dedicated controller: want an error")
	}
}

func TestTrustedBrokers(t *testing.T) {
	c := layout(Spec{Nodes: 3})
	c.state = map[int]NodeState{1: NodeRunning, 2: NodeRunning, 3: NodeRunning}
	c.cuts = map[Link]CutKind{}
	if got := c.trustedBrokers(); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("healthy: trusted = %v", got)
	}
	// Isolating node 1 cuts 1<->2 and 1<->3: node 1 reaches one controller of three (itself),
	// nodes 2 and 3 reach two: they stay trusted, node 1 does not.
	for _, l := range []Link{{1, 2}, {2, 1}, {1, 3}, {3, 1}} {
		c.cuts[l] = CutBlackhole
	}
	if got := c.trustedBrokers(); !slices.Equal(got, []int32{2, 3}) {
		t.Errorf("1 isolated: trusted = %v, want [2 3]", got)
	}
	c.state[3] = NodeStopped
	if got := c.trustedBrokers(); len(got) != 0 {
		t.Errorf("1 isolated and 3 stopped: no majority anywhere, trusted = %v", got)
	}
}
