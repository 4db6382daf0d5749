package history

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decoder is a hand-written JSON decoder for op lines. The checker reads histories of millions
// of events, and encoding/json's reflection would dominate its run time, so this decoder knows
// the schema: it fills Op and the typed payloads directly from the line bytes, allocating
// little: short recurring strings are interned, record values cut from shared chunks
// (valueArena), offsets taken from chunks too. Lines in the shape Writer writes take fast paths
// (opPrefixFast, recordFast) that fall back to the general path for anything else. It accepts exactly the JSON grammar (RFC 8259) — anything
// encoding/json rejects as syntax it rejects too — and decodes what encoding/json would, with
// these deliberate differences: member names match exactly (encoding/json also matches them
// case-insensitively, except in records and final reads, whose UnmarshalJSON is this decoder),
// and null for a string or number field reads as its zero value, except a partition's: null
// there is no partition, and a record or final read without one is refused, since 0 is a
// partition.
// Unknown members are skipped (after validating them), so new fields can be added to the
// format without breaking older readers.
type decoder struct {
	buf []byte // the line being decoded
	pos int    // next byte of buf to read

	scratch []byte // unescaped string contents, valid until the next string is read
	keybuf  []byte // unescaped member names (rare: names are plain ASCII)

	// strs interns short strings that recur on many lines (topics, keys, isolation levels,
	// error texts), so that they cost one allocation per run instead of one per use. recent
	// (nil when strs is) is a small direct-mapped cache in front of it: most records name one
	// topic and one of a few dozen keys, and a hit there costs less than hashing for the map.
	strs   map[string]string
	recent []string

	// stream is set for a decoder that reads a whole history (newDecoder), not one value.
	// Only such a decoder takes the fast path for records (recordFast) and keeps record
	// values in the arena: both pay off over many lines, not on one value.
	stream bool
	values valueArena
	topic  string // the topic of the latest record recordFast took (plain ASCII)

	// ints hands out the targets of Offset and Of pointers. Slots are handed out once and
	// never reused, so those pointers stay valid for as long as the caller keeps them; taking
	// them from a chunk saves an allocation per record.
	ints []int64

	// own, when set, receives the payloads of the ops decoded (see payloads); otherwise
	// these below are the payloads of the latest op, reused by the next op with the same f
	// (see Reader).
	own  *payloads
	send Record
	txn  Txn
	poll Poll
	fr   FinalRead
	rpw  RPW
	// The backing arrays of their record lists, kept apart from the payloads so that they
	// survive an op whose list is null.
	txnRecs, txnReads, pollRecs, frRecs, rpwIn, rpwOut []Record
}

const (
	maxInternLen = 64      // longer strings are unlikely to repeat (record values are unique)
	maxInterned  = 1 << 14 // bound the map when keys turn out to be unique after all
	recentSlots  = 256     // entries of the intern map's cache (a power of two)
	intChunk     = 512     // Offset/Of targets allocated at a time
	maxDepth     = 10000   // nesting limit for skipped values, as encoding/json has
)

// newDecoder returns a decoder for a history's lines. A decoder{buf: b} made for one value
// (Record.UnmarshalJSON) interns nothing.
func newDecoder() *decoder {
	return &decoder{strs: make(map[string]string), recent: make([]string, recentSlots), stream: true}
}

// whole ends the decoding of one value that fills buf: err, else an error when anything but
// whitespace follows the value.
func (d *decoder) whole(err error) error {
	if err != nil {
		return err
	}
	d.ws()
	if d.pos < len(d.buf) {
		return d.errorf("unexpected %s after the value", d.found())
	}
	return nil
}

// errorf returns an error located at the decoder's position (1-based byte in the line).
func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("byte %d: %s", d.pos+1, fmt.Sprintf(format, args...))
}

// errEnd is the error for input that stops in the middle of a value.
func (d *decoder) errEnd() error {
	return fmt.Errorf("byte %d: unexpected end of line", d.pos+1)
}

