package history

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/kafkaconf"
)

func rec(topic string, part int32, key, value string) Record {
	return Record{Topic: topic, Partition: part, Key: key, Value: value}
}

// step is one call on a Writer; inv names the earlier step whose result is the invoke it
// completes.
type step struct {
	name  string
	inv   int // index of the invoking step, for completions
	async bool
	op    Op // Process, Type, F, Value, Error are used
}

// sampleSteps covers every kind of event the format has.
func sampleSteps() []step {
	send := rec("verity", 3, "k1", "1-1")
	weird := rec("top\"ic\\", 11, "ключ", "v \"quoted\" \\ / \n\r\t\b\f \x01\x1f é 😀 \u2028\u2029 <&>")
	big := make([]Record, 50)
	for i := range big {
		big[i] = rec("verity", 7, "", "2-"+strings.Repeat("x", i)).At(int64(100 + 2*i))
	}
	raw := func(s string) Payload { return Payload{Raw: json.RawMessage(s)} }
	c := Client
	return []step{
		{name: "send invoke", op: Op{Process: c(1), Type: Invoke, F: FSend, Value: Payload{Send: &send}}},
		{name: "send ok with offset", inv: 0, op: Op{Type: OK, Value: Payload{Send: ptr(send.At(42))}}},
		{name: "acks=0 invoke", op: Op{Process: c(2), Type: Invoke, F: FSend, Value: Payload{Send: ptr(rec("verity", 0, "", "2-1"))}}},
		{name: "acks=0 ok offset -1", inv: 2, op: Op{Type: OK, Value: Payload{Send: ptr(rec("verity", 0, "", "2-1").At(-1))}}},
		{name: "send fail", op: Op{Process: c(3), Type: Invoke, F: FSend, Value: Payload{Send: ptr(rec("verity", 1, "k", "3-1"))}}},
		{name: "fail with error", inv: 4, op: Op{Type: Fail, Value: Payload{Send: ptr(rec("verity", 1, "k", "3-1"))}, Error: "kafka server: NOT_ENOUGH_REPLICAS"}},
		{name: "weird strings invoke", op: Op{Process: c(4), Type: Invoke, F: FSend, Value: Payload{Send: &weird}}},
		{name: "info with error", inv: 6, op: Op{Type: Info, Value: Payload{Send: &weird}, Error: "kafka: timed out \"waiting\"\n"}},
		{name: "async invoke a", op: Op{Process: c(5), Type: Invoke, F: FSend, Value: Payload{Send: ptr(rec("verity", 2, "", "5-1"))}}},
		{name: "async invoke b", op: Op{Process: c(5), Type: Invoke, F: FSend, Value: Payload{Send: ptr(rec("verity", 2, "", "5-2"))}}},
		{name: "async ok b", inv: 9, async: true, op: Op{Type: OK, Value: Payload{Send: ptr(rec("verity", 2, "", "5-2").At(8))}}},
		{name: "async info a", inv: 8, async: true, op: Op{Type: Info, Value: Payload{Send: ptr(rec("verity", 2, "", "5-1"))}, Error: "EOF"}},
		{name: "txn invoke", op: Op{Process: c(6), Type: Invoke, F: FTxn, Value: Payload{Txn: &Txn{TxnID: "t-6", Intent: IntentCommit,
			Records: []Record{rec("verity", 0, "a", "6-1"), rec("other", 5, "", "6-2")}}}}},
		{name: "txn ok", inv: 12, op: Op{Type: OK, Value: Payload{Txn: &Txn{TxnID: "t-6", Intent: IntentCommit,
			Records: []Record{rec("verity", 0, "a", "6-1").At(3), rec("other", 5, "", "6-2").At(9)}}}}},
		{name: "txn abort invoke", op: Op{Process: c(6), Type: Invoke, F: FTxn, Value: Payload{Txn: &Txn{TxnID: "t-6", Intent: IntentAbort, Records: []Record{}}}}},
		{name: "txn aborted", inv: 14, op: Op{Type: Fail, Value: Payload{Txn: &Txn{TxnID: "t-6", Intent: IntentAbort}}, Error: "aborted"}},
		{name: "poll invoke", op: Op{Process: c(7), Type: Invoke, F: FPoll, Value: Payload{Poll: &Poll{Isolation: ReadCommitted, Group: "g1"}}}},
		{name: "poll ok", inv: 16, op: Op{Type: OK, Value: Payload{Poll: &Poll{Isolation: ReadCommitted, Group: "g1", Records: big}}}},
		{name: "poll empty", op: Op{Process: c(8), Type: Invoke, F: FPoll, Value: Payload{Poll: &Poll{Isolation: ReadUncommitted, Records: []Record{}}}}},
		{name: "poll ok one", inv: 18, op: Op{Type: OK, Value: Payload{Poll: &Poll{Isolation: ReadUncommitted, Records: []Record{send.At(42)}}}}},
		{name: "final-read invoke", op: Op{Process: c(9), Type: Invoke, F: FFinalRead, Value: Payload{FinalRead: &FinalRead{Topic: "verity", Partition: 7, Isolation: ReadUncommitted, From: 100}}}},
		{name: "final-read ok", inv: 20, op: Op{Type: OK, Value: Payload{FinalRead: &FinalRead{Topic: "verity", Partition: 7, Isolation: ReadUncommitted, From: 100, End: 200, Records: big}}}},
		{name: "final-read incomplete", op: Op{Process: c(9), Type: Invoke, F: FFinalRead, Value: Payload{FinalRead: &FinalRead{Topic: "verity", Partition: 8, Isolation: ReadCommitted}}}},
		{name: "final-read info incomplete", inv: 22, op: Op{Type: Info, Value: Payload{FinalRead: &FinalRead{Topic: "verity", Partition: 8, Isolation: ReadCommitted,
			End: 5, Records: []Record{}, Incomplete: true}}, Error: "deadline exceeded"}},
		{name: "rpw invoke", op: Op{Process: c(10), Type: Invoke, F: FRPW, Value: Payload{RPW: &RPW{TxnID: "rpw-10", Input: big[:2]}}}},
		{name: "rpw ok", inv: 24, op: Op{Type: OK, Value: Payload{RPW: &RPW{TxnID: "rpw-10", Input: big[:2], Output: []Record{rec("out", 0, "", "10-1").At(0)}, EndT: 77}}}},
		{name: "nemesis kill", op: Op{Process: NemesisP(), Type: Invoke, F: "kill", Value: raw(`{"nodes":[2]}`)}},
		{name: "nemesis ok", inv: 26, op: Op{Type: OK, Value: raw(`{"nodes":[2],"links":[["1","2"]],"toxic":{"type":"latency","attributes":{"latency":1e3,"x":[true,false,null]}}}`)}},
		{name: "assign", op: Op{Process: c(11), Type: Invoke, F: FAssign, Value: raw(`{"topic":"verity","partitions":[0,1,2]}`)}},
		{name: "assign ok no value", inv: 28, op: Op{Type: OK}},
		{name: "subscribe raw string", op: Op{Process: c(12), Type: Invoke, F: FSubscribe, Value: raw(`"verity"`)}},
		{name: "subscribe ok", inv: 30, op: Op{Type: OK, Value: raw(`["verity"]`)}},
		{name: "crash", op: Op{Process: c(12), Type: Invoke, F: FCrash, Value: raw(`{"reason":"restart \u00e9"}`)}},
		{name: "crash info", inv: 32, op: Op{Type: Info, Value: raw(`null`)}},
		{name: "negative process", op: Op{Process: c(-3), Type: Invoke, F: "custom", Value: raw(`1.5e-3`)}},
		{name: "txn that reads invoke", op: Op{Process: c(13), Type: Invoke, F: FTxn, Value: Payload{Txn: &Txn{TxnID: "t-13", Intent: IntentCommit,
			Records: []Record{rec("verity", 1, "", "13-1")}, Reads: []Record{send.At(42)}, Isolation: ReadCommitted}}}},
		{name: "txn that read ok", inv: 35, op: Op{Type: OK, Value: Payload{Txn: &Txn{TxnID: "t-13", Intent: IntentCommit,
			Records: []Record{rec("verity", 1, "", "13-1").At(4)}, Reads: []Record{send.At(42)}, Isolation: ReadCommitted, EndT: 123456789}}}},
	}
}

