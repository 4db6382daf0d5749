package main

import (
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/verity-kafka/verity/scenarios"
)

// Every flag that forces a setting comes from scenarios.Knobs: run takes each knob once, matrix
// takes the axis knobs as comma-separated lists (and the others once), check the knobs the
// checker judges by.

// knobUse is how a command takes the knobs.
type knobUse int

const (
	useRun knobUse = iota
	useMatrix
	useCheck
)

// takes says whether a command of use u has a flag for k.
func (u knobUse) takes(k scenarios.Knob) bool {
	if u == useCheck {
		return k.Header != nil
	}
	return k.Scenario != nil
}

// list says whether k's flag holds a comma-separated list of values.
func (u knobUse) list(k scenarios.Knob) bool { return u == useMatrix && k.Axis }

// knobFlags are the flags of the knobs a command of use u takes.
func knobFlags(u knobUse) []cli.Flag {
	var out []cli.Flag
	for _, k := range scenarios.Knobs() {
		if !u.takes(k) {
			continue
		}
		usage := k.Usage
		if u == useCheck {
			usage = "judge as if " + usage
		}
		switch {
		case u.list(k):
			out = append(out, &cli.StringFlag{Name: k.Name, Usage: usage + "; comma-separated values make an axis"})
		case k.Kind == scenarios.KnobBool:
			out = append(out, &cli.BoolFlag{Name: k.Name, Usage: usage})
		default:
			// Numbers and durations too: the knob parses them, so that a bad value is told with
			// the flag's name and what it wants, not in strconv's or time's words.
			out = append(out, &cli.StringFlag{Name: k.Name, Usage: usage})
		}
	}
	return out
}

// knobValue is the value given to k's flag, as the knob reads it.
func knobValue(cmd *cli.Command, k scenarios.Knob, u knobUse) string {
	switch {
	case u.list(k):
		return cmd.String(k.Name)
	case k.Kind == scenarios.KnobBool:
		return strconv.FormatBool(cmd.Bool(k.Name))
	}
	return cmd.String(k.Name)
}

// knobSettings are the knobs given on cmd's command line, single-valued ones only (a matrix's
// axes are read by axes).
func knobSettings(cmd *cli.Command, u knobUse) []scenarios.Setting {
	var out []scenarios.Setting
	for _, k := range scenarios.Knobs() {
		if u.takes(k) && !u.list(k) && cmd.IsSet(k.Name) {
			out = append(out, scenarios.Setting{Knob: k, Value: knobValue(cmd, k, u)})
		}
	}
	return out
}

// axisValues splits an axis flag's list.
func axisValues(v string) []string {
	var vals []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			vals = append(vals, s)
		}
	}
	return vals
}
