package workloads

import (
	"math/rand/v2"
	"strconv"
	"sync"
)

// NewRand returns the random source of one stream of choices of a run: every choice a workload
// makes (partitions, keys, transaction sizes, commit or abort, when to crash) comes from the
// source of its process, derived from the run's seed and the process number alone. Two runs with
// one seed therefore make the same sequence of choices in each process, whatever the timing; only
// the interleaving of processes (which the cluster decides) differs.
//
// The two PCG words are the seed and the process, each scrambled by splitmix64, so that nearby
// seeds and processes (0, 1, 2, …) still give unrelated streams.
func NewRand(seed int64, process int) *rand.Rand {
	return rand.New(rand.NewPCG(splitmix64(uint64(seed)), splitmix64(uint64(process)^0x5bd1e995)))
}

// splitmix64 is Vigna's finaliser: a bijection of uint64 that scatters nearby inputs.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Values names the records of one process: "P-N" is process P's Nth record (N from 1), unique
// across the run because process numbers are. The checker parses this form into numbers, and a
// reader of a history can trace every record back to the one send that made it.
type Values struct {
	prefix []byte
	n      int64
}

// NewValues returns the namer of process p's records.
func NewValues(p int) *Values {
	return &Values{prefix: append(strconv.AppendInt(nil, int64(p), 10), '-')}
}

// Next returns the process's next record value.
func (v *Values) Next() string {
	v.n++
	var buf [40]byte
	b := append(buf[:0], v.prefix...)
	return string(strconv.AppendInt(b, v.n, 10))
}

// Count is the number of values handed out.
func (v *Values) Count() int64 { return v.n }

// ValueOf formats the value that NewValues(p) names as its nth (for tests and tools).
func ValueOf(p int, n int64) string {
	return strconv.Itoa(p) + "-" + strconv.FormatInt(n, 10)
}

// Processes hands out history process numbers. A run numbers its configured client instances
// first, in the order of its spec, so that they do not depend on timing; instances started
// during the run (a zombie's usurper) take the next free numbers.
type Processes struct {
	mu   sync.Mutex
	next int
}

// NewProcesses starts numbering at first.
func NewProcesses(first int) *Processes { return &Processes{next: first} }

// Next returns a process number not handed out before.
func (ps *Processes) Next() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.next
	ps.next++
	return p
}