func ptr[T any](v T) *T { return &v }

// writeSamples writes sampleSteps through w and returns the ops as the writer wrote them.
func writeSamples(t testing.TB, w *Writer) []Op {
	t.Helper()
	var out []Op
	for k, s := range sampleSteps() {
		var op Op
		var err error
		switch {
		case s.op.Type == Invoke:
			op, err = w.Invoke(s.op.Process, s.op.F, s.op.Value)
		case s.async:
			op, err = w.CompleteAsync(out[s.inv], s.op.Type, s.op.Value, s.op.Error)
		default:
			op, err = w.Complete(out[s.inv], s.op.Type, s.op.Value, s.op.Error)
		}
		require.NoError(t, err, "step %d %s", k, s.name)
		out = append(out, op)
	}
	return out
}

// normalize is what an op looks like after a trip through the file: a Raw "null" is no payload,
// and Raw is compact.
func normalize(t testing.TB, op Op) Op {
	op = op.Clone()
	if string(op.Value.Raw) == "null" {
		op.Value.Raw = nil
	}
	if op.Value.Raw != nil {
		var b bytes.Buffer
		require.NoError(t, json.Compact(&b, op.Value.Raw))
		op.Value.Raw = b.Bytes()
	}
	return op
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Seed: 42, Config: Config{Scenario: "x", Topics: map[string]kafkaconf.TopicConfig{"t": {ReplicationFactor: new(3)}}}})
	require.NoError(t, err)
	written := writeSamples(t, w)
	require.NoError(t, w.Close())
	require.EqualValues(t, len(written), w.Count())
	require.EqualValues(t, buf.Len(), w.Bytes())

	r, err := NewReader(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, Version, r.Header().Version)
	require.EqualValues(t, 42, r.Header().Seed)
	require.True(t, bytes.HasPrefix(buf.Bytes(), []byte(`{"verity_history":1,"started":`)), "the header comes first")
	require.Contains(t, strings.SplitN(buf.String(), "\n", 2)[0], `"config":{"scenario":"x","topics":{"t":{"replication_factor":3}}}`)
	require.Equal(t, w.Header(), r.Header())

	// One Op is reused for every call, as the checker does, and record values are kept across
	// calls by value: the reader's reuse must not change what was already handed out.
	var op Op
	type kept struct {
		at   int
		recs []Record
	}
	var keep []kept
	var read []Op
	for {
		err := r.Next(&op)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		read = append(read, op.Clone())
		// payloadRecords copies the Record values, not the payload that holds them.
		keep = append(keep, kept{at: len(read) - 1, recs: payloadRecords(op.Value)})
	}
	require.Zero(t, r.Torn())
	require.Len(t, read, len(written))
	for k := range written {
		require.Equal(t, normalize(t, written[k]), read[k], "op %d (%s)", k, sampleSteps()[k].name)
	}
	for _, k := range keep {
		require.Equal(t, payloadRecords(read[k.at].Value), k.recs, "records kept from op %d", k.at)
	}
	// Checks on the shape the writer gave them.
	require.NotNil(t, read[10].Of)
	require.EqualValues(t, 9, *read[10].Of)
	require.Nil(t, read[1].Of)
	for k := 1; k < len(read); k++ {
		require.Greater(t, read[k].Index, read[k-1].Index)
		require.GreaterOrEqual(t, read[k].Time, read[k-1].Time)
	}
}

