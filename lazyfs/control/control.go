// Package control is the contract between the lazy filesystem's daemon (cmd/verity-lazyfs,
// package lazyfs) and what drives it from outside (the harness): where in the store a power cut
// is marked and its figures recorded. It imports nothing, so that the harness can read it on any
// platform while the filesystem itself is Linux's.
package control

const (
	// CutMark, in the store, is present from a power cut (verity-lazyfs cut) until the next
	// start has dropped what was not durable.
	CutMark = "power-cut"
	// DropFile, in the store, is the last power cut's Drop, written before CutMark is removed.
	DropFile = "last-drop.json"
)

// Drop is DropFile: what a power cut lost.
type Drop struct {
	// Files is how many files held writes that were not durable.
	Files int64 `json:"files"`
	// Bytes is how many of their bytes were not the same bytes at the same offset in the
	// durable copy, counting those past its end.
	Bytes int64 `json:"bytes"`
	// At is when the drop happened (RFC 3339, UTC).
	At string `json:"at,omitempty"`
}
