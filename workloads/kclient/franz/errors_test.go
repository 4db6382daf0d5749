package franz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// The broker answers are written by code: each code is the error franz-go names so (it keeps
// code 6's name from before KIP-392).
func TestBrokerAnswersNameFranzErrors(t *testing.T) {
	formerly := map[int16]string{6: "NOT_LEADER_FOR_PARTITION"}
	for _, a := range kclient.BrokerAnswers() {
		want := a.Name
		if n, ok := formerly[a.Code]; ok {
			want = n
		}
		require.Equal(t, want, kerr.ErrorForCode(a.Code).(*kerr.Error).Message, "code %d", a.Code)
	}
}

func TestSendTableIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range SendTable() {
		require.NotEmpty(t, r.Name)
		require.False(t, seen[r.Name], "row %s appears twice", r.Name)
		seen[r.Name] = true
		require.NotEmpty(t, r.Why, r.Name)
		require.True(t, (r.Err == nil) != (r.Match == nil), "%s: exactly one of Err and Match", r.Name)
		require.Contains(t, []history.Type{"", history.Fail, history.Info}, r.Once, r.Name)
		if r.OnceAcksAll != "" {
			require.NotEmpty(t, r.Once, "%s: OnceAcksAll refines Once", r.Name)
			require.Contains(t, []history.Type{history.Fail, history.Info}, r.OnceAcksAll, r.Name)
		}
		if r.Once != "" {
			// An answer is trusted only as franz-go passes it on, the bare *kerr.Error.
			_, isKerr := r.Err.(*kerr.Error)
			require.True(t, isKerr, "%s: a broker answer row names a *kerr.Error", r.Name)
		}
		n := 0
		for _, b := range []bool{r.Once != "", r.Deterministic, r.Idle} {
			if b {
				n++
			}
		}
		require.LessOrEqual(t, n, 1, "%s: at most one of Once, Deterministic and Idle", r.Name)
	}
}