// payloadRecords lists the records of any typed payload, in order.
func payloadRecords(v Payload) []Record {
	var out []Record
	switch {
	case v.Send != nil:
		out = append(out, *v.Send)
	case v.Txn != nil:
		out = append(out, v.Txn.Records...)
	case v.Poll != nil:
		out = append(out, v.Poll.Records...)
	case v.FinalRead != nil:
		out = append(out, v.FinalRead.Records...)
	case v.RPW != nil:
		out = append(out, v.RPW.Input...)
		out = append(out, v.RPW.Output...)
	}
	return out
}

// reflectOp is Op as plain data for encoding/json: the payload is the Go value of its one set
// field and the process a number or "nemesis". Encoding an Op itself would call Payload's and
// Process's MarshalJSON, which share their code with the hand encoder under test, so the
// expected line would come from the code it checks.
type reflectOp struct {
	Index   int64  `json:"i"`
	Time    int64  `json:"t"`
	Process any    `json:"p"`
	Type    string `json:"type"`
	F       string `json:"f"`
	Of      *int64 `json:"of,omitempty"`
	Value   any    `json:"value"`
	Error   string `json:"error,omitempty"`
}

func reflectOf(op Op) reflectOp {
	r := reflectOp{Index: op.Index, Time: op.Time, Process: op.Process.ID, Type: string(op.Type), F: op.F, Of: op.Of, Error: op.Error}
	if op.Process.Nemesis {
		r.Process = "nemesis"
	}
	switch v := op.Value; {
	case v.Send != nil:
		r.Value = v.Send
	case v.Txn != nil:
		r.Value = v.Txn
	case v.Poll != nil:
		r.Value = v.Poll
	case v.FinalRead != nil:
		r.Value = v.FinalRead
	case v.RPW != nil:
		r.Value = v.RPW
	case v.Raw != nil:
		r.Value = v.Raw // encoding/json compacts a RawMessage
	}
	return r
}

