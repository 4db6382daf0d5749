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
		if !strings.Contains(doc, "`"+c.Library()+"`") {
			t.Errorf("docs/clients.md does not name %s's library %s", c.Name, c.Library())
		}
	}
	for _, c := range Capabilities() {
		if !strings.Contains(doc, "| `"+string(c)+"` |") {
			t.Errorf("the capability table lacks %s", c)
		}
	}
}

// make images builds an image of every release the code lists, and no other by default.
func TestImageScriptBuildsEveryRelease(t *testing.T) {
	b, err := os.ReadFile("../docker/build-images.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`KAFKA_VERSIONS_DEFAULT="` + strings.Join(KafkaVersions(), " ") + `"`,
		`KAFKA_DEFAULT="` + string(DefaultKafkaVersion) + `"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("docker/build-images.sh does not say %s: keep it equal to kafkaconf.Releases() and DefaultKafkaVersion", want)
		}
	}
}

// docs/kafka-versions.md describes every release and every feature the code lists.
func TestVersionsDocNamesEveryEntry(t *testing.T) {
	b, err := os.ReadFile("../docs/kafka-versions.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, r := range Releases() {
		if !strings.Contains(doc, "| "+string(r.Version)+" |") {
			t.Errorf("docs/kafka-versions.md's release table lacks %s", r.Version)
		}
	}
	for _, f := range Features() {
		if !strings.Contains(doc, "`"+string(f.Name)+"`") {
			t.Errorf("docs/kafka-versions.md does not name the feature %s", f.Name)
		}
	}
}
