// Package control is the contract between the lazy filesystem's daemon (cmd/verity-lazyfs,
// package lazyfs) and what drives it from outside (the harness): where in the store a power cut
// is marked and its figures recorded, and which disk faults are set and what they did. It imports
// only the standard library, so that the harness can read it on any platform while the
// filesystem itself is Linux's.
package control

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

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

// Disk faults. The harness asks the daemon to set or clear them (FaultRequestFile, then SIGUSR2;
// the daemon answers in FaultAckFile) and reads what they did from FaultStatusFile. They live in
// the daemon's memory only: a restart of the daemon (after a power cut, say) ends them, and its
// start marks the last status cleared.
const (
	// FaultRequestFile, in the store, is the last FaultRequest.
	FaultRequestFile = "fault-request.json"
	// FaultAckFile, in the store, is the daemon's FaultAck to the last FaultRequest it read.
	FaultAckFile = "fault-done.json"
	// FaultStatusFile, in the store, is the FaultStatus of the last rules set, kept current by
	// the daemon (within a fraction of a second of a hit) and final once they are cleared.
	FaultStatusFile = "fault-status.json"
)

// FaultKind is what a rule does to the calls it matches.
type FaultKind string

const (
	// KindError fails the call with EIO, having done nothing.
	KindError FaultKind = "error"
	// KindFull fails writes with ENOSPC, having written nothing, once the bytes written to the
	// paths the rule matches since it was set would exceed AfterBytes; from then on it also
	// fails the creation of files there and statfs reports no free space.
	KindFull FaultKind = "full"
	// KindSlow delays the call by Delay, then does it.
	KindSlow FaultKind = "slow"
)

// FaultKinds is every FaultKind.
var FaultKinds = []FaultKind{KindError, KindFull, KindSlow}

// FaultOp is the call a rule matches.
type FaultOp string

const (
	// OpWrite is write(2) and its kin, as the filesystem gets them: a write larger than the
	// FUSE request size (128 KiB) is several calls, and a fault in a later one leaves the
	// write(2) short rather than failed.
	OpWrite FaultOp = "write"
	// OpFsync is fsync(2) and fdatasync(2) of a file or a directory.
	OpFsync FaultOp = "fsync"
	// OpRead is a read the kernel sends to the filesystem: one it serves from its page cache
	// (a file read again without being reopened) never arrives.
	OpRead FaultOp = "read"
)

// FaultOps is every FaultOp.
var FaultOps = []FaultOp{OpWrite, OpFsync, OpRead}

// FaultAction is what a FaultRequest asks for.
type FaultAction string

const (
	// ActionSet replaces the rules in force with the request's.
	ActionSet FaultAction = "set"
	// ActionClear ends the rules in force; their status stays readable.
	ActionClear FaultAction = "clear"
)

// FaultActions is every FaultAction.
var FaultActions = []FaultAction{ActionSet, ActionClear}

// DiskFault is one rule: calls of kind Op on files whose path matches Path fail or slow down.
type DiskFault struct {
	Kind FaultKind `json:"kind"`
	// Op is the call it matches; a full disk fails writes only, and Op may be left out.
	Op FaultOp `json:"op,omitempty"`
	// Path is a pattern (see PathPattern) for the path relative to the mount's root.
	Path string `json:"path"`
	// Once makes an error or slow rule hit only the first call it matches after it was set.
	Once bool `json:"once,omitempty"`
	// AfterBytes is a full disk's room: how many bytes it takes before it is full (0: none).
	AfterBytes int64 `json:"after_bytes,omitempty"`
	// Delay is a slow rule's delay, a Go duration ("250ms"); only slow rules take one.
	Delay string `json:"delay,omitempty"`
}

// Faults is the file verity-lazyfs fault -set reads: the rules to set.
type Faults struct {
	Rules []DiskFault `json:"rules"`
}

// FaultRequest is FaultRequestFile.
type FaultRequest struct {
	// Nonce identifies the request; the daemon's FaultAck carries it back.
	Nonce  string      `json:"nonce"`
	Action FaultAction `json:"action"`
	// Rules are the rules to set (ActionSet only).
	Rules []DiskFault `json:"rules,omitempty"`
}

// FaultAck is FaultAckFile.
type FaultAck struct {
	Nonce string `json:"nonce"`
	// Error is why the daemon refused the request; empty when it did what was asked.
	Error string `json:"error,omitempty"`
}

// FaultStatus is FaultStatusFile: the last rules set and what they did.
type FaultStatus struct {
	// Active is whether the rules are in force.
	Active bool `json:"active"`
	// SetAt and ClearedAt are when they were set and cleared (RFC 3339, UTC).
	SetAt     string       `json:"set_at,omitempty"`
	ClearedAt string       `json:"cleared_at,omitempty"`
	Rules     []RuleStatus `json:"rules"`
}

// RuleStatus is what one rule did.
type RuleStatus struct {
	Rule DiskFault `json:"rule"`
	// Hits is how many calls it failed or delayed.
	Hits int64 `json:"hits"`
	// FirstHit is when it first failed or delayed a call (RFC 3339 with nanoseconds, UTC).
	FirstHit string `json:"first_hit,omitempty"`
	// Paths are the first MaxStatusPaths distinct paths it hit.
	Paths []string `json:"paths,omitempty"`
	// Written is, for a full disk, the bytes written to its paths since it was set.
	Written int64 `json:"written,omitempty"`
}

