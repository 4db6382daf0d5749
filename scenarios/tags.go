package scenarios

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Tag groups scenarios for `verity suite --tag`. A built-in names its tags in its definition;
// TagSpecs is the one list of them.
type Tag string

// The tags.
const (
	TagLab          Tag = "lab"
	TagDurability   Tag = "durability"
	TagLiveness     Tag = "liveness"
	TagDelivery     Tag = "delivery"
	TagTransactions Tag = "transactions"
	TagConsumers    Tag = "consumers"
	TagSinks        Tag = "sinks"
	TagQueues       Tag = "queues"
	TagPowerLoss    Tag = "power-loss"
	TagDisk         Tag = "disk"
	TagRegression   Tag = "regression"
	TagExplore      Tag = "explore"
	TagUpgrade      Tag = "upgrade"
	TagSlow         Tag = "slow"
	TagChance       Tag = "chance"
)

// SlowDuration is how long a scenario's workloads run, at least, for it to be tagged slow.
const SlowDuration = 2 * time.Minute

// TagSpec is a tag and what it marks.
type TagSpec struct {
	Tag Tag
	Doc string
}

// TagSpecs lists every tag, in the order listings show them.
func TagSpecs() []TagSpec {
	return []TagSpec{
		{TagLab, "the harness's lab checks: one fault, and what Kafka does about it"},
		{TagDurability, "acknowledged writes under broker, disk and network faults: lost or kept, as the settings say"},
		{TagLiveness, "a stated bound on the clients' progress under faults: how long a client may go without it"},
		{TagDelivery, "producer retries and application resends: duplicates and order when answers are lost"},
		{TagTransactions, "transactions and read-process-write: aborts, fencing, exactly-once"},
		{TagConsumers, "consumer groups: rebalances and committed positions"},
		{TagSinks, "consumers with side effects in PostgreSQL or an HTTP ledger (docs/sinks.md)"},
		{TagQueues, "share groups (KIP-932): records acquired, acknowledged and delivered again (docs/share-groups.md)"},
		{TagPowerLoss, "nodes on the lazy filesystem whose power is cut (docs/power-loss.md)"},
		{TagDisk, "nodes on the lazy filesystem whose disk fails, fills up or slows down (docs/power-loss.md, Disk faults)"},
		{TagRegression, "a known bug found again: its bad side and its fixed side"},
		{TagExplore, "a search for what is not known yet: faults drawn at random"},
		{TagUpgrade, "a rolling upgrade of the cluster under load"},
		{TagSlow, "workloads that run 2 minutes or more"},
		{TagChance, "a scenario that finds the bug it provokes in most runs, not every run (a regression's bad side, an expected fail): a nightly of one run per cell leaves it out (--skip-tag chance)"},
	}
}

// Tags lists every tag, in TagSpecs' order.
func Tags() []Tag {
	var out []Tag
	for _, t := range TagSpecs() {
		out = append(out, t.Tag)
	}
	return out
}

func tagNames() []string {
	var out []string
	for _, t := range Tags() {
		out = append(out, string(t))
	}
	return out
}

// ParseTag reads a tag's name.
func ParseTag(s string) (Tag, error) {
	if t := Tag(strings.TrimSpace(s)); slices.Contains(Tags(), t) {
		return t, nil
	}
	return "", fmt.Errorf("tag %q: want one of %s%s", s, strings.Join(tagNames(), ", "), suggest(s, tagNames()))
}

// UnmarshalText reads what ParseTag reads.
func (t *Tag) UnmarshalText(b []byte) error {
	v, err := ParseTag(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// HasTag reports whether s carries tag t.
func (s Scenario) HasTag(t Tag) bool { return slices.Contains(s.Tags, t) }

// Select returns the built-ins that patterns or tags choose, less those that carry a tag of
// skip, in Builtins' order: a pattern is a name or a glob (lab-*, *-ack-loss: path.Match), a tag
// chooses every built-in that carries it, and a built-in chosen by any of them is in. Neither
// patterns nor tags given: every built-in (skip slow: a quick nightly). Patterns that match
// nothing, unknown tags and a choice that skip leaves empty are one error naming what exists.
func Select(patterns, tags, skip []string) ([]Scenario, error) {
	all := Builtins()
	chosen := make([]bool, len(all))
	if len(patterns) == 0 && len(tags) == 0 {
		for i := range chosen {
			chosen[i] = true
		}
	}
	var errs []string
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if _, err := path.Match(p, ""); err != nil {
			errs = append(errs, fmt.Sprintf("scenario pattern %q: %v", p, err))
			continue
		}
		hit := false
		for i, s := range all {
			if ok, _ := path.Match(p, s.Name); ok {
				chosen[i], hit = true, true
			}
		}
		if !hit {
			errs = append(errs, fmt.Sprintf("no built-in scenario matches %q%s", p, suggest(p, Names())))
		}
	}
	parseTags := func(names []string) []Tag {
		var out []Tag
		for _, name := range names {
			t, err := ParseTag(name)
			if err != nil {
				errs = append(errs, fmt.Sprintf("no tag %q%s", strings.TrimSpace(name), suggest(name, tagNames())))
				continue
			}
			out = append(out, t)
		}
		return out
	}
	want, drop := parseTags(tags), parseTags(skip)
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "; ") + "; built-ins: " + strings.Join(Names(), ", ") +
			"; tags: " + strings.Join(tagNames(), ", "))
	}
	var out []Scenario
	for i, s := range all {
		if (chosen[i] || slices.ContainsFunc(want, s.HasTag)) && !slices.ContainsFunc(drop, s.HasTag) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("every scenario chosen carries a skipped tag (%s): nothing left to run", strings.Join(skip, ", "))
	}
	return out, nil
}
