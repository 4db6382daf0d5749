package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The encoder below writes op lines by hand, without reflection, because every producer call
// pays for it (the recording must cost producers little throughput). Its output is byte for
// byte what encoding/json produces for the same Op with HTML escaping turned off (the tests
// check this), so nothing downstream can tell the two apart.

// AppendOp appends op's line — its JSON object, without the trailing newline — to dst and
// returns the extended slice. It uses op's i and t as they are (Writer.Append is the call that
// assigns them). It fails, leaving dst's contents unchanged, when op would not read back as
// written: an unknown type, an empty f, a bad "of", a payload that does not match f, more than
// one payload field set, or a Raw payload that is not valid JSON.
func AppendOp(dst []byte, op Op) ([]byte, error) {
	if err := op.check(); err != nil {
		return dst, err
	}
	n := len(dst)
	dst = appendPrefix(dst, op.Index, op.Time)
	dst, err := appendOpTail(dst, &op)
	if err != nil {
		return dst[:n], err
	}
	return dst, nil
}

// appendPrefix appends the start of an op line, up to and including the comma after t.
func appendPrefix(dst []byte, i, t int64) []byte {
	dst = append(dst, `{"i":`...)
	dst = strconv.AppendInt(dst, i, 10)
	dst = append(dst, `,"t":`...)
	dst = strconv.AppendInt(dst, t, 10)
	return append(dst, ',')
}

// maxPrefix bounds what appendPrefix writes: two 20-character int64s and the punctuation.
const maxPrefix = len(`{"i":,"t":,`) + 2*20

// appendOpTail appends everything of an op line after t: from "p" to the closing brace. The
// writer encodes this part before it takes its lock, when i and t are not yet known.
func appendOpTail(dst []byte, op *Op) ([]byte, error) {
	dst = append(dst, `"p":`...)
	if op.Process.Nemesis {
		dst = append(dst, `"nemesis"`...)
	} else {
		dst = strconv.AppendInt(dst, int64(op.Process.ID), 10)
	}
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, string(op.Type))
	dst = append(dst, `,"f":`...)
	dst = appendString(dst, op.F)
	if op.Of != nil {
		dst = append(dst, `,"of":`...)
		dst = strconv.AppendInt(dst, *op.Of, 10)
	}
	dst = append(dst, `,"value":`...)
	dst, err := appendPayload(dst, op.F, &op.Value)
	if err != nil {
		return dst, fmt.Errorf("%s value: %w", op.F, err)
	}
	if op.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = appendString(dst, op.Error)
	}
	return append(dst, '}'), nil
}

