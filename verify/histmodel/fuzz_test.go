package histmodel

import (
	"bytes"
	"context"
	"testing"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/verify"
)

// FuzzMutated checks the properties for any seed and family: family indexes Mutators(), and
// the index one past the last (taken modulo) stands for the clean history. The history goes
// through its bytes and the history reader, as `verity check` reads a file.
func FuzzMutated(f *testing.F) {
	for i := range len(Mutators()) + 1 {
		f.Add(uint64(i), uint8(i))
	}
	f.Fuzz(func(t *testing.T, seed uint64, family uint8) {
		muts := Mutators()
		var mut *Mutator
		if i := int(family) % (len(muts) + 1); i < len(muts) {
			mut = &muts[i]
		}
		h, inj, err := Build(seed, Options{Parts: randomParts(seed, Needs{})}, mut)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := h.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		rd, err := history.NewReader(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("the history's header does not read back: %v", err)
		}
		r, err := verify.Check(context.Background(), rd, rd.Header().Config, verify.Options{MaxExamples: 5})
		if err != nil {
			t.Fatalf("check: %v", err)
		}
		if inj == nil {
			if problem := cleanProblem(r); problem != "" {
				t.Fatalf("seed %d: a clean history: %s", seed, problem)
			}
			return
		}
		if problem := mutatedProblem(r, inj); problem != "" {
			t.Fatalf("seed %d, %s (%s): %s", seed, inj.Family, inj.Variant, problem)
		}
	})
}

// TestSameSeedSameBytes: a history depends on its seed and options alone.
func TestSameSeedSameBytes(t *testing.T) {
	for seed := range uint64(50) {
		for _, mut := range append([]*Mutator{nil}, mutatorPtrs()...) {
			var a, b bytes.Buffer
			for _, buf := range []*bytes.Buffer{&a, &b} {
				h, _, err := Build(seed, Options{Parts: randomParts(seed, Needs{})}, mut)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := h.WriteTo(buf); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("seed %d, mutator %v: two builds differ", seed, mut)
			}
		}
	}
}

func mutatorPtrs() []*Mutator {
	ms := Mutators()
	out := make([]*Mutator, len(ms))
	for i := range ms {
		out[i] = &ms[i]
	}
	return out
}
