package nemesis

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/IBM/sarama"
)

// DescribeQuorum (API key 55), by hand: sarama does not implement it. Version 1, flexible
// (compact strings and arrays, tagged fields). Only the fields up to the partition's leader id
// and epoch are read; the rest of the answer is ignored.

const (
	apiDescribeQuorum     = 55
	describeQuorumVersion = 1
	metadataTopic         = "__cluster_metadata"
)

// describeQuorum sends one DescribeQuorum request to the broker at addr and returns the
// quorum leader and epoch it reports.
func describeQuorum(ctx context.Context, addr string) (leader, epoch int, err error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return -1, -1, fmt.Errorf("describe quorum: %w", err)
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return -1, -1, fmt.Errorf("describe quorum: %w", err)
	}
	const correlation = 0x5155
	if _, err := conn.Write(describeQuorumRequest(correlation, "verity-nemesis")); err != nil {
		return -1, -1, fmt.Errorf("describe quorum: sending: %w", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return -1, -1, fmt.Errorf("describe quorum: reading the answer: %w", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<20 {
		return -1, -1, fmt.Errorf("describe quorum: answer of %d bytes is not plausible", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return -1, -1, fmt.Errorf("describe quorum: reading the answer: %w", err)
	}
	return parseDescribeQuorumResponse(body, correlation)
}

// describeQuorumRequest is a complete DescribeQuorum v1 request for partition 0 of the
// metadata topic, size prefix included.
func describeQuorumRequest(correlation int32, clientID string) []byte {
	var b bytes.Buffer
	put16 := func(v int16) { _ = binary.Write(&b, binary.BigEndian, v) }
	put32 := func(v int32) { _ = binary.Write(&b, binary.BigEndian, v) }
	uvar := func(v uint64) { b.Write(binary.AppendUvarint(nil, v)) }
	// Request header v2: api key, version, correlation id, client id (a plain nullable
	// string even in flexible headers), tagged fields.
	put16(apiDescribeQuorum)
	put16(describeQuorumVersion)
	put32(correlation)
	put16(int16(len(clientID)))
	b.WriteString(clientID)
	uvar(0)
	// Body: topics [1] { name, partitions [1] { index 0, tags }, tags }, tags. Compact arrays
	// and strings carry length+1.
	uvar(2)
	uvar(uint64(len(metadataTopic) + 1))
	b.WriteString(metadataTopic)
	uvar(2)
	put32(0)
	uvar(0)
	uvar(0)
	uvar(0)
	out := binary.BigEndian.AppendUint32(nil, uint32(b.Len()))
	return append(out, b.Bytes()...)
}

// parseDescribeQuorumResponse reads the leader and epoch of the first partition of a
// DescribeQuorum v0/v1 response body (after the size prefix).
func parseDescribeQuorumResponse(body []byte, correlation int32) (int, int, error) {
	r := &wireReader{b: body}
	if c := r.int32(); c != correlation && r.err == nil {
		return -1, -1, fmt.Errorf("describe quorum: answer to request %d, not %d", c, correlation)
	}
	r.skipTags() // response header v1
	if code := r.int16(); code != 0 && r.err == nil {
		return -1, -1, fmt.Errorf("describe quorum: %w", sarama.KError(code))
	}
	if n := r.uvarint(); n < 2 && r.err == nil {
		return -1, -1, errors.New("describe quorum: no topic in the answer")
	}
	r.compactString()
	if n := r.uvarint(); n < 2 && r.err == nil {
		return -1, -1, errors.New("describe quorum: no partition in the answer")
	}
	r.int32() // partition index
	code := r.int16()
	leader := r.int32()
	epoch := r.int32()
	if r.err != nil {
		return -1, -1, fmt.Errorf("describe quorum: malformed answer: %w", r.err)
	}
	if code != 0 {
		return -1, -1, fmt.Errorf("describe quorum: partition error: %w", sarama.KError(code))
	}
	return int(leader), int(epoch), nil
}

// wireReader reads big-endian Kafka protocol fields; the first short read sets err and every
// later read returns zero.
type wireReader struct {
	b   []byte
	err error
}

func (r *wireReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = io.ErrUnexpectedEOF
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *wireReader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *wireReader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *wireReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = io.ErrUnexpectedEOF
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *wireReader) compactString() string {
	n := r.uvarint()
	if n == 0 {
		return ""
	}
	return string(r.take(int(n - 1)))
}

func (r *wireReader) skipTags() {
	for range r.uvarint() {
		r.uvarint()
		r.take(int(r.uvarint()))
	}
}
