package control

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	ok := []DiskFault{
		{Kind: KindError, Op: OpWrite, Path: "**"},
		{Kind: KindError, Op: OpFsync, Path: "*/__cluster_metadata-0/*", Once: true},
		{Kind: KindError, Op: OpRead, Path: "verity-0/*.log"},
		{Kind: KindFull, Path: "*", AfterBytes: 1 << 20},
		{Kind: KindFull, Op: OpWrite, Path: "**"},
		{Kind: KindSlow, Op: OpFsync, Path: "**", Delay: "250ms"},
		{Kind: KindSlow, Op: OpWrite, Path: "a/**/b", Delay: "1s", Once: true},
	}
	for _, d := range ok {
		require.NoError(t, d.Validate(), "%+v", d)
	}
	bad := []struct {
		d    DiskFault
		want string
	}{
		{DiskFault{Kind: "boom", Op: OpWrite, Path: "**"}, `kind "boom": not one of [error full slow]`},
		{DiskFault{Kind: KindError, Op: "unlink", Path: "**"}, `op "unlink": not one of [write fsync read]`},
		{DiskFault{Kind: KindError, Path: "**"}, `op "": not one of`},
		{DiskFault{Kind: KindError, Op: OpWrite}, `path: empty (use "**" for every path)`},
		{DiskFault{Kind: KindError, Op: OpWrite, Path: "/abs"}, `path: "/abs": absolute`},
		{DiskFault{Kind: KindError, Op: OpWrite, Path: "a//b"}, `path: "a//b": segment ""`},
		{DiskFault{Kind: KindError, Op: OpWrite, Path: "a/../b"}, `path: "a/../b": segment ".."`},
		{DiskFault{Kind: KindError, Op: OpWrite, Path: "a**"}, `path: "a**": ** must be a whole segment`},
		{DiskFault{Kind: KindError, Op: OpWrite, Path: "logs/[x"}, `path: "logs/[x": segment "[x": syntax error in pattern`},
		{DiskFault{Kind: KindError, Op: OpWrite, Path: "**", AfterBytes: 3}, `after_bytes: only a "full" rule takes one`},
		{DiskFault{Kind: KindError, Op: OpWrite, Path: "**", Delay: "1s"}, `delay: only a "slow" rule takes one`},
		{DiskFault{Kind: KindFull, Op: OpFsync, Path: "**"}, `op "fsync": a full disk fails writes only ("write")`},
		{DiskFault{Kind: KindFull, Path: "**", Once: true}, `once: a full disk stays full until cleared`},
		{DiskFault{Kind: KindFull, Path: "**", AfterBytes: -1}, `after_bytes -1: negative`},
		{DiskFault{Kind: KindSlow, Op: OpFsync, Path: "**"}, `delay "": not a Go duration`},
		{DiskFault{Kind: KindSlow, Op: OpFsync, Path: "**", Delay: "soon"}, `delay "soon": not a Go duration`},
		{DiskFault{Kind: KindSlow, Op: OpFsync, Path: "**", Delay: "0s"}, `delay "0s": not positive`},
	}
	for _, c := range bad {
		require.ErrorContains(t, c.d.Validate(), c.want, "%+v", c.d)
	}

	require.EqualError(t, Faults{}.Validate(), "rules: none given (clear the faults to set none)")
	err := Faults{Rules: []DiskFault{ok[0], {Kind: "boom", Path: "**"}}}.Validate()
	require.ErrorContains(t, err, `rules[1]: kind "boom"`)
	require.NoError(t, FaultRequest{Action: ActionClear}.Validate())
	require.ErrorContains(t, FaultRequest{Action: ActionClear, Rules: ok}.Validate(), "rules: a clear takes none")
	require.ErrorContains(t, FaultRequest{Action: "reset"}.Validate(), `action "reset": not one of [set clear]`)
}

func TestPathPattern(t *testing.T) {
	cases := []struct {
		pattern string
		yes, no []string
	}{
		{"**", []string{"", "a", "a/b/c.log"}, nil},
		{"*", []string{"", "a", "a/b/c.log"}, nil},
		{"*/__cluster_metadata-0/*", []string{"verity-0/__cluster_metadata-0/00000.log"},
			[]string{"verity-0/__cluster_metadata-0", "__cluster_metadata-0/x", "a/b/__cluster_metadata-0/x"}},
		{"verity-0/*.log", []string{"verity-0/0.log"}, []string{"verity-0/orders-0/0.log", "verity-1/0.log", "verity-0/0.index"}},
		{"**/*.log", []string{"0.log", "a/0.log", "a/b/0.log"}, []string{"a/0.index", "a.log/x"}},
		{"a/**", []string{"a", "a/b", "a/b/c"}, []string{"b", "ab"}},
		{"a/**/c", []string{"a/c", "a/b/c", "a/x/y/c"}, []string{"a/c/d", "c"}},
		{"orders-[0-9]/*", []string{"orders-3/x"}, []string{"orders-10/x"}},
	}
	for _, c := range cases {
		p, err := CompilePath(c.pattern)
		require.NoError(t, err, c.pattern)
		for _, name := range c.yes {
			require.True(t, p.Match(name), "%q should match %q", c.pattern, name)
		}
		for _, name := range c.no {
			require.False(t, p.Match(name), "%q should not match %q", c.pattern, name)
		}
	}
}

// The JSON names are the contract the harness writes.
func TestFaultJSON(t *testing.T) {
	var f Faults
	require.NoError(t, json.Unmarshal([]byte(`{"rules":[{"kind":"full","path":"**","after_bytes":10},
		{"kind":"slow","op":"fsync","path":"*","delay":"1s","once":true}]}`), &f))
	require.Equal(t, Faults{Rules: []DiskFault{
		{Kind: KindFull, Path: "**", AfterBytes: 10},
		{Kind: KindSlow, Op: OpFsync, Path: "*", Delay: "1s", Once: true},
	}}, f)
	require.NoError(t, f.Validate())
}
