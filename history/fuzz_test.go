package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

// FuzzReader feeds arbitrary bytes after a valid header. The reader must never panic and
// must end with io.EOF or an error; and every line the decoder accepts must be valid JSON and
// survive an encode/decode round trip unchanged.
func FuzzReader(f *testing.F) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{})
	if err != nil {
		f.Fatal(err)
	}
	writeSamples(f, w)
	_, body, _ := bytes.Cut(buf.Bytes(), []byte("\n"))
	f.Add(body)
	for _, line := range bytes.Split(body, []byte("\n")) {
		f.Add(line)
		f.Add(line[:len(line)/2])
	}
	for _, line := range trickyLines {
		f.Add([]byte(line))
	}
	f.Add([]byte("\n\n{}\n"))
	f.Add([]byte(`{"i":0,"p":1,"type":"ok","f":"kill","value":[[[[[[{"a":[1e5,-0.5,"\ud800"]}]]]]]]}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		input := append([]byte(testHeader+"\n"), data...)
		r, err := NewReader(bytes.NewReader(input))
		if err != nil {
			t.Fatalf("valid header rejected: %v", err)
		}
		var op Op
		ops := 0
		for {
			err := r.Next(&op)
			if err == io.EOF {
				break
			}
			if err != nil {
				var le *LineError
				if !errors.As(err, &le) {
					t.Fatalf("error is not a *LineError: %v", err)
				}
				break
			}
			ops++
			if ops > len(data)+1 {
				t.Fatalf("more ops than input bytes")
			}
		}

		d := newDecoder()
		for _, line := range bytes.Split(data, []byte("\n")) {
			var got Op
			if d.op(line, &got) != nil {
				continue
			}
			if !json.Valid(line) {
				t.Fatalf("decoder accepted invalid JSON: %q", line)
			}
			enc, err := AppendOp(nil, got)
			if err != nil {
				t.Fatalf("cannot re-encode an accepted line %q: %v", line, err)
			}
			var back Op
			if err := newDecoder().op(enc, &back); err != nil {
				t.Fatalf("re-encoded line %q does not decode: %v", enc, err)
			}
			want := normalize(t, got)
			if !reflect.DeepEqual(want, back.Clone()) {
				t.Fatalf("round trip changed the op:\nline %q\nenc  %q", line, enc)
			}
		}
	})
}