// TestEncoderMatchesEncodingJSON: the hand encoder writes what encoding/json writes (with HTML
// escaping off), so the file is the same whichever produced it.
func TestEncoderMatchesEncodingJSON(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{})
	require.NoError(t, err)
	for k, op := range writeSamples(t, w) {
		got, err := AppendOp(nil, op)
		require.NoError(t, err)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(reflectOf(op)))
		require.Equal(t, strings.TrimSuffix(want.String(), "\n"), string(got), "op %d", k)

		// And json.Marshal (which escapes HTML and calls Payload.MarshalJSON) reads back too.
		b, err := json.Marshal(op)
		require.NoError(t, err)
		var back Op
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, normalize(t, op), normalize(t, back), "op %d", k)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, len(sampleSteps())+1)
}

// TestEncoderLines pins a few op lines as literal text, as the format document spells them: the
// field order, omitted of/error/key/offset, null and empty record lists, Raw compacted, and
// strings escaped as encoding/json does with HTML escaping off (U+2028 escaped, <&> not).
func TestEncoderLines(t *testing.T) {
	cases := []struct {
		op   Op
		want string
	}{
		{Op{Index: 3, Time: 1500, Process: Client(1), Type: Invoke, F: FSend, Value: Payload{Send: ptr(rec("verity", 3, "k1", "1-1"))}},
			`{"i":3,"t":1500,"p":1,"type":"invoke","f":"send","value":{"topic":"verity","partition":3,"key":"k1","value":"1-1"}}`},
		{Op{Index: 11, Time: 9, Process: Client(5), Type: Info, F: FSend, Of: ptr(int64(8)), Value: Payload{Send: ptr(rec("verity", 2, "", "5-1").At(7))}, Error: "EOF"},
			`{"i":11,"t":9,"p":5,"type":"info","f":"send","of":8,"value":{"topic":"verity","partition":2,"offset":7,"value":"5-1"},"error":"EOF"}`},
		{Op{Index: 4, Time: 2, Process: Client(-3), Type: OK, F: FSend, Value: Payload{Send: ptr(rec("t", 0, "", "<&> \"\\ \n\u2028"))}},
			`{"i":4,"t":2,"p":-3,"type":"ok","f":"send","value":{"topic":"t","partition":0,"value":"<&> \"\\ \n\u2028"}}`},
		{Op{Index: 5, Time: 3, Process: Client(6), Type: Fail, F: FTxn, Value: Payload{Txn: &Txn{TxnID: "t-6", Intent: IntentAbort}}, Error: "aborted"},
			`{"i":5,"t":3,"p":6,"type":"fail","f":"txn","value":{"txn_id":"t-6","records":null,"intent":"abort"},"error":"aborted"}`},
		{Op{Index: 6, Time: 4, Process: Client(7), Type: OK, F: FPoll, Value: Payload{Poll: &Poll{Isolation: ReadCommitted, Records: []Record{}}}},
			`{"i":6,"t":4,"p":7,"type":"ok","f":"poll","value":{"isolation":"read_committed","records":[]}}`},
		{Op{Index: 0, Time: 0, Process: NemesisP(), Type: OK, F: "kill", Value: Payload{Raw: json.RawMessage(`{ "nodes" : [2],  "note": "x" }`)}},
			`{"i":0,"t":0,"p":"nemesis","type":"ok","f":"kill","value":{"nodes":[2],"note":"x"}}`},
		{Op{Index: 7, Time: 5, Process: Client(11), Type: OK, F: FAssign},
			`{"i":7,"t":5,"p":11,"type":"ok","f":"assign","value":null}`},
	}
	for _, c := range cases {
		got, err := AppendOp(nil, c.op)
		require.NoError(t, err)
		require.Equal(t, c.want, string(got))
	}
}

