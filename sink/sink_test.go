package sink

import (
	"strings"
	"testing"
)

func TestModes(t *testing.T) {
	seen := map[Mode]bool{}
	for _, in := range Modes() {
		if seen[in.Mode] || in.About == "" || (in.Store != Postgres && in.Store != Ledger) {
			t.Errorf("mode %+v: repeated or incomplete", in)
		}
		seen[in.Mode] = true
		if m, err := Parse(" " + string(in.Mode) + " "); err != nil || m != in.Mode {
			t.Errorf("Parse(%q) = %q, %v", in.Mode, m, err)
		}
	}
	if _, err := Parse("naïve"); err == nil || !strings.Contains(err.Error(), "unique-key") {
		t.Errorf("an unknown mode must be refused with the list: %v", err)
	}
	var m Mode
	if err := m.UnmarshalText([]byte("outbox-x")); err == nil {
		t.Error("UnmarshalText took an unknown mode")
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"sink", "sink_2", "a"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Sink", "sink-2", "s;drop", strings.Repeat("a", 41)} {
		if err := CheckName(bad); err == nil {
			t.Errorf("%q taken", bad)
		}
	}
}