// appendPayload appends the one set field of p, or null. When f is not empty, a typed field
// must be the one f names: the reader decodes a value by f, so a mismatch would not read back.
// Raw is allowed with any f (a hand-built payload is decoded by f like any other).
func appendPayload(dst []byte, f string, p *Payload) ([]byte, error) {
	set, name := 0, ""
	mark := func(isSet bool, fname string) {
		if isSet {
			set++
			name = fname
		}
	}
	mark(p.Send != nil, FSend)
	mark(p.Txn != nil, FTxn)
	mark(p.Poll != nil, FPoll)
	mark(p.FinalRead != nil, FFinalRead)
	mark(p.RPW != nil, FRPW)
	mark(len(p.Raw) > 0, "")
	switch {
	case set > 1:
		return dst, fmt.Errorf("payload has %d fields set, want at most one", set)
	case set == 0:
		return append(dst, "null"...), nil
	case name != "" && f != "" && name != f:
		return dst, fmt.Errorf("payload is a %s payload", name)
	}
	switch {
	case p.Send != nil:
		return appendRecord(dst, p.Send), nil
	case p.Txn != nil:
		dst = append(dst, `{"txn_id":`...)
		dst = appendString(dst, p.Txn.TxnID)
		dst = append(dst, `,"records":`...)
		dst = appendRecords(dst, p.Txn.Records)
		dst = append(dst, `,"intent":`...)
		dst = appendString(dst, p.Txn.Intent)
		if p.Txn.Reads != nil {
			dst = append(dst, `,"reads":`...)
			dst = appendRecords(dst, p.Txn.Reads)
		}
		if p.Txn.Isolation != "" {
			dst = append(dst, `,"isolation":`...)
			dst = appendString(dst, p.Txn.Isolation)
		}
		if p.Txn.EndT != 0 {
			dst = append(dst, `,"end_t":`...)
			dst = strconv.AppendInt(dst, p.Txn.EndT, 10)
		}
		return append(dst, '}'), nil
	case p.Poll != nil:
		dst = append(dst, `{"isolation":`...)
		dst = appendString(dst, p.Poll.Isolation)
		if p.Poll.Group != "" {
			dst = append(dst, `,"group":`...)
			dst = appendString(dst, p.Poll.Group)
		}
		dst = append(dst, `,"records":`...)
		dst = appendRecords(dst, p.Poll.Records)
		return append(dst, '}'), nil
	case p.FinalRead != nil:
		fr := p.FinalRead
		dst = append(dst, `{"topic":`...)
		dst = appendString(dst, fr.Topic)
		dst = append(dst, `,"partition":`...)
		dst = strconv.AppendInt(dst, int64(fr.Partition), 10)
		dst = append(dst, `,"isolation":`...)
		dst = appendString(dst, fr.Isolation)
		dst = append(dst, `,"from":`...)
		dst = strconv.AppendInt(dst, fr.From, 10)
		dst = append(dst, `,"end":`...)
		dst = strconv.AppendInt(dst, fr.End, 10)
		dst = append(dst, `,"records":`...)
		dst = appendRecords(dst, fr.Records)
		if fr.Incomplete {
			dst = append(dst, `,"incomplete":true`...)
		}
		return append(dst, '}'), nil
	case p.RPW != nil:
		dst = append(dst, `{"input":`...)
		dst = appendRecords(dst, p.RPW.Input)
		dst = append(dst, `,"output":`...)
		dst = appendRecords(dst, p.RPW.Output)
		dst = append(dst, `,"txn_id":`...)
		dst = appendString(dst, p.RPW.TxnID)
		if p.RPW.EndT != 0 {
			dst = append(dst, `,"end_t":`...)
			dst = strconv.AppendInt(dst, p.RPW.EndT, 10)
		}
		return append(dst, '}'), nil
	}
	// Raw: compacting both validates it and guarantees it holds no newline, which would split
	// the line. Compact leaves string contents alone, and a raw newline cannot occur inside a
	// valid JSON string.
	n := len(dst)
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, p.Raw); err != nil {
		return dst[:n], fmt.Errorf("raw payload: %w", err)
	}
	return buf.Bytes(), nil
}

// appendRecords appends a JSON array of records; nil is null, as encoding/json has it.
func appendRecords(dst []byte, rs []Record) []byte {
	if rs == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i := range rs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendRecord(dst, &rs[i])
	}
	return append(dst, ']')
}

func appendRecord(dst []byte, r *Record) []byte {
	dst = append(dst, `{"topic":`...)
	dst = appendString(dst, r.Topic)
	dst = append(dst, `,"partition":`...)
	dst = strconv.AppendInt(dst, int64(r.Partition), 10)
	if r.Offset != nil {
		dst = append(dst, `,"offset":`...)
		dst = strconv.AppendInt(dst, *r.Offset, 10)
	}
	if r.Key != "" {
		dst = append(dst, `,"key":`...)
		dst = appendString(dst, r.Key)
	}
	dst = append(dst, `,"value":`...)
	dst = appendString(dst, r.Value)
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json does without HTML escaping:
// quote, backslash and control characters escaped, invalid UTF-8 replaced by U+FFFD, and
// U+2028/U+2029 escaped because JavaScript treats them as line ends.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
