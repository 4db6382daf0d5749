package kafkaconf

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// KafkaVersion is an Apache Kafka release a cluster runs, "major.minor.patch".
type KafkaVersion string

// DefaultKafkaVersion is the release a scenario runs unless it names one.
const DefaultKafkaVersion KafkaVersion = "4.3.1"

// Release is one Apache Kafka release Verity runs: `make images` builds an image of each
// (docker/build-images.sh keeps the same list, checked by a test).
type Release struct {
	Version KafkaVersion
	// Doc says, for a reader choosing a release, what sets it apart where a run depends on it.
	Doc string
}

// Releases lists the releases Verity runs, oldest first.
func Releases() []Release {
	return []Release{
		{Version: "3.9.2", Doc: "the last 3.x line (logs through reload4j); no transaction.version feature, so KIP-890's " +
			"second part is off: every transactional client speaks protocol v1"},
		{Version: "4.0.2", Doc: "KRaft only; transaction.version 2 (KIP-890 part 2) and the new consumer group protocol; " +
			"eligible leader replicas (KIP-966) in preview"},
		{Version: "4.1.2", Doc: "eligible.leader.replicas.version 1 finalized on new clusters (KIP-966)"},
		{Version: "4.2.2", Doc: "share groups and streams groups finalized on new clusters (share.version, streams.version 1)"},
		{Version: DefaultKafkaVersion, Doc: "the default release"},
		{Version: "4.4.0", Doc: "the newest release; share.version 2"},
	}
}

// KafkaVersions lists the releases' versions, oldest first.
func KafkaVersions() []string {
	var out []string
	for _, r := range Releases() {
		out = append(out, string(r.Version))
	}
	return out
}

// ParseKafkaVersion reads a release Verity runs ("4.3.1").
func ParseKafkaVersion(s string) (KafkaVersion, error) {
	v := KafkaVersion(strings.TrimSpace(s))
	if slices.Contains(KafkaVersions(), string(v)) {
		return v, nil
	}
	return "", fmt.Errorf("kafka version %q: want one of %s (the releases make images builds)", s, strings.Join(KafkaVersions(), ", "))
}

// UnmarshalText reads what ParseKafkaVersion reads.
func (v *KafkaVersion) UnmarshalText(b []byte) error {
	p, err := ParseKafkaVersion(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// Or returns v, or the default release when v is empty.
func (v KafkaVersion) Or() KafkaVersion {
	if v == "" {
		return DefaultKafkaVersion
	}
	return v
}

// Parts returns the version's numbers; a malformed version gives zeros.
func (v KafkaVersion) Parts() (major, minor, patch int) {
	f := strings.Split(string(v.Or()), ".")
	n := func(i int) int {
		if i >= len(f) {
			return 0
		}
		x, _ := strconv.Atoi(f[i])
		return x
	}
	return n(0), n(1), n(2)
}

// Less reports whether v is an older release than o.
func (v KafkaVersion) Less(o KafkaVersion) bool {
	a1, a2, a3 := v.Parts()
	b1, b2, b3 := o.Parts()
	if a1 != b1 {
		return a1 < b1
	}
	if a2 != b2 {
		return a2 < b2
	}
	return a3 < b3
}

// AtLeast reports whether v is release major.minor or later.
func (v KafkaVersion) AtLeast(major, minor int) bool {
	ma, mi, _ := v.Parts()
	return ma > major || ma == major && mi >= minor
}

// Feature is a KRaft feature whose finalized level changes what the cluster does (KIP-584,
// KIP-1022): read from every cluster into the history header, and set by a scenario.
type Feature string

const (
	FeatureMetadata    Feature = "metadata.version"
	FeatureKRaft       Feature = "kraft.version"
	FeatureTransaction Feature = "transaction.version"
	FeatureGroup       Feature = "group.version"
	FeatureELR         Feature = "eligible.leader.replicas.version"
)

// FeatureInfo is what Verity knows of one feature.
type FeatureInfo struct {
	Name Feature
	// Flag is the command-line knob that sets it ("" when a scenario cannot set it).
	Flag string
	Doc  string
}

// Features lists the features Verity reads, the settable ones with their knob.
func Features() []FeatureInfo {
	return []FeatureInfo{
		{Name: FeatureMetadata, Doc: "the metadata log's format; the release's own level on a new cluster"},
		{Name: FeatureKRaft, Doc: "the KRaft quorum's format (1: dynamic quorum, KIP-853)"},
		{Name: FeatureTransaction, Flag: "transaction-version",
			Doc: "2 turns on KIP-890's second part: partitions join a transaction with their first record and " +
				"the producer epoch is bumped at each transaction's end, so a late request of an ended transaction is fenced"},
		{Name: FeatureGroup, Doc: "1 enables the consumer group protocol of KIP-848"},
		{Name: FeatureELR, Flag: "elr-version",
			Doc: "1 turns on eligible leader replicas (KIP-966): a replica that left the ISR only because the ISR " +
				"shrank below min.insync.replicas may still be elected cleanly"},
	}
}

// SettableFeatures lists the features a scenario may set.
func SettableFeatures() []FeatureInfo {
	var out []FeatureInfo
	for _, f := range Features() {
		if f.Flag != "" {
			out = append(out, f)
		}
	}
	return out
}

// ParseFeature reads a settable feature's name.
func ParseFeature(s string) (Feature, error) {
	var names []string
	for _, f := range SettableFeatures() {
		if string(f.Name) == strings.TrimSpace(s) {
			return f.Name, nil
		}
		names = append(names, string(f.Name))
	}
	return "", fmt.Errorf("feature %q: a scenario may set %s", s, strings.Join(names, ", "))
}

// ParseFeatureLevel reads a feature's level, a small whole number.
func ParseFeatureLevel(s string) (int16, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 16)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("feature level %q: want a whole number, 0 or more", s)
	}
	return int16(n), nil
}

// FeatureLevels are feature levels by name: a cluster's finalized ones (every feature it
// finalized, Verity's list or not) or those a scenario sets; a feature absent is at level 0.
type FeatureLevels map[Feature]int16

// Level is f's level (0 when absent).
func (l FeatureLevels) Level(f Feature) int16 { return l[f] }

// String lists the levels, sorted: "metadata.version=27 transaction.version=2".
func (l FeatureLevels) String() string {
	var parts []string
	for _, f := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, fmt.Sprintf("%s=%d", f, l[f]))
	}
	return strings.Join(parts, " ")
}