// MaxStatusPaths is how many paths a RuleStatus names at most.
const MaxStatusPaths = 8

// Validate returns why the request cannot be done, naming the field, or nil.
func (r FaultRequest) Validate() error {
	switch r.Action {
	case ActionSet:
		return Faults{Rules: r.Rules}.Validate()
	case ActionClear:
		if len(r.Rules) > 0 {
			return errors.New("rules: a clear takes none")
		}
		return nil
	}
	return fmt.Errorf("action %q: not one of %v", r.Action, FaultActions)
}

// Validate returns why the rules cannot be set, naming the rule and its field, or nil.
func (f Faults) Validate() error {
	if len(f.Rules) == 0 {
		return errors.New("rules: none given (clear the faults to set none)")
	}
	for i, d := range f.Rules {
		if err := d.Validate(); err != nil {
			return fmt.Errorf("rules[%d]: %w", i, err)
		}
	}
	return nil
}

// Validate returns why the rule cannot be set, naming the field, or nil.
func (d DiskFault) Validate() error {
	if !slices.Contains(FaultKinds, d.Kind) {
		return fmt.Errorf("kind %q: not one of %v", d.Kind, FaultKinds)
	}
	if !slices.Contains(FaultOps, d.Op) && !(d.Kind == KindFull && d.Op == "") {
		return fmt.Errorf("op %q: not one of %v", d.Op, FaultOps)
	}
	if _, err := CompilePath(d.Path); err != nil {
		return fmt.Errorf("path: %w", err)
	}
	if d.Kind == KindFull {
		if d.Op != OpWrite && d.Op != "" {
			return fmt.Errorf("op %q: a full disk fails writes only (%q)", d.Op, OpWrite)
		}
		if d.Once {
			return errors.New("once: a full disk stays full until cleared")
		}
		if d.AfterBytes < 0 {
			return fmt.Errorf("after_bytes %d: negative", d.AfterBytes)
		}
	} else if d.AfterBytes != 0 {
		return fmt.Errorf("after_bytes: only a %q rule takes one", KindFull)
	}
	if d.Kind != KindSlow {
		if d.Delay != "" {
			return fmt.Errorf("delay: only a %q rule takes one", KindSlow)
		}
		return nil
	}
	delay, err := time.ParseDuration(d.Delay)
	if err != nil {
		return fmt.Errorf("delay %q: not a Go duration (such as 250ms)", d.Delay)
	}
	if delay <= 0 {
		return fmt.Errorf("delay %q: not positive", d.Delay)
	}
	return nil
}

// DelayDuration is a valid slow rule's Delay, 0 for any other.
func (d DiskFault) DelayDuration() time.Duration {
	delay, _ := time.ParseDuration(d.Delay)
	return delay
}

// PathPattern matches paths relative to the mount's root ("verity-0/orders-0/0.log"), one
// segment at a time: a segment "**" matches any number of segments (none included), any other
// segment matches one segment as path.Match does ("*.log", "orders-[0-9]"). A lone "*" matches
// every path, as "**" does.
type PathPattern struct {
	segs []string
	// literal[i] is whether segs[i] has no wildcard: a string comparison is all it needs, and
	// patterns are matched on every faulted call.
	literal []bool
}

// CompilePath parses pattern, or returns why it is not one.
func CompilePath(pattern string) (PathPattern, error) {
	switch {
	case pattern == "":
		return PathPattern{}, errors.New(`empty (use "**" for every path)`)
	case pattern == "*":
		return PathPattern{segs: []string{"**"}, literal: []bool{false}}, nil
	case strings.HasPrefix(pattern, "/"):
		return PathPattern{}, fmt.Errorf("%q: absolute; paths are relative to the mount's root", pattern)
	}
	segs := strings.Split(pattern, "/")
	literal := make([]bool, len(segs))
	for i, s := range segs {
		literal[i] = !strings.ContainsAny(s, `*?[\`)
		switch {
		case s == "" || s == "." || s == "..":
			return PathPattern{}, fmt.Errorf("%q: segment %q (patterns are clean relative paths)", pattern, s)
		case s != "**" && strings.Contains(s, "**"):
			return PathPattern{}, fmt.Errorf("%q: ** must be a whole segment", pattern)
		}
		if _, err := path.Match(s, ""); err != nil {
			return PathPattern{}, fmt.Errorf("%q: segment %q: %w", pattern, s, err)
		}
	}
	return PathPattern{segs: segs, literal: literal}, nil
}

// Match reports whether the clean relative path name ("" for the root) matches.
func (p PathPattern) Match(name string) bool { return matchSegs(p.segs, p.literal, name) }

// matchSegs matches name, a path of zero or more segments ("" has none), against segs.
func matchSegs(segs []string, literal []bool, name string) bool {
	for len(segs) > 0 {
		if segs[0] == "**" {
			for {
				if matchSegs(segs[1:], literal[1:], name) {
					return true
				}
				if name == "" {
					return false
				}
				_, name, _ = strings.Cut(name, "/")
			}
		}
		if name == "" {
			return false
		}
		seg, rest, _ := strings.Cut(name, "/")
		if !matchSeg(segs[0], literal[0], seg) {
			return false
		}
		segs, literal, name = segs[1:], literal[1:], rest
	}
	return name == ""
}

func matchSeg(pattern string, literal bool, seg string) bool {
	if literal {
		return pattern == seg
	}
	ok, _ := path.Match(pattern, seg)
	return ok
}
