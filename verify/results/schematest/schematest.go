// Package schematest checks documents against the JSON Schemas in docs/schema: results.json,
// the history header, a suite's suite.json and the remote client protocol's messages, what other
// tools read and write. Tests use it on what
// the code writes, so that the schemas and the writers cannot drift apart.
//
// The validator is github.com/santhosh-tekuri/jsonschema/v6: it implements draft 2020-12 in
// full, resolves the schemas' references between files, depends on nothing beyond the standard
// library and golang.org/x/text, and is kept up by its author.
package schematest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The schemas, by file name in docs/schema.
const (
	Results       = "results.schema.json"
	HistoryHeader = "history-header.schema.json"
	Suite         = "suite.schema.json"
	// ClientProtocol is one line of the remote client protocol, either way.
	ClientProtocol = "client-protocol.schema.json"
)

// Dir is docs/schema, found from this file's place in the repository.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "schema")
}

// Check validates doc, a JSON document, against the schema named.
func Check(schema string, doc []byte) error {
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(filepath.Join(Dir(), schema))
	if err != nil {
		return fmt.Errorf("compiling %s: %w", schema, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("reading the document: %w", err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("against %s: %w", schema, err)
	}
	return nil
}

// Valid fails t unless doc is valid against the schema named.
func Valid(t testing.TB, schema string, doc []byte) {
	t.Helper()
	if err := Check(schema, doc); err != nil {
		t.Errorf("%v", err)
	}
}