// TestDecoderMatchesEncodingJSON decodes every line of a written history, and a set of
// hand-made lines, both with the hand decoder and with encoding/json, and compares.
func TestDecoderMatchesEncodingJSON(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{})
	require.NoError(t, err)
	writeSamples(t, w)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")[1:]
	lines = append(lines, trickyLines...)
	d := newDecoder()
	for k, line := range lines {
		var want Op
		require.NoError(t, json.Unmarshal([]byte(line), &want), "encoding/json, line %d: %s", k, line)
		var got Op
		require.NoError(t, d.op([]byte(line), &got), "decoder, line %d: %s", k, line)
		require.Equal(t, want, got.Clone(), "line %d: %s", k, line)
	}
}

// trickyLines are valid op lines that a writer would not produce but a reader must handle the
// way encoding/json does.
var trickyLines = []string{
	// Escapes of every kind, surrogate pairs, lone and misordered surrogates, escaped names.
	`{"i":0,"t":0,"p":1,"type":"invoke","f":"send","value":{"topic":"t","partition":1,"value":"a\u00e9\ud83d\ude00|\ud800x|\udc00|\ud800\ud800|\"\\\/\b\f\n\r\t|\u0000"}}`,
	`{"\u0069":1,"\u0074":5,"\u0070":2,"typ\u0065":"\u006fk","f":"s\u0065nd","value":{"top\u0069c":"t\u0000","p\u0061rtition":0,"value":"x"}}`,
	// Invalid UTF-8 in strings becomes U+FFFD; valid multibyte text passes.
	"{\"i\":2,\"p\":1,\"type\":\"info\",\"f\":\"send\",\"value\":{\"topic\":\"\xff\xfe\",\"partition\":-1,\"value\":\"a\xc3\x28b\xed\xa0\x80\"},\"error\":\"日本\"}",
	// Whitespace everywhere, unknown members at every level, value before f, nulls.
	" \t{ \"value\" : { \"isolation\" : \"read_committed\" , \"extra\" : [ 1 , -2.5e+3 , { \"a\" : [ ] } , true , false , null , \"s\" ] , \"records\" : [ { \"topic\" : \"t\" , \"partition\" : 3 , \"offset\" : -1 , \"value\" : \"v\" , \"headers\" : { } } ] } , \"i\" : 3 , \"p\" : 4 , \"type\" : \"ok\" , \"f\" : \"poll\" , \"future\" : {\"x\":[[[]]]} } \r",
	`{"i":4,"t":null,"p":"nemesis","type":"invoke","f":"kill","of":null,"value":{ "nodes" : [1, 2] },"error":null}`,
	`{"i":5,"t":1,"p":1,"type":"ok","f":"send","value":null}`,
	`{"i":6,"t":1,"p":1,"type":"ok","f":"kill"}`,
	// Duplicate members: the last one wins, in both; a null partition leaves the one before.
	`{"i":7,"t":1,"t":2,"p":1,"p":3,"type":"invoke","f":"send","value":{"value":"a","value":"b","partition":null,"offset":1,"offset":null,"partition":2,"partition":null}}`,
	`{"i":8,"p":1,"type":"ok","f":"kill","value":{"a":1},"f":"txn","value":{"txn_id":"x","records":null,"intent":"abort"}}`,
	// Extremes of the integer fields.
	`{"i":9223372036854775807,"t":-9223372036854775808,"p":-0,"type":"ok","f":"final-read","of":0,"value":{"partition":2147483647,"from":-9223372036854775808,"end":9223372036854775807,"records":[],"incomplete":null}}`,
	`{"i":10,"p":1,"type":"fail","f":"final-read","value":{"partition":-1,"incomplete":false,"records":[{"partition":0,"value":""}]}}`,
	`{"i":11,"p":1,"type":"ok","f":"rpw","value":{"input":null,"output":[],"txn_id":null}}`,
	`{"i":12,"p":1,"type":"ok","f":"txn","value":{}}`,
}

