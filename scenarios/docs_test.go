package scenarios

import (
	"os"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/kafkaconf"
)

// The reference in docs/scenarios.md names every knob, fault, built-in and capability the code
// defines: a new entry in one of the lists is not done until a reader can find it.
func TestDocsNameEveryEntry(t *testing.T) {
	b, err := os.ReadFile("../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, k := range Knobs() {
		if !strings.Contains(doc, "| `--"+k.Name+"` |") {
			t.Errorf("the knob table lacks --%s", k.Name)
		}
	}
	for _, f := range FaultSpecs() {
		if !strings.Contains(doc, "| `"+string(f.Name)+"` |") {
			t.Errorf("the fault catalogue lacks %s", f.Name)
		}
	}
	for _, name := range Names() {
		if !strings.Contains(doc, "| `"+name+"` |") {
			t.Errorf("the built-in table lacks %s", name)
		}
	}
	for _, c := range kafkaconf.Capabilities() {
		if !strings.Contains(doc, "`"+string(c)+"`") {
			t.Errorf("requires does not list capability %s", c)
		}
	}
	for _, c := range kafkaconf.ClientNames() {
		if !strings.Contains(doc, "`"+c+"`") {
			t.Errorf("client.name does not list %s", c)
		}
	}
}
