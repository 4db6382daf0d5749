package verify

import (
	"math/rand/v2"
	"testing"
)

// TestAcyclicAgreesWithSCCs: acyclic answers whether the strongly connected components have
// none of two or more vertices, on random graphs sparse and dense, with self-loops and
// repeated edges, split over several lists.
func TestAcyclicAgreesWithSCCs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	all := edgeMask(edgeWR, edgeWRRU, edgeProcess, edgeRealtime, edgeWW)
	cyclic := 0
	for trial := range 3000 {
		n := 1 + rng.IntN(30)
		m := rng.IntN(3 * n)
		var lists [][]gedge
		for range 1 + rng.IntN(3) {
			var es []gedge
			for range m {
				from, to := uint32(rng.IntN(n)), uint32(rng.IntN(n))
				if trial%2 == 0 && from > to && rng.IntN(10) > 0 {
					from, to = to, from // mostly forward: many acyclic graphs
				}
				es = append(es, gedge{from: from, to: to, kind: uint8(rng.IntN(5))})
			}
			lists = append(lists, es)
		}
		g := newDepGraph(n, lists...)
		_, comps := g.sccs(all)
		if got, want := acyclic(n, lists...), len(comps) == 0; got != want {
			t.Fatalf("trial %d: acyclic %v, but %d components: %v", trial, got, len(comps), lists)
		}
		if len(comps) > 0 {
			cyclic++
		}
	}
	if cyclic < 300 || cyclic > 2700 {
		t.Fatalf("%d of 3000 graphs cyclic: the test covers one answer only", cyclic)
	}
}
