package scenarios

// YAML library: go.yaml.in/yaml/v3, the YAML organisation's continuation of gopkg.in/yaml.v3.
// It was already in the module graph (testify needs it), so it adds no module; it has no
// dependencies of its own, gives line numbers on every node and strict decoding
// (Decoder.KnownFields). github.com/goccy/go-yaml would have been a new module for features
// (comments, path queries) a scenario file does not need.

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads the scenario in the YAML file at path (see Parse).
func Load(path string) (Resolved, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Resolved{}, fmt.Errorf("loading scenario: %w", err)
	}
	s, err := Parse(b)
	if err != nil {
		return Resolved{}, fmt.Errorf("loading scenario %s: %w", path, err)
	}
	return s, nil
}

// Parse reads one scenario from YAML, strictly: a field the scenario does not have, a value of
// the wrong type, a second document, or a setting that Validate refuses is an error. Problems
// with fields come back as Errors, each naming the field's path, its line and what it accepts.
// Omitted fields take their defaults.
func Parse(b []byte) (Resolved, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return Resolved{}, fmt.Errorf("reading YAML: %w", err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return Resolved{}, errors.New("reading YAML: the document is empty")
	}
	sc := &schema{lines: map[string]int{}, budget: maxNodes}
	sc.check(doc.Content[0], reflect.TypeFor[Scenario](), "")
	if len(sc.errs) > 0 {
		return Resolved{}, sc.errs
	}
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		// The schema walk catches what it knows; this is a backstop for the rest.
		return Resolved{}, fmt.Errorf("decoding the scenario: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Resolved{}, errors.New("reading YAML: more than one document: a file holds one scenario")
	}
	r, err := s.Resolve()
	if err != nil {
		var es Errors
		if errors.As(err, &es) {
			for _, e := range es {
				e.Line = sc.line(e.Path)
			}
		}
		return Resolved{}, err
	}
	return r, nil
}

// YAML returns s as a YAML document that Parse reads back to the same scenario.
func (s Scenario) YAML() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("encoding scenario %s as YAML: %w", s.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding scenario %s as YAML: %w", s.Name, err)
	}
	return buf.Bytes(), nil
}

// schema walks a YAML node tree beside the Go type it will decode into, before decoding, so
// that an unknown field or a value of the wrong type is reported with its path, its line and
// what the field accepts — yaml's own errors name Go types and lines only.
type schema struct {
	errs  Errors
	lines map[string]int // field path -> line, to place Validate's errors in the file
	// budget bounds the nodes visited: aliases can make a small file a huge tree ("billion
	// laughs"), and the walk follows them.
	budget int
}

// maxNodes is far more than any scenario has.
const maxNodes = 100_000

func (sc *schema) addf(path string, line int, format string, args ...any) {
	sc.errs = append(sc.errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...), Line: line})
}

// line returns the line of path, or of its closest parent that has one.
func (sc *schema) line(path string) int {
	for path != "" {
		if l, ok := sc.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// fieldsOf returns the yaml names of struct type t's fields (inline structs flattened).
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range fieldsOf(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func (sc *schema) check(n *yaml.Node, t reflect.Type, path string) {
	if sc.budget--; sc.budget == 0 {
		sc.addf(path, n.Line, "the document expands to more than %d nodes (through aliases?): not a scenario", maxNodes)
	}
	if sc.budget <= 0 {
		return
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if path != "" {
		sc.lines[path] = n.Line
	}
	if isNull(n) {
		return // a null leaves the field at its zero value, which defaults fill
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		// A value with a parser of its own (a duration, acks, an anomaly name): the parser
		// says what it accepts.
		if n.Kind != yaml.ScalarNode {
			sc.addf(path, n.Line, "want a single value, not a %s", kindName(n))
		} else if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			sc.addf(path, n.Line, "%v", err)
		}
		return
	}
	display := path
	if display == "" {
		display = "the scenario"
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			sc.addf(path, n.Line, "want a mapping of fields (%s)", strings.Join(sortedKeys(fieldsOf(t)), ", "))
			return
		}
		fields := fieldsOf(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				names := sortedKeys(fields)
				sc.addf(join(path, k.Value), k.Line, "unknown field; %s has %s%s", display, strings.Join(names, ", "), suggest(k.Value, names))
				continue
			}
			sc.check(v, ft, join(path, k.Value))
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			sc.addf(path, n.Line, "want a list")
			return
		}
		for i, v := range n.Content {
			sc.check(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			sc.addf(path, n.Line, "want a mapping of names to values")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sc.check(v, t.Elem(), fmt.Sprintf("%s[%s]", path, strconv.Quote(k.Value)))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			sc.addf(path, n.Line, "want a single value, not a %s", kindName(n))
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			sc.addf(path, n.Line, "%s: want true or false", shown(n))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			sc.addf(path, n.Line, "%s: want a whole number", shown(n))
			return
		}
		if _, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, t.Bits()); err != nil {
			sc.addf(path, n.Line, "%s: out of range", n.Value)
		}
	case reflect.Float32, reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!float" && n.ShortTag() != "!!int") {
			sc.addf(path, n.Line, "%s: want a number", shown(n))
		}
	}
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "value"
}

// shown writes a node's value for a message.
func shown(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return "a " + kindName(n)
	}
	return strconv.Quote(n.Value)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
