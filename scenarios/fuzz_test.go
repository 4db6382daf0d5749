package scenarios

import (
	"reflect"
	"testing"
)

// FuzzParse: Parse never panics, and whatever it accepts is valid and survives a YAML round
// trip unchanged.
func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte("name: x\nclient: {acks: 1}\nfaults: {timeline: [{at: 5s, fault: kill, duration: 5s, target: {role: leader-of}}]}\n"))
	f.Add([]byte("name: x\nfaults: {periodic: {interval: 10s, set: [{fault: compound, parts: [{fault: bridge}, {fault: pause, target: {role: node, node: 1}}]}]}}\n"))
	f.Add([]byte("name: &a x\ntopics: [{name: *a}]\n"))
	for _, s := range Builtins()[:3] {
		b, err := s.YAML()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Parse(in)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse accepted an invalid scenario: %v", err)
		}
		b, err := s.YAML()
		if err != nil {
			t.Fatalf("YAML of a parsed scenario: %v", err)
		}
		back, err := Parse(b)
		if err != nil {
			t.Fatalf("re-parsing: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("round trip changed the scenario:\n%+v\n%+v", s, back)
		}
	})
}