// The franz-go table, row by row, in five situations of the record:
//
//	c1 once: its batch was its partition's first and the client wrote one produce request (acks=1)
//	c2 once, acks=all
//	c3 idle: first batch, no produce request written at all (acks=all)
//	c4 retried: first batch, two produce requests written
//	c5 behind: an earlier record of its partition was unanswered when it was handed over
func TestClassifySendEveryRow(t *testing.T) {
	ctxs := []SendContext{
		{Buffered: true, Head: true, Writes: 1},
		{Buffered: true, Head: true, Writes: 1, AcksAll: true},
		{Buffered: true, Head: true, Writes: 0, AcksAll: true},
		{Buffered: true, Head: true, Writes: 2},
		{Buffered: true, Head: false, Writes: 0},
	}
	const F, I = history.Fail, history.Info
	want := map[string][5]history.Type{
		"NOT_ENOUGH_REPLICAS":               {F, F, F, I, I},
		"NOT_ENOUGH_REPLICAS_AFTER_APPEND":  {I, I, I, I, I},
		"REQUEST_TIMED_OUT":                 {I, I, I, I, I},
		"NOT_LEADER_OR_FOLLOWER":            {F, I, I, I, I},
		"FENCED_LEADER_EPOCH":               {F, F, F, I, I},
		"KAFKA_STORAGE_ERROR":               {I, I, I, I, I},
		"CORRUPT_MESSAGE":                   {F, F, F, I, I},
		"OUT_OF_ORDER_SEQUENCE_NUMBER":      {F, F, F, I, I},
		"UNKNOWN_PRODUCER_ID":               {F, F, F, I, I},
		"INVALID_PRODUCER_EPOCH":            {F, F, F, I, I},
		"MESSAGE_TOO_LARGE":                 {F, F, F, F, I},
		"RECORD_LIST_TOO_LARGE":             {F, F, F, F, I},
		"INVALID_RECORD":                    {F, F, F, F, I},
		"INVALID_TIMESTAMP":                 {F, F, F, F, I},
		"INVALID_REQUIRED_ACKS":             {F, F, F, F, I},
		"UNSUPPORTED_COMPRESSION_TYPE":      {F, F, F, F, I},
		"TOPIC_AUTHORIZATION_FAILED":        {F, F, F, F, I},
		"CLUSTER_AUTHORIZATION_FAILED":      {F, F, F, F, I},
		"INVALID_TOPIC_EXCEPTION":           {F, F, F, F, I},
		"UNSUPPORTED_VERSION":               {F, F, F, F, I},
		"LEADER_NOT_AVAILABLE":              {I, I, I, I, I},
		"UNKNOWN_TOPIC_OR_PARTITION":        {I, I, I, I, I},
		"UNKNOWN_TOPIC_ID":                  {I, I, I, I, I},
		"client: record timeout":            {I, I, F, I, I},
		"client: record retries":            {I, I, F, I, I},
		"client: aborting buffered records": {I, I, F, I, I},
		"client: context canceled":          {I, I, F, I, I},
		"client: context deadline exceeded": {I, I, F, I, I},
		"client: max buffered":              {I, I, F, I, I},
		"client: client closed":             {I, I, I, I, I},
		"network error or timeout":          {I, I, I, I, I},
	}
	samples := map[string]error{
		"network error or timeout": &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)},
	}
	rows := SendTable()
	require.Len(t, want, len(rows), "every row has its expected outcomes here, and nothing else")
	for _, r := range rows {
		exp, ok := want[r.Name]
		require.True(t, ok, "row %s has no expected outcomes", r.Name)
		err := r.Err
		if err == nil {
			err = samples[r.Name]
		}
		require.NotNil(t, err, "row %s needs a sample error", r.Name)
		for i, sc := range ctxs {
			o := ClassifySend(err, sc)
			assert.Equal(t, exp[i], o.Type, "%s in situation c%d %+v: rule %q, %s", r.Name, i+1, sc, o.Rule, o.Why)
			assert.Equal(t, r.Name, o.Rule, "%s in c%d", r.Name, i+1)
			assert.NotEmpty(t, o.Why)
		}
		// Whatever the error, a record franz-go never buffered was never sent.
		o := ClassifySend(err, SendContext{Buffered: false, Head: false, Writes: 9})
		assert.Equal(t, history.Fail, o.Type, "%s, never buffered", r.Name)
	}
}

func TestClassifySendOtherCases(t *testing.T) {
	once := SendContext{Buffered: true, Head: true, Writes: 1, AcksAll: true}
	cases := []struct {
		name string
		err  error
		sc   SendContext
		want history.Type
	}{
		{"acknowledged", nil, SendContext{}, history.OK},
		// franz-go wraps errors it met elsewhere (loading a producer id): not the batch's answer.
		{"wrapped answer", fmt.Errorf("unable to initialize a producer ID due to request failures: %w", kerr.NotEnoughReplicas), once, history.Info},
		// The broker's MESSAGE_TOO_LARGE comes with franz-go's sizes appended.
		{"message too large with sizes", fmt.Errorf("%w (uncompressed_bytes=2000000, compressed_bytes=1900000)", kerr.MessageTooLarge), once, history.Fail},
		// franz-go's own size check, before the record joins a batch.
		{"message too large before buffering", fmt.Errorf("%w (uncompressed_bytes=2000000)", kerr.MessageTooLarge), SendContext{}, history.Fail},
		{"cancelled while Produce waited for room", context.Canceled, SendContext{Head: true, Writes: 3}, history.Fail},
		{"eof", io.EOF, once, history.Info},
		{"first read eof", &kgo.ErrFirstReadEOF{}, once, history.Info},
		{"unlisted broker error", kerr.UnknownServerError, once, history.Info},
		{"unlisted client error", errors.New("unable to partition record due to no usable partitions"), once, history.Info},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := ClassifySend(c.err, c.sc)
			assert.Equal(t, c.want, o.Type, "rule %q: %s", o.Rule, o.Why)
			if c.err != nil {
				assert.NotEmpty(t, o.Why)
			}
		})
	}
}