func (d *decoder) ws() {
	for d.pos < len(d.buf) {
		switch d.buf[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// null consumes a null literal if one comes next.
func (d *decoder) null() bool {
	d.ws()
	if d.pos+4 <= len(d.buf) && string(d.buf[d.pos:d.pos+4]) == "null" {
		d.pos += 4
		return true
	}
	return false
}

// open consumes c ('{' or '[') after optional whitespace.
func (d *decoder) open(c byte, what string) error {
	d.ws()
	if d.pos >= len(d.buf) {
		return d.errEnd()
	}
	if d.buf[d.pos] != c {
		return d.errorf("%s: expected %q, found %s", what, c, d.found())
	}
	d.pos++
	return nil
}

// found describes the byte at pos for error messages.
func (d *decoder) found() string {
	if d.pos >= len(d.buf) {
		return "end of line"
	}
	return fmt.Sprintf("%q", d.buf[d.pos])
}

// member advances to the next member of an object whose '{' has been consumed and returns its
// name, or ok == false at the closing '}'. first is true for the first call on an object. The
// name is valid until the next call.
func (d *decoder) member(first bool) (name []byte, ok bool, err error) {
	if d.stream {
		if name, ok := d.memberFast(first); ok {
			return name, true, nil
		}
	}
	d.ws()
	if d.pos >= len(d.buf) {
		return nil, false, d.errEnd()
	}
	c := d.buf[d.pos]
	if c == '}' {
		d.pos++
		return nil, false, nil
	}
	if !first {
		if c != ',' {
			return nil, false, d.errorf("expected ',' or '}' in object, found %s", d.found())
		}
		d.pos++
		d.ws()
	}
	if d.pos >= len(d.buf) {
		return nil, false, d.errEnd()
	}
	if d.buf[d.pos] != '"' {
		return nil, false, d.errorf("expected a member name, found %s", d.found())
	}
	name, err = d.strBytes(&d.keybuf)
	if err != nil {
		return nil, false, err
	}
	d.ws()
	if d.pos >= len(d.buf) {
		return nil, false, d.errEnd()
	}
	if d.buf[d.pos] != ':' {
		return nil, false, d.errorf("expected ':' after member name, found %s", d.found())
	}
	d.pos++
	return name, true, nil
}

// memberFast is member's fast path for a member in the writer's shape: `,"name":` (`"name":`
// for the first), no whitespace, a name of printable ASCII without escapes. For anything else
// it reports false with d.pos untouched, and member reads the member the general way.
func (d *decoder) memberFast(first bool) (name []byte, ok bool) {
	b, i := d.buf, d.pos
	if !first {
		if i >= len(b) || b[i] != ',' {
			return nil, false
		}
		i++
	}
	if i >= len(b) || b[i] != '"' {
		return nil, false
	}
	from, to, ok := plainString(b, i+1)
	if !ok || to+1 >= len(b) || b[to+1] != ':' {
		return nil, false
	}
	d.pos = to + 2
	return b[from:to], true
}

// element advances to the next element of an array whose '[' has been consumed, or returns
// ok == false at the closing ']'.
func (d *decoder) element(first bool) (ok bool, err error) {
	d.ws()
	if d.pos >= len(d.buf) {
		return false, d.errEnd()
	}
	c := d.buf[d.pos]
	if c == ']' {
		d.pos++
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, d.errorf("expected ',' or ']' in array, found %s", d.found())
		}
		d.pos++
	}
	return true, nil
}

// strBytes reads a string and returns its contents: a subslice of the line when it needs no
// unescaping, else the unescaped bytes in *tmp. Either way the result is only valid until the
// next read into the same buffer.
func (d *decoder) strBytes(tmp *[]byte) ([]byte, error) {
	d.ws()
	if d.pos >= len(d.buf) {
		return nil, d.errEnd()
	}
	if d.buf[d.pos] != '"' {
		return nil, d.errorf("expected a string, found %s", d.found())
	}
	start := d.pos + 1
	for i := start; i < len(d.buf); i++ {
		c := d.buf[i]
		if c == '"' {
			d.pos = i + 1
			return d.buf[start:i], nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return d.strSlow(start, i, tmp)
		}
	}
	d.pos = len(d.buf)
	return nil, d.errEnd()
}

// strSlow continues strBytes from i, the first byte that is not plain ASCII, unescaping into
// *tmp with the rules of encoding/json: invalid UTF-8 and unpaired surrogates become U+FFFD.
func (d *decoder) strSlow(start, i int, tmp *[]byte) ([]byte, error) {
	s := append((*tmp)[:0], d.buf[start:i]...)
	defer func() { *tmp = s[:0] }()
	b := d.buf
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return s, nil
		case c == '\\':
			if i+1 >= len(b) {
				d.pos = len(b)
				return nil, d.errEnd()
			}
			switch e := b[i+1]; e {
			case '"', '\\', '/':
				s = append(s, e)
			case 'b':
				s = append(s, '\b')
			case 'f':
				s = append(s, '\f')
			case 'n':
				s = append(s, '\n')
			case 'r':
				s = append(s, '\r')
			case 't':
				s = append(s, '\t')
			case 'u':
				r := hex4(b[i+2:])
				if r < 0 {
					d.pos = i
					return nil, d.errorf(`invalid \u escape in string`)
				}
				i += 6
				if utf16.IsSurrogate(r) {
					// Only a high surrogate followed by a low one makes a pair; any other
					// surrogate stands alone and becomes U+FFFD, as in encoding/json.
					r2 := rune(-1)
					if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
						r2 = hex4(b[i+2:])
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				s = utf8.AppendRune(s, r)
				continue
			default:
				d.pos = i
				return nil, d.errorf("invalid escape %q in string", e)
			}
			i += 2
		case c < 0x20:
			d.pos = i
			return nil, d.errorf("control character %q in string", c)
		case c < utf8.RuneSelf:
			s = append(s, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				s = append(s, "\uFFFD"...)
			} else {
				s = append(s, b[i:i+size]...)
			}
			i += size
		}
	}
	d.pos = len(b)
	return nil, d.errEnd()
}

// hex4 decodes the four hex digits at the start of b, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// str reads a string value, or null as "", into a new string (record values are unique, so
// interning them would only cost).
func (d *decoder) str() (string, error) {
	if d.null() {
		return "", nil
	}
	b, err := d.strBytes(&d.scratch)
	if err != nil {
		return "", err
	}
	return d.value(b), nil
}

// value returns record value b as a string of its own: from the arena in a stream decoder,
// else a new string.
func (d *decoder) value(b []byte) string {
	if d.stream {
		return d.values.str(b)
	}
	return string(b)
}

// valueArena keeps record values. They are unique, so interning them would only cost, and a
// string each would be an allocation each (millions per history). The arena copies them one
// after the other into a shared chunk and hands out substrings of it: strings.Builder
// guarantees that a string it returned never changes, whatever is written after it. A value
// the caller keeps keeps its whole chunk alive, which is why chunks are small.
type valueArena struct {
	b strings.Builder
}

const (
	arenaChunk    = 16 << 10 // bytes per chunk
	arenaMaxValue = 1 << 10  // longer values get a string of their own
)

func (a *valueArena) str(v []byte) string {
	if len(v) > arenaMaxValue {
		return string(v)
	}
	if a.b.Cap()-a.b.Len() < len(v) {
		a.b = strings.Builder{} // the old chunk stays with the strings cut from it
		a.b.Grow(arenaChunk)
	}
	n := a.b.Len()
	a.b.Write(v)
	return a.b.String()[n:]
}

// istr reads a string value, or null as "", interning short ones.
func (d *decoder) istr() (string, error) {
	if d.null() {
		return "", nil
	}
	b, err := d.strBytes(&d.scratch)
	if err != nil {
		return "", err
	}
	return d.intern(b), nil
}

func (d *decoder) intern(b []byte) string {
	if len(b) > maxInternLen {
		return string(b)
	}
	var slot *string
	if d.recent != nil {
		h := uint(len(b))
		for _, c := range b {
			h = h*31 + uint(c)
		}
		slot = &d.recent[h&(recentSlots-1)]
		if *slot == string(b) { // no allocation for the comparison either
			return *slot
		}
	}
	s, ok := d.strs[string(b)] // the compiler does not allocate for this lookup
	if !ok {
		s = string(b)
		if d.strs != nil && len(d.strs) < maxInterned {
			d.strs[s] = s
		}
	}
	if slot != nil {
		*slot = s
	}
	return s
}

// int reads an integer. JSON numbers with a fraction or exponent are valid JSON but not
// integers, and are rejected as encoding/json rejects them for an integer field.
func (d *decoder) int() (int64, error) {
	d.ws()
	b, i := d.buf, d.pos
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	if i >= len(b) {
		d.pos = i
		return 0, d.errEnd()
	}
	var u uint64
	switch c := b[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		digits := 0
		for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
			// 19 digits always fit in a uint64; a 20th may not, and no int64 has more.
			if digits++; digits > 19 {
				return 0, d.errorf("integer out of range")
			}
			u = u*10 + uint64(b[i]-'0')
		}
	default:
		return 0, d.errorf("expected an integer, found %s", d.found())
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, d.errorf("expected an integer, found a fraction or exponent")
	}
	if (!neg && u > math.MaxInt64) || (neg && u > 1<<63) {
		return 0, d.errorf("integer out of range")
	}
	d.pos = i
	if neg {
		return -int64(u), nil
	}
	return int64(u), nil
}

