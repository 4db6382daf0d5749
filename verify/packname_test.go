package verify

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPackNameAgreesWithTwoPasses compares packName with a plain reading of its rule — find
// the dash, then read each side as a canonical decimal — on the values workloads write and on
// near misses of them.
func TestPackNameAgreesWithTwoPasses(t *testing.T) {
	canon := func(s string) (uint64, bool) {
		if s == "" || (len(s) > 1 && s[0] == '0') || len(s) > 10 {
			return 0, false
		}
		var n uint64
		for _, c := range []byte(s) {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + uint64(c-'0')
		}
		return n, true
	}
	ref := func(s string) (uint64, bool) {
		ps, ns, ok := strings.Cut(s, "-")
		if !ok {
			return 0, false
		}
		p, ok1 := canon(ps)
		n, ok2 := canon(ns)
		if !ok1 || !ok2 || p >= 1<<31 || n >= 1<<32 {
			return 0, false
		}
		return p<<32 | n, true
	}
	cases := []string{"", "-", "0-0", "1-1", "13-50", "01-1", "1-01", "0-00", "1-", "-1", "1--1", "1-1-1", "a-1", "1-a",
		"2147483647-4294967295", "2147483648-1", "1-4294967296", "12345678901-1", "1-12345678901",
		"99999999999999999999-1", "1-99999999999999999999", "1-1 ", " 1-1", "1+1", "１-1", "value-1"}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := "0123456789--a"
	for range 200000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b), fmt.Sprintf("%d-%d", rng.Uint32()>>rng.IntN(32), rng.Uint64()>>rng.IntN(64)))
	}
	for _, s := range cases {
		gk, gok := packName(s)
		wk, wok := ref(s)
		if gk != wk || gok != wok {
			t.Fatalf("packName(%q) = %d, %v; want %d, %v", s, gk, gok, wk, wok)
		}
	}
}
