package scenarios

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// Every built-in has a tag, every tag it has is in the list, the list names each tag once and
// each is used; the tags that say what a scenario is agree with what it is.
func TestBuiltinTags(t *testing.T) {
	used := map[Tag]bool{}
	for _, s := range Builtins() {
		if len(s.Tags) == 0 {
			t.Errorf("%s has no tag: give it one of %s", s.Name, strings.Join(tagNames(), ", "))
		}
		for _, tag := range s.Tags {
			if !slices.Contains(Tags(), tag) {
				t.Errorf("%s: tag %q is not in TagSpecs", s.Name, tag)
			}
			used[tag] = true
		}
		for _, c := range []struct {
			tag  Tag
			is   bool
			what string
		}{
			{TagRegression, s.Regression != nil, "a regression section"},
			{TagSinks, len(s.Workload.Sinks) > 0, "a sink"},
			{TagQueues, s.Workload.Share.Members > 0, "a share group"},
			{TagPowerLoss, s.schedules(func(f FaultSpec) bool { return f.Name == FaultPowerLoss }), "a power-loss fault"},
			{TagDisk, s.schedules(func(f FaultSpec) bool { return f.Kind == KindDisk }), "a disk fault"},
			{TagSlow, s.Duration.Std() >= SlowDuration, "a duration of " + SlowDuration.String() + " or more"},
		} {
			if s.HasTag(c.tag) != c.is {
				t.Errorf("%s: tagged %s is %v, has %s is %v: they must agree", s.Name, c.tag, s.HasTag(c.tag), c.what, c.is)
			}
		}
		if lazy := s.HasTag(TagPowerLoss) || s.HasTag(TagDisk); lazy != s.Topology.PowerLoss {
			t.Errorf("%s: tagged power-loss or disk is %v, has nodes on the lazy filesystem is %v: they must agree", s.Name, lazy, s.Topology.PowerLoss)
		}
	}
	seen := map[Tag]bool{}
	for _, tag := range Tags() {
		if seen[tag] {
			t.Errorf("tag %s listed twice", tag)
		}
		seen[tag] = true
		if !used[tag] {
			t.Errorf("tag %s marks no built-in", tag)
		}
	}
}

// docs/scenarios.md lists every tag, and each built-in's row says its tags.
func TestDocsNameEveryTag(t *testing.T) {
	b, err := os.ReadFile("../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, tag := range Tags() {
		if !strings.Contains(doc, "| `"+string(tag)+"` |") {
			t.Errorf("the tag table lacks %s", tag)
		}
	}
	for _, s := range Builtins() {
		var want []string
		for _, tag := range s.Tags {
			want = append(want, "`"+string(tag)+"`")
		}
		row := ""
		for line := range strings.SplitSeq(doc, "\n") {
			if strings.HasPrefix(line, "| `"+s.Name+"` |") {
				row = line
			}
		}
		if !strings.HasSuffix(row, "| "+strings.Join(want, " ")+" |") {
			t.Errorf("the built-in table's row of %s does not end with its tags %s: %q", s.Name, strings.Join(want, " "), row)
		}
	}
}

func TestSelect(t *testing.T) {
	names := func(ss []Scenario) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return strings.Join(out, " ")
	}
	all, err := Select(nil, nil, nil)
	if err != nil || len(all) != len(Builtins()) {
		t.Fatalf("nothing given: %d scenarios, %v; want every built-in", len(all), err)
	}
	for _, c := range []struct {
		patterns, tags, skip []string
		want                 string
	}{
		{[]string{"default"}, nil, nil, "default"},
		{[]string{"lab-*"}, nil, nil, "lab-follower-down lab-isr-below-min lab-leader-failover lab-abort-invisible lab-fencing lab-lso-hold"},
		// Builtins' order whatever the order given, each once.
		{[]string{"lab-fencing", "default", "lab-f*"}, nil, nil, "default lab-follower-down lab-fencing"},
		{nil, []string{"regression"}, nil, "regress-kafka-17754 regress-franz-endtxn-unconfirmed regress-sarama-stable-offsets regress-kip890-hanging-txn regress-kip966-elr regress-kafka-20321 regress-share-stale-state-write"},
		{nil, []string{"upgrade", "explore"}, nil, "explore-request-faults explore-every-fault explore-txn-read-every-fault explore-sink-every-fault upgrade-eos"},
		// A name and a tag: either chooses.
		{[]string{"default"}, []string{"upgrade"}, nil, "default upgrade-eos"},
		{[]string{"*-ack-loss"}, nil, nil, "idempotent-ack-loss idempotent-inflight5-ack-loss plain-ack-loss"},
		// A skipped tag leaves out what carries it, whatever chose it.
		{nil, []string{"regression"}, []string{"slow"}, "regress-kip890-hanging-txn regress-kip966-elr regress-kafka-20321 regress-share-stale-state-write"},
		{[]string{"upgrade-eos", "default"}, nil, []string{"slow", "lab"}, "default"},
	} {
		got, err := Select(c.patterns, c.tags, c.skip)
		if err != nil {
			t.Errorf("%v %v skip %v: %v", c.patterns, c.tags, c.skip, err)
			continue
		}
		if names(got) != c.want {
			t.Errorf("%v %v skip %v: %s, want %s", c.patterns, c.tags, c.skip, names(got), c.want)
		}
	}
	quick, err := Select(nil, nil, []string{"slow"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if in := slices.ContainsFunc(quick, func(q Scenario) bool { return q.Name == s.Name }); in == s.HasTag(TagSlow) {
			t.Errorf("--skip-tag slow: %s (tags %v) in the quick suite: %v", s.Name, s.Tags, in)
		}
	}
}

// What matches nothing is one error that names every mistake and what exists.
func TestSelectUnknown(t *testing.T) {
	_, err := Select([]string{"defualt", "lab-*", "nightly-*"}, []string{"regresion", "lab"}, []string{"slo"})
	if err == nil {
		t.Fatal("unknown names and tags were accepted")
	}
	msg := err.Error()
	for _, want := range []string{`no built-in scenario matches "defualt" (did you mean default?)`, `no built-in scenario matches "nightly-*"`,
		`no tag "regresion" (did you mean regression?)`, `no tag "slo" (did you mean slow?)`, "built-ins: default, lab-follower-down", "tags: lab, durability"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, `"lab-*"`) || strings.Contains(msg, `tag "lab"`) {
		t.Errorf("error %q names a pattern or tag that matched", msg)
	}
	if _, err := Select([]string{"lab-*"}, nil, []string{"lab"}); err == nil || !strings.Contains(err.Error(), "nothing left to run") {
		t.Errorf("a skip that leaves nothing: %v", err)
	}
	if _, err := Select([]string{"lab-["}, nil, nil); err == nil || !strings.Contains(err.Error(), `scenario pattern "lab-["`) {
		t.Errorf("a malformed glob: %v", err)
	}
}

// A scenario file may carry tags; an unknown one, or one twice, is refused with its path.
func TestValidateTags(t *testing.T) {
	s := Default()
	s.Tags = []Tag{TagLab, "nightly", TagLab}
	err := s.Validate()
	if err == nil || !strings.Contains(err.Error(), `tags[1]: tag "nightly": want one of lab`) || !strings.Contains(err.Error(), `tags[2]: "lab" is listed twice`) {
		t.Errorf("error %v", err)
	}
}