// partition reads a partition number, which must fit in an int32, into *p and notes in
// *given that one was given. null gives none and leaves both as they were, as encoding/json
// leaves a number at null. checkPartition judges the value once the op is read.
func (d *decoder) partition(p *int32, given *bool) error {
	if d.null() {
		return nil
	}
	start := d.pos
	v, err := d.int()
	if err != nil {
		return err
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.pos = start
		return d.errorf("integer %d out of range for a partition", v)
	}
	*p, *given = int32(v), true
	return nil
}

// int64OrNull reads an integer, or null as 0.
func (d *decoder) int64OrNull() (int64, error) {
	if d.null() {
		return 0, nil
	}
	return d.int()
}

// intPtr reads an integer into a fresh target, or null as nil.
func (d *decoder) intPtr() (*int64, error) {
	if d.null() {
		return nil, nil
	}
	v, err := d.int()
	if err != nil {
		return nil, err
	}
	return d.intSlot(v), nil
}

// intSlot returns a fresh target holding v.
func (d *decoder) intSlot(v int64) *int64 {
	if len(d.ints) == 0 {
		d.ints = make([]int64, intChunk)
	}
	p := &d.ints[0]
	*p = v
	d.ints = d.ints[1:]
	return p
}

// bool reads true or false, or null as false.
func (d *decoder) bool() (bool, error) {
	d.ws()
	b := d.buf[d.pos:]
	switch {
	case len(b) >= 4 && string(b[:4]) == "true":
		d.pos += 4
		return true, nil
	case len(b) >= 5 && string(b[:5]) == "false":
		d.pos += 5
		return false, nil
	case len(b) >= 4 && string(b[:4]) == "null":
		d.pos += 4
		return false, nil
	}
	return false, d.errorf("expected true or false, found %s", d.found())
}

