package nemesis

import (
	"context"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

// The expected values come from the JDK (jshell, OpenJDK 17): "...".hashCode(), Kafka's
// Utils.abs (Math.abs, 0 for Integer.MIN_VALUE), and Base64.getUrlEncoder().withoutPadding()
// over the 16 bytes of new Uuid(hi, lo), which is what Uuid.toString prints.
func TestJavaStringHash(t *testing.T) {
	for _, tc := range []struct {
		s    string
		hash int32
		abs  int32
		mod  int32 // % 50, the default partition count of __share_group_state
	}{
		{"", 0, 0, 0},
		{"a:b:0", 91405439, 91405439, 39},
		// Integer.MIN_VALUE: Math.abs would leave it negative; Utils.abs makes it 0.
		{"polygenelubricants", -2147483648, 0, 0},
		// Non-ASCII: Java hashes UTF-16 code units, not UTF-8 bytes.
		{"gr\u00fcppe:x:1", 2066889865, 2066889865, 15},
		{"\u00e9t\u00e9:q:3", -127039602, 127039602, 2},
		// Outside the BMP: the rune counts as its two surrogates.
		{"g\U0001F600:t:2", 2147324732, 2147324732, 32},
	} {
		require.Equal(t, tc.hash, javaStringHash(tc.s), "hashCode of %q", tc.s)
		require.Equal(t, tc.abs, javaUtilsAbs(tc.hash), "Utils.abs(%d)", tc.hash)
		require.Equal(t, tc.mod, coordinatorPartition(tc.s, 50), "partition of %q", tc.s)
	}
	require.Equal(t, int32(5), javaUtilsAbs(-5))
	require.Equal(t, int32(2147483647), javaUtilsAbs(-2147483647))
}

func TestShareCoordinatorKey(t *testing.T) {
	// new Uuid(0x0123456789abcdefL, 0xfedcba9876543210L) and
	// new Uuid(0xffffffffffffffffL, 0x00000000000000ffL): '-' and '_' are the URL-safe
	// alphabet's, and there is no padding.
	u1 := sarama.Uuid{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}
	u2 := sarama.Uuid{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0xff}
	require.Equal(t, "ASNFZ4mrze_-3LqYdlQyEA", kafkaUuid(u1))
	require.Equal(t, "__________8AAAAAAAAA_w", kafkaUuid(u2))
	for _, tc := range []struct {
		group     string
		id        sarama.Uuid
		partition int32
		key       string
		hash      int32
		of50      int32
		of3       int32
	}{
		{"verity-share", u1, 0, "verity-share:ASNFZ4mrze_-3LqYdlQyEA:0", -173568702, 2, 0},
		{"verity-share", u1, 7, "verity-share:ASNFZ4mrze_-3LqYdlQyEA:7", -173568695, 45, 2},
		{"g", u2, 2147483647, "g:__________8AAAAAAAAA_w:2147483647", -502062254, 4, 2},
	} {
		key := shareCoordinatorKey(tc.group, kafkaUuid(tc.id), tc.partition)
		require.Equal(t, tc.key, key)
		require.Equal(t, tc.hash, javaStringHash(key), key)
		require.Equal(t, tc.of50, coordinatorPartition(key, 50), key)
		require.Equal(t, tc.of3, coordinatorPartition(key, 3), key)
	}
}

// stateLocator is a fake locator that also tells where the state lives.
type stateLocator struct {
	*fakeLocator
	st  ShareState
	err error
}

func (l stateLocator) ShareState(context.Context, string, string, int32) (ShareState, error) {
	return l.st, l.err
}

func TestShareCoordinatorTarget(t *testing.T) {
	fc, fl, _, _ := setup(t, 3, false)
	tg := ShareCoordinator("verity-share", "q", 0)
	require.Equal(t, "share coordinator of verity-share q-0", tg.String())
	require.NoError(t, tg.Available(fc))

	// A locator that knows the state partition names it in the role.
	e := &Env{Cluster: fc, Locator: stateLocator{fakeLocator: fl, st: ShareState{StatePartition: 17, StatePartitions: 50, Leader: 2}}}
	nodes, role, err := tg.Resolve(t.Context(), e)
	require.NoError(t, err)
	require.Equal(t, []int{2}, nodes)
	require.Equal(t, "share coordinator of verity-share q-0 (__share_group_state-17, leader 2)", role)

	// Before the state exists the target does not resolve, and says why.
	e.Locator = stateLocator{fakeLocator: fl, err: ErrNoShareState}
	_, _, err = tg.Resolve(t.Context(), e)
	require.ErrorIs(t, err, ErrNoShareState)
	require.ErrorContains(t, err, "share coordinator of verity-share q-0")

	// Any other locator answers with the leader alone.
	e.Locator = fl
	_, _, err = tg.Resolve(t.Context(), e)
	require.ErrorIs(t, err, ErrNoShareState)
	fl.share = map[string]int{"verity-share q-0": 3}
	nodes, role, err = tg.Resolve(t.Context(), e)
	require.NoError(t, err)
	require.Equal(t, []int{3}, nodes)
	require.Equal(t, "share coordinator of verity-share q-0 (leader 3)", role)
}
