package kafkaconf

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Acks is a producer's acks setting, with Kafka's numeric values: AcksNone (0), AcksLeader (1)
// or AcksAll (-1, written "all").
type Acks int8

const (
	// AcksNone: the producer does not wait for the broker (acks=0).
	AcksNone Acks = 0
	// AcksLeader: the leader answers once it has appended the record (acks=1).
	AcksLeader Acks = 1
	// AcksAll: the leader answers once every in-sync replica has it (acks=all, also -1).
	AcksAll Acks = -1
)

// ParseAcks reads "0", "1", "all" or "-1" (case and surrounding space ignored).
func ParseAcks(s string) (Acks, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "0":
		return AcksNone, nil
	case "1":
		return AcksLeader, nil
	case "all", "-1":
		return AcksAll, nil
	}
	return 0, fmt.Errorf("acks %q: want 0, 1 or all", s)
}

// String writes acks as Kafka's documentation does: "0", "1" or "all".
func (a Acks) String() string {
	switch a {
	case AcksAll:
		return "all"
	case AcksNone, AcksLeader:
		return strconv.Itoa(int(a))
	}
	return fmt.Sprintf("invalid(%d)", int(a))
}

// Valid reports whether a is 0, 1 or all.
func (a Acks) Valid() bool { return a == AcksNone || a == AcksLeader || a == AcksAll }

// MarshalText writes a as String does; a value ParseAcks cannot read back is an error.
func (a Acks) MarshalText() ([]byte, error) {
	if !a.Valid() {
		return nil, fmt.Errorf("acks %d: want 0, 1 or all", int(a))
	}
	return []byte(a.String()), nil
}

// UnmarshalText reads what ParseAcks reads (YAML scalars and JSON strings).
func (a *Acks) UnmarshalText(b []byte) error {
	v, err := ParseAcks(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// UnmarshalJSON also accepts the numbers 0, 1 and -1.
func (a *Acks) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	return a.UnmarshalText([]byte(s))
}

// Isolation is a consumer's isolation.level.
type Isolation string

const (
	// ReadCommitted: records of open and aborted transactions are hidden; reads stop at the
	// last stable offset.
	ReadCommitted Isolation = "read_committed"
	// ReadUncommitted: every record up to the high watermark (Kafka's consumer default).
	ReadUncommitted Isolation = "read_uncommitted"
)

// Isolations lists the levels.
func Isolations() []Isolation { return []Isolation{ReadCommitted, ReadUncommitted} }

// ParseIsolation reads "read_committed" or "read_uncommitted".
func ParseIsolation(s string) (Isolation, error) {
	if v := Isolation(strings.TrimSpace(s)); slices.Contains(Isolations(), v) {
		return v, nil
	}
	return "", fmt.Errorf("isolation %q: want %s or %s", s, ReadCommitted, ReadUncommitted)
}

// UnmarshalText reads what ParseIsolation reads.
func (i *Isolation) UnmarshalText(b []byte) error {
	v, err := ParseIsolation(string(b))
	if err != nil {
		return err
	}
	*i = v
	return nil
}

// Compression is a producer's compression.type.
type Compression string

// The codecs Kafka 4.3 offers.
const (
	CompressionNone   Compression = "none"
	CompressionGzip   Compression = "gzip"
	CompressionSnappy Compression = "snappy"
	CompressionLZ4    Compression = "lz4"
	CompressionZstd   Compression = "zstd"
)

// Compressions lists the codecs.
func Compressions() []Compression {
	return []Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd}
}

// ParseCompression reads a codec name (case ignored).
func ParseCompression(s string) (Compression, error) {
	if v := Compression(strings.ToLower(strings.TrimSpace(s))); slices.Contains(Compressions(), v) {
		return v, nil
	}
	names := make([]string, 0, len(Compressions()))
	for _, c := range Compressions() {
		names = append(names, string(c))
	}
	return "", fmt.Errorf("compression %q: want one of %s", s, strings.Join(names, ", "))
}

// UnmarshalText reads what ParseCompression reads.
func (c *Compression) UnmarshalText(b []byte) error {
	v, err := ParseCompression(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Duration is a time.Duration written as Go writes durations ("60s", "1m30s", "250ms") in YAML
// and JSON, so that a scenario file and a history header say "30s", not 30000000000.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Seconds returns d in seconds.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

// String writes d the way ParseDuration reads it, without zero minute or second parts ("1m"
// rather than "1m0s").
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ParseDuration reads a Go duration ("60s", "1m30s"); a bare 0 is zero.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want a duration such as 500ms, 30s or 2m", s)
	}
	return Duration(d), nil
}

// MarshalText writes d as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads what ParseDuration reads.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
