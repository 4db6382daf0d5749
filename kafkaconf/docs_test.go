package kafkaconf

import (
	"os"
	"strings"
	"testing"
)

// docs/clients.md describes every client and capability the code lists.
func TestClientsDocNamesEveryEntry(t *testing.T) {
	b, err := os.ReadFile("../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, c := range Clients() {
		if !strings.Contains(doc, "`"+c.Module+"`") {
			t.Errorf("docs/clients.md does not name %s's module %s", c.Name, c.Module)
		}
	}
	for _, c := range Capabilities() {
		if !strings.Contains(doc, "| `"+string(c)+"` |") {
			t.Errorf("the capability table lacks %s", c)
		}
	}
}