// TestDecoderRejectsWhatEncodingJSONRejects: lines that are not valid JSON, or not a valid op,
// fail in both decoders.
func TestDecoderRejectsWhatEncodingJSONRejects(t *testing.T) {
	const ok = `"p":1,"type":"ok","f":"send"`
	bad := []struct{ name, line string }{
		{"empty", ``},
		{"not an object", `[1]`},
		{"trailing garbage", `{"i":0,` + ok + `} x`},
		{"two objects", `{"i":0,` + ok + `}{}`},
		{"leading zero", `{"i":01,` + ok + `}`},
		{"fraction", `{"i":1.5,` + ok + `}`},
		{"exponent", `{"i":1e2,` + ok + `}`},
		{"plus sign", `{"i":+1,` + ok + `}`},
		{"bare minus", `{"i":-,` + ok + `}`},
		{"i overflow", `{"i":9223372036854775808,` + ok + `}`},
		{"i string", `{"i":"1",` + ok + `}`},
		{"missing i", `{` + ok + `}`},
		{"null i", `{"i":null,` + ok + `}`},
		{"negative i", `{"i":-1,` + ok + `}`},
		{"missing p", `{"i":0,"type":"ok","f":"send"}`},
		{"bad p", `{"i":0,"p":"client","type":"ok","f":"send"}`},
		{"fraction p", `{"i":0,"p":1.0,"type":"ok","f":"send"}`},
		{"missing type", `{"i":0,"p":1,"f":"send"}`},
		{"unknown type", `{"i":0,"p":1,"type":"done","f":"send"}`},
		{"missing f", `{"i":0,"p":1,"type":"ok"}`},
		{"empty f", `{"i":0,"p":1,"type":"ok","f":""}`},
		{"of on invoke", `{"i":3,"p":1,"type":"invoke","f":"send","of":1}`},
		{"of not earlier", `{"i":3,` + ok + `,"of":3}`},
		{"of negative", `{"i":3,` + ok + `,"of":-1}`},
		{"send value array", `{"i":0,` + ok + `,"value":[]}`},
		{"topic number", `{"i":0,` + ok + `,"value":{"topic":1,"partition":0}}`},
		{"partition overflow", `{"i":0,` + ok + `,"value":{"partition":2147483648}}`},
		{"partition fraction", `{"i":0,` + ok + `,"value":{"partition":1.0}}`},
		{"offset string", `{"i":0,` + ok + `,"value":{"partition":0,"offset":"1"}}`},
		{"records object", `{"i":0,"p":1,"type":"ok","f":"poll","value":{"records":{}}}`},
		{"record not object", `{"i":0,"p":1,"type":"ok","f":"poll","value":{"records":[1]}}`},
		{"incomplete number", `{"i":0,"p":1,"type":"ok","f":"final-read","value":{"partition":0,"incomplete":1}}`},
		{"control char", "{\"i\":0," + ok + ",\"error\":\"a\nb\"}"},
		{"bad escape", `{"i":0,` + ok + `,"error":"\x"}`},
		{"short unicode escape", `{"i":0,` + ok + `,"error":"\u12"}`},
		{"bad unicode escape", `{"i":0,` + ok + `,"error":"\u12g4"}`},
		{"bad second surrogate", `{"i":0,` + ok + `,"error":"\ud800\u12g4"}`},
		{"unterminated string", `{"i":0,` + ok + `,"error":"abc}`},
		{"trailing comma", `{"i":0,` + ok + `,}`},
		{"trailing comma in unknown array", `{"i":0,` + ok + `,"x":[1,]}`},
		{"missing colon", `{"i":0,` + ok + `,"x" 1}`},
		{"single quotes", `{'i':0,` + ok + `}`},
		{"NaN", `{"i":0,` + ok + `,"x":NaN}`},
		{"bad literal", `{"i":0,` + ok + `,"x":tru}`},
		{"number without digits after dot", `{"i":0,` + ok + `,"x":1.}`},
		{"number without exponent digits", `{"i":0,` + ok + `,"x":1e+}`},
		{"number leading dot", `{"i":0,` + ok + `,"x":.5}`},
		{"unclosed unknown object", `{"i":0,` + ok + `,"x":{"a":1}`},
		{"raw payload truncated", `{"i":0,"p":"nemesis","type":"ok","f":"kill","value":{"nodes":[1}}`},
		{"torn", `{"i":0,"p":1,"type":"ok","f":"send","value":{"topic":"t","val`},
		// A partition is stated, never taken as 0: -1 says it is not known.
		{"send without partition", `{"i":0,` + ok + `,"value":{"topic":"t","value":"v"}}`},
		{"send with null partition", `{"i":0,` + ok + `,"value":{"topic":"t","partition":null,"value":"v"}}`},
		{"partition below -1", `{"i":0,` + ok + `,"value":{"topic":"t","partition":-2,"value":"v"}}`},
		{"partition at int32's minimum", `{"i":0,` + ok + `,"value":{"topic":"t","partition":-2147483648,"value":"v"}}`},
		{"txn record without partition", `{"i":0,"p":1,"type":"invoke","f":"txn","value":{"txn_id":"x","records":[{"topic":"t","partition":0,"value":"a"},{"topic":"t","value":"b"}],"intent":"commit"}}`},
		{"poll record without partition", `{"i":0,"p":1,"type":"ok","f":"poll","value":{"isolation":"read_committed","records":[{"topic":"t","offset":3,"value":"a"}]}}`},
		{"null poll record", `{"i":0,"p":1,"type":"ok","f":"poll","value":{"records":[null]}}`},
		{"rpw input without partition", `{"i":0,"p":1,"type":"ok","f":"rpw","value":{"input":[{"topic":"t","offset":3,"value":"a"}],"output":[],"txn_id":"x"}}`},
		{"rpw output below -1", `{"i":0,"p":1,"type":"ok","f":"rpw","value":{"input":[],"output":[{"topic":"t","partition":-7,"value":"a"}],"txn_id":"x"}}`},
		{"final read without partition", `{"i":0,"p":1,"type":"ok","f":"final-read","value":{"topic":"t","isolation":"read_uncommitted","from":0,"end":0,"records":[]}}`},
		{"final-read record without partition", `{"i":0,"p":1,"type":"ok","f":"final-read","value":{"topic":"t","partition":0,"from":0,"end":1,"records":[{"topic":"t","offset":0,"value":"a"}]}}`},
		{"final read below -1", `{"i":0,"p":1,"type":"ok","f":"final-read","value":{"topic":"t","partition":-2,"records":[]}}`},
	}
	d := newDecoder()
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			var op Op
			require.Error(t, d.op([]byte(c.line), &op), "decoder accepted %s", c.line)
			require.Error(t, json.Unmarshal([]byte(c.line), &op), "encoding/json accepted %s", c.line)
		})
	}
}

func TestDecoderDeepNesting(t *testing.T) {
	line := `{"i":0,"p":1,"type":"ok","f":"kill","value":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + `}`
	var op Op
	require.ErrorContains(t, newDecoder().op([]byte(line), &op), "nested deeper")
	line = `{"i":0,"p":1,"type":"ok","f":"kill","value":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`
	require.NoError(t, newDecoder().op([]byte(line), &op))
}