// skip validates and skips any JSON value.
func (d *decoder) skip() error {
	return d.skipDepth(0)
}

func (d *decoder) skipDepth(depth int) error {
	d.ws()
	if d.pos >= len(d.buf) {
		return d.errEnd()
	}
	switch c := d.buf[d.pos]; {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return d.errorf("nested deeper than %d", maxDepth)
		}
		d.pos++
		for first := true; ; first = false {
			var ok bool
			var err error
			if c == '{' {
				_, ok, err = d.member(first)
			} else {
				ok, err = d.element(first)
			}
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			if err := d.skipDepth(depth + 1); err != nil {
				return err
			}
		}
	case c == '"':
		_, err := d.strBytes(&d.scratch)
		return err
	case c == '-' || ('0' <= c && c <= '9'):
		return d.skipNumber()
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	}
	return d.errorf("expected a value, found %s", d.found())
}

func (d *decoder) literal(lit string) error {
	if d.pos+len(lit) > len(d.buf) || string(d.buf[d.pos:d.pos+len(lit)]) != lit {
		return d.errorf("invalid literal (expected %s)", lit)
	}
	d.pos += len(lit)
	return nil
}

// skipNumber skips a number with the full grammar -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *decoder) skipNumber() error {
	b, i := d.buf, d.pos
	digits := func() bool {
		n := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		d.pos = i
		return d.errorf("invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			d.pos = i
			return d.errorf("invalid number: no digits after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			d.pos = i
			return d.errorf("invalid number: no digits in exponent")
		}
	}
	d.pos = i
	return nil
}

// Fields of an op line that must be present.
const (
	hasI = 1 << iota
	hasP
	hasType
	hasF
	hasAll = hasI | hasP | hasType | hasF
)

// op decodes line into op. op's previous contents are discarded; its payload points into the
// decoder's reusable payloads.
func (d *decoder) op(line []byte, op *Op) error {
	d.buf, d.pos = line, 0
	*op = Op{}
	var has int
	first := true // no member read yet
	if d.stream && d.opPrefixFast(op, &has) > 0 {
		first = false
	} else if err := d.open('{', "op"); err != nil {
		return err
	}
	valStart := -1 // where the last "value" member starts, -1 if none
	decodedF := "" // the f its payload was decoded for, "" if not decoded yet
	for ; ; first = false {
		name, ok, err := d.member(first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(name) {
		case "i":
			if d.null() {
				has &^= hasI
				continue
			}
			if op.Index, err = d.int(); err != nil {
				return fmt.Errorf(`"i": %w`, err)
			}
			has |= hasI
		case "t":
			if op.Time, err = d.int64OrNull(); err != nil {
				return fmt.Errorf(`"t": %w`, err)
			}
		case "p":
			if d.null() {
				has &^= hasP
				continue
			}
			if err := d.process(&op.Process); err != nil {
				return fmt.Errorf(`"p": %w`, err)
			}
			has |= hasP
		case "type":
			if err := d.opType(&op.Type); err != nil {
				return fmt.Errorf(`"type": %w`, err)
			}
			has |= hasType
			if op.Type == "" {
				has &^= hasType
			}
		case "f":
			if op.F, err = d.opF(); err != nil {
				return fmt.Errorf(`"f": %w`, err)
			}
			has |= hasF
			if op.F == "" {
				has &^= hasF
			}
		case "of":
			if op.Of, err = d.intPtr(); err != nil {
				return fmt.Errorf(`"of": %w`, err)
			}
		case "value":
			// f usually comes first, and then the payload is decoded in place; otherwise it
			// is validated now and decoded once f is known.
			d.ws()
			valStart = d.pos
			decodedF = ""
			if op.F != "" {
				if err := d.payload(op.F, &op.Value); err != nil {
					return fmt.Errorf("%s value: %w", op.F, err)
				}
				decodedF = op.F
			} else if err := d.skip(); err != nil {
				return fmt.Errorf("value: %w", err)
			}
		case "error":
			if op.Error, err = d.istr(); err != nil {
				return fmt.Errorf(`"error": %w`, err)
			}
		default:
			if err := d.skip(); err != nil {
				return fmt.Errorf("%q: %w", name, err)
			}
		}
	}
	d.ws()
	if d.pos < len(d.buf) {
		return d.errorf("unexpected %s after the op's object", d.found())
	}
	if has != hasAll {
		for _, m := range []struct {
			bit  int
			name string
		}{{hasI, "i"}, {hasP, "p"}, {hasType, "type"}, {hasF, "f"}} {
			if has&m.bit == 0 {
				return fmt.Errorf("missing %q", m.name)
			}
		}
	}
	if valStart >= 0 && decodedF != op.F {
		d.pos = valStart
		op.Value = Payload{}
		if err := d.payload(op.F, &op.Value); err != nil {
			return fmt.Errorf("%s value: %w", op.F, err)
		}
	}
	return op.check()
}

func (d *decoder) process(p *Process) error {
	d.ws()
	if d.pos < len(d.buf) && d.buf[d.pos] == '"' {
		b, err := d.strBytes(&d.scratch)
		if err != nil {
			return err
		}
		if string(b) != NemesisProcess {
			return fmt.Errorf("process %q: want an integer or %q", b, NemesisProcess)
		}
		*p = NemesisP()
		return nil
	}
	v, err := d.int()
	if err != nil {
		return err
	}
	if v != int64(int(v)) {
		return fmt.Errorf("process %d out of range", v)
	}
	*p = Client(int(v))
	return nil
}

func (d *decoder) opType(t *Type) error {
	if d.null() {
		*t = ""
		return nil
	}
	b, err := d.strBytes(&d.scratch)
	if err != nil {
		return err
	}
	switch Type(b) {
	case Invoke:
		*t = Invoke
	case OK:
		*t = OK
	case Fail:
		*t = Fail
	case Info:
		*t = Info
	default:
		return fmt.Errorf("unknown type %q (want invoke, ok, fail or info)", b)
	}
	return nil
}

func (d *decoder) opF() (string, error) {
	if d.null() {
		return "", nil
	}
	b, err := d.strBytes(&d.scratch)
	if err != nil {
		return "", err
	}
	return d.fName(b), nil
}

// fName returns f name b as a string: the common names map to the package's constants without
// a map lookup.
func (d *decoder) fName(b []byte) string {
	switch string(b) {
	case FSend:
		return FSend
	case FTxn:
		return FTxn
	case FPoll:
		return FPoll
	case FFinalRead:
		return FFinalRead
	case FRPW:
		return FRPW
	}
	return d.intern(b)
}

// opPrefixFast is the fast path for the members an op line starts with when Writer wrote it
// (appendPrefix, appendOpTail):
//
//	{"i":I,"t":T,"p":P,"type":"…","f":"…"[,"of":O]
//
// with P a client's number, no whitespace, plain strings, integers of at most 18 digits and
// a known type. It takes these members, in this order, for as long as they are in this shape,
// and returns how many it took; it stops before the first member that is not, leaving d.pos
// at the ',' or '}' after the last one taken (or at the start of the line when it took none).
// op's general loop then reads the rest of the line — everything, when the fast path took
// nothing — so that a line is read the fast way only as far as it is in the writer's shape.
// Each member taken has the effect it has in the general loop.
func (d *decoder) opPrefixFast(op *Op, has *int) (n int) {
	const (
		kI    = `{"i":`
		kT    = `,"t":`
		kP    = `,"p":`
		kType = `,"type":"`
		kF    = `,"f":"`
		kOf   = `,"of":`
	)
	b, i := d.buf, d.pos
	if len(b)-i < len(kI) || string(b[i:i+len(kI)]) != kI {
		return 0
	}
	v, i, ok := smallInt(b, i+len(kI))
	if !ok {
		return 0
	}
	op.Index, *has, d.pos = v, *has|hasI, i
	if len(b)-i < len(kT) || string(b[i:i+len(kT)]) != kT {
		return 1
	}
	if v, i, ok = smallInt(b, i+len(kT)); !ok {
		return 1
	}
	op.Time, d.pos = v, i
	if len(b)-i < len(kP) || string(b[i:i+len(kP)]) != kP {
		return 2
	}
	if v, i, ok = smallInt(b, i+len(kP)); !ok || v != int64(int(v)) {
		return 2
	}
	op.Process, *has, d.pos = Client(int(v)), *has|hasP, i
	if len(b)-i < len(kType) || string(b[i:i+len(kType)]) != kType {
		return 3
	}
	from, to, ok := plainString(b, i+len(kType))
	if !ok {
		return 3
	}
	switch Type(b[from:to]) {
	case Invoke:
		op.Type = Invoke
	case OK:
		op.Type = OK
	case Fail:
		op.Type = Fail
	case Info:
		op.Type = Info
	default:
		return 3
	}
	*has, i, d.pos = *has|hasType, to+1, to+1
	if len(b)-i < len(kF) || string(b[i:i+len(kF)]) != kF {
		return 4
	}
	if from, to, ok = plainString(b, i+len(kF)); !ok || from == to {
		return 4
	}
	op.F, *has, i, d.pos = d.fName(b[from:to]), *has|hasF, to+1, to+1
	if len(b)-i < len(kOf) || string(b[i:i+len(kOf)]) != kOf {
		return 5
	}
	if v, i, ok = smallInt(b, i+len(kOf)); !ok {
		return 5
	}
	op.Of, d.pos = d.intSlot(v), i
	return 6
}

// payloads holds the payloads, and the record lists, of many ops: one of each for each op that
// has one. A decoder whose own field is set decodes into it instead of into its reusable
// payloads, so that the ops it decoded stay intact while it decodes the next lines: read-ahead
// decodes a block of lines at a time into a batch that another goroutine reads after (see
// opBatch). An element's pointer stays valid when its slice grows: it points into the old
// array, which holds the element as it was, and nothing writes there any more.
type payloads struct {
	sends  []Record
	txns   []Txn
	polls  []Poll
	finals []FinalRead
	rpws   []RPW
	recs   []Record // the record lists, one after the other
}

func (p *payloads) reset() {
	p.sends, p.txns, p.polls, p.finals, p.rpws = p.sends[:0], p.txns[:0], p.polls[:0], p.finals[:0], p.rpws[:0]
	p.recs = p.recs[:0]
}

// grow appends a zero element to *s and returns it.
func grow[T any](s *[]T) *T {
	var zero T
	*s = append(*s, zero)
	return &(*s)[len(*s)-1]
}

// payload decodes a value into the field of v that f selects, reusing the decoder's payloads
// (or into d.own's, when set).
func (d *decoder) payload(f string, v *Payload) error {
	*v = Payload{}
	if d.null() {
		return nil
	}
	var err error
	switch f {
	case FSend:
		v.Send = &d.send
		if d.own != nil {
			v.Send = grow(&d.own.sends)
		}
		err = d.record(v.Send)
	case FTxn:
		v.Txn = &d.txn
		if d.own != nil {
			v.Txn = grow(&d.own.txns)
		}
		err = d.txnValue(v.Txn)
	case FPoll:
		v.Poll = &d.poll
		if d.own != nil {
			v.Poll = grow(&d.own.polls)
		}
		err = d.pollValue(v.Poll)
	case FFinalRead:
		v.FinalRead = &d.fr
		if d.own != nil {
			v.FinalRead = grow(&d.own.finals)
		}
		err = d.finalRead(v.FinalRead)
	case FRPW:
		v.RPW = &d.rpw
		if d.own != nil {
			v.RPW = grow(&d.own.rpws)
		}
		err = d.rpwValue(v.RPW)
	default:
		d.ws()
		start := d.pos
		if err = d.skip(); err == nil {
			// Copied: Raw must outlive the line buffer. Nemesis events are rare.
			v.Raw = append(json.RawMessage(nil), d.buf[start:d.pos]...)
		}
	}
	return err
}

func (d *decoder) record(r *Record) error {
	if d.stream && d.recordFast(r) {
		return nil
	}
	*r = Record{}
	if err := d.open('{', "record"); err != nil {
		return err
	}
	hasPartition := false
	for first := true; ; first = false {
		name, ok, err := d.member(first)
		if err != nil {
			return err
		}
		if !ok {
			if !hasPartition {
				return errRecordNoPartition
			}
			return nil
		}
		switch string(name) {
		case "topic":
			r.Topic, err = d.istr()
		case "partition":
			err = d.partition(&r.Partition, &hasPartition)
		case "offset":
			r.Offset, err = d.intPtr()
		case "key":
			r.Key, err = d.istr()
		case "value":
			r.Value, err = d.str()
		default:
			err = d.skip()
		}
		if err != nil {
			return fmt.Errorf("record %q: %w", name, err)
		}
	}
}

// recordFast is the fast path for a record in the exact shape Writer writes one
// (appendRecord):
//
//	{"topic":"…","partition":P[,"offset":O][,"key":"…"],"value":"…"}
//
// with its members in that order, no whitespace, strings of printable ASCII without escapes,
// and integers of at most 18 digits. Nearly every record of a history is in that shape, and
// matching it byte by byte skips the general path's member-name parsing. For anything else —
// any other order, whitespace, an escape, a null, an unknown member, an error — it reports
// false with d.pos and *r untouched, and record decodes the record the general way, which
// accepts any JSON and gives the error for bad input. What the fast path accepts, the general
// path decodes to the same Record.
func (d *decoder) recordFast(r *Record) bool {
	// The literals are compared as constants (string(b[i:i+len(k)]) == k), which the compiler
	// turns into a few word compares; a helper taking them as arguments would call memequal.
	const (
		kTopic     = `{"topic":"`
		kPartition = `","partition":`
		kOffset    = `,"offset":`
		kKey       = `,"key":"`
		kValue     = `,"value":"`
	)
	b, i := d.buf, d.pos
	var (
		rec      Record
		ok       bool
		from, to int
		v, off   int64
	)
	if len(b)-i < len(kTopic) || string(b[i:i+len(kTopic)]) != kTopic {
		return false
	}
	// A history's records mostly name one topic: the previous record's (plain, since this
	// path took it) is matched first, which spares the scan and the interning.
	i += len(kTopic)
	sameTopic := len(d.topic) > 0 && len(b)-i > len(d.topic) && string(b[i:i+len(d.topic)]) == d.topic &&
		b[i+len(d.topic)] == '"'
	if sameTopic {
		from, to = i, i+len(d.topic)
	} else if from, to, ok = plainString(b, i); !ok {
		return false
	}
	topic := b[from:to]
	if i = to; len(b)-i < len(kPartition) || string(b[i:i+len(kPartition)]) != kPartition {
		return false
	}
	if v, i, ok = smallInt(b, i+len(kPartition)); !ok || v < math.MinInt32 || v > math.MaxInt32 {
		return false
	}
	rec.Partition = int32(v)
	hasOffset := len(b)-i >= len(kOffset) && string(b[i:i+len(kOffset)]) == kOffset
	if hasOffset {
		if off, i, ok = smallInt(b, i+len(kOffset)); !ok {
			return false
		}
	}
	var key []byte
	if len(b)-i >= len(kKey) && string(b[i:i+len(kKey)]) == kKey {
		if from, to, ok = plainString(b, i+len(kKey)); !ok {
			return false
		}
		key, i = b[from:to], to+1
	}
	if len(b)-i < len(kValue) || string(b[i:i+len(kValue)]) != kValue {
		return false
	}
	if from, to, ok = plainString(b, i+len(kValue)); !ok || to+1 >= len(b) || b[to+1] != '}' {
		return false
	}
	// The record is in the shape: only now take strings and an offset slot.
	if sameTopic {
		rec.Topic = d.topic
	} else {
		rec.Topic = d.intern(topic)
		d.topic = rec.Topic
	}
	if key != nil {
		rec.Key = d.intern(key)
	}
	rec.Value = d.values.str(b[from:to])
	if hasOffset {
		rec.Offset = d.intSlot(off)
	}
	*r = rec
	d.pos = to + 2
	return true
}

// plainString finds the end of the string whose contents start at i, if it is plain printable
// ASCII (no escape, no control character, nothing the general path would change): the
// contents are b[from:to], and b[to] is the closing quote.
func plainString(b []byte, i int) (from, to int, ok bool) {
	for j := i; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return i, j, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// smallInt reads an integer of at most 18 digits (which cannot overflow) at i, followed by
// ',' or '}', as the general path's int would read it; anything else reports false.
func smallInt(b []byte, i int) (v int64, end int, ok bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		v = v*10 + int64(b[i]-'0')
		i++
	}
	switch n := i - start; {
	case n == 0 || n > 18 || (n > 1 && b[start] == '0'):
		return 0, 0, false
	case i >= len(b) || (b[i] != ',' && b[i] != '}'):
		return 0, 0, false
	}
	if neg {
		v = -v
	}
	return v, i, true
}

// records reads an array of records into the backing array *cache (which it grows and keeps
// for the next call), or null as nil. An empty array is an empty non-nil slice, as
// encoding/json makes it.
func (d *decoder) records(cache *[]Record) ([]Record, error) {
	if d.null() {
		return nil, nil
	}
	if err := d.open('[', "records"); err != nil {
		return nil, err
	}
	buf, start := cache, 0
	if d.own != nil {
		buf, start = &d.own.recs, len(d.own.recs) // the list goes after the lists before it
	}
	dst := (*buf)[:start]
	if dst == nil {
		dst = []Record{}
	}
	for first := true; ; first = false {
		ok, err := d.element(first)
		if err != nil {
			return nil, err
		}
		if !ok {
			*buf = dst
			if d.own != nil {
				return slices.Clip(dst[start:]), nil // the next list goes right after it
			}
			return dst, nil
		}
		if len(dst) < cap(dst) {
			dst = dst[:len(dst)+1]
		} else {
			dst = append(dst, Record{})
		}
		if err := d.record(&dst[len(dst)-1]); err != nil {
			return nil, fmt.Errorf("record %d: %w", len(dst)-1-start, err)
		}
	}
}

func (d *decoder) txnValue(t *Txn) error {
	*t = Txn{}
	if err := d.open('{', "txn"); err != nil {
		return err
	}
	for first := true; ; first = false {
		name, ok, err := d.member(first)
		if err != nil || !ok {
			return err
		}
		switch string(name) {
		case "txn_id":
			t.TxnID, err = d.istr()
		case "records":
			t.Records, err = d.records(&d.txnRecs)
		case "intent":
			t.Intent, err = d.istr()
		case "reads":
			t.Reads, err = d.records(&d.txnReads)
		case "isolation":
			t.Isolation, err = d.istr()
		case "end_t":
			t.EndT, err = d.int()
		default:
			err = d.skip()
		}
		if err != nil {
			return fmt.Errorf("%q: %w", name, err)
		}
	}
}

func (d *decoder) pollValue(p *Poll) error {
	*p = Poll{}
	if err := d.open('{', "poll"); err != nil {
		return err
	}
	for first := true; ; first = false {
		name, ok, err := d.member(first)
		if err != nil || !ok {
			return err
		}
		switch string(name) {
		case "isolation":
			p.Isolation, err = d.istr()
		case "group":
			p.Group, err = d.istr()
		case "records":
			p.Records, err = d.records(&d.pollRecs)
		default:
			err = d.skip()
		}
		if err != nil {
			return fmt.Errorf("%q: %w", name, err)
		}
	}
}

func (d *decoder) finalRead(fr *FinalRead) error {
	*fr = FinalRead{}
	if err := d.open('{', "final-read"); err != nil {
		return err
	}
	hasPartition := false
	for first := true; ; first = false {
		name, ok, err := d.member(first)
		if err != nil {
			return err
		}
		if !ok {
			if !hasPartition {
				return errScanNoPartition
			}
			return nil
		}
		switch string(name) {
		case "topic":
			fr.Topic, err = d.istr()
		case "partition":
			err = d.partition(&fr.Partition, &hasPartition)
		case "isolation":
			fr.Isolation, err = d.istr()
		case "from":
			fr.From, err = d.int64OrNull()
		case "end":
			fr.End, err = d.int64OrNull()
		case "records":
			fr.Records, err = d.records(&d.frRecs)
		case "incomplete":
			fr.Incomplete, err = d.bool()
		default:
			err = d.skip()
		}
		if err != nil {
			return fmt.Errorf("%q: %w", name, err)
		}
	}
}

func (d *decoder) rpwValue(r *RPW) error {
	*r = RPW{}
	if err := d.open('{', "rpw"); err != nil {
		return err
	}
	for first := true; ; first = false {
		name, ok, err := d.member(first)
		if err != nil || !ok {
			return err
		}
		switch string(name) {
		case "input":
			r.Input, err = d.records(&d.rpwIn)
		case "output":
			r.Output, err = d.records(&d.rpwOut)
		case "txn_id":
			r.TxnID, err = d.istr()
		case "end_t":
			r.EndT, err = d.int()
		default:
			err = d.skip()
		}
		if err != nil {
			return fmt.Errorf("%q: %w", name, err)
		}
	}
}
