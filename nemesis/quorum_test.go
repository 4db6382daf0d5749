package nemesis

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

// quorumAnswer builds a DescribeQuorum v1 response body (no size prefix).
func quorumAnswer(correlation int32, topErr, partErr int16, leader, epoch int32) []byte {
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.BigEndian, v) }
	uv := func(v uint64) { b.Write(binary.AppendUvarint(nil, v)) }
	w(correlation)
	uv(1) // one tagged field in the header, to be skipped
	uv(7)
	uv(2)
	b.Write([]byte{0xAA, 0xBB})
	w(topErr)
	uv(2)
	uv(uint64(len(metadataTopic) + 1))
	b.WriteString(metadataTopic)
	uv(2)
	w(int32(0))
	w(partErr)
	w(leader)
	w(epoch)
	w(int64(1234)) // high watermark, then voters etc.: ignored
	return b.Bytes()
}

func TestDescribeQuorumWire(t *testing.T) {
	req := describeQuorumRequest(9, "c")
	require.Equal(t, uint32(len(req)-4), binary.BigEndian.Uint32(req), "size prefix")
	r := &wireReader{b: req[4:]}
	require.Equal(t, int16(55), r.int16())
	require.Equal(t, int16(1), r.int16())
	require.Equal(t, int32(9), r.int32())
	require.Equal(t, int16(1), r.int16())
	require.Equal(t, "c", string(r.take(1)))
	r.skipTags()
	require.Equal(t, uint64(2), r.uvarint())
	require.Equal(t, metadataTopic, r.compactString())
	require.Equal(t, uint64(2), r.uvarint())
	require.Equal(t, int32(0), r.int32())
	require.NoError(t, r.err)
	require.Len(t, r.b, 3, "three empty tag sections")

	leader, epoch, err := parseDescribeQuorumResponse(quorumAnswer(9, 0, 0, 2, 5), 9)
	require.NoError(t, err)
	require.Equal(t, 2, leader)
	require.Equal(t, 5, epoch)

	_, _, err = parseDescribeQuorumResponse(quorumAnswer(9, int16(sarama.ErrNotController), 0, 2, 5), 9)
	require.ErrorIs(t, err, sarama.ErrNotController)
	_, _, err = parseDescribeQuorumResponse(quorumAnswer(9, 0, int16(sarama.ErrNotLeaderForPartition), 2, 5), 9)
	require.ErrorIs(t, err, sarama.ErrNotLeaderForPartition)
	_, _, err = parseDescribeQuorumResponse(quorumAnswer(8, 0, 0, 2, 5), 9)
	require.ErrorContains(t, err, "not 9")
	full := quorumAnswer(9, 0, 0, 2, 5)
	for cut := range len(full) - 8 {
		_, _, err = parseDescribeQuorumResponse(full[:cut], 9)
		require.Error(t, err, "truncated at %d", cut)
	}
}

// describeQuorum against a server that answers like a broker.
func TestDescribeQuorumOverTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		var size [4]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			return
		}
		req := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(conn, req); err != nil {
			return
		}
		corr := int32(binary.BigEndian.Uint32(req[4:8]))
		body := quorumAnswer(corr, 0, 0, 3, 11)
		_, _ = conn.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
		_, _ = conn.Write(body)
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	leader, epoch, err := describeQuorum(ctx, ln.Addr().String())
	require.NoError(t, err)
	require.Equal(t, 3, leader)
	require.Equal(t, 11, epoch)
}

func TestParseQuorumLog(t *testing.T) {
	// Lines as Kafka 4.3.1 prints them (shortened where they repeat).
	log := `[2026-11-29 08:46:17,747] INFO [RaftManager id=2] Completed transition to CandidateState(localId=2, localDirectoryId=0hUD, epoch=1, epochElection=EpochElection[voterStates={1=VoterState(replicaKey=ReplicaKey(id=1, directoryId=<undefined>), state=GRANTED)}], highWatermark=Optional.empty, electionTimeoutMs=1413) from ProspectiveState(epoch=0, leaderId=OptionalInt.empty) (org.apache.kafka.raft.QuorumState)
[2026-11-29 08:46:17,914] INFO [RaftManager id=2] Completed transition to Leader(localVoterNode=VoterNode(voterKey=ReplicaKey(id=2, directoryId=0hUD), listeners=Endpoints(endpoints={ListenerName(CONTROLLER)=kafka-2/<unresolved>:30002}), supportedKRaftVersion=SupportedVersionRange[min_version:0, max_version:1]), epoch=1, epochStartOffset=0, highWatermark=Optional.empty, voterStates={1=ReplicaState(replicaKey=ReplicaKey(id=1, directoryId=<undefined>), endOffset=Optional.empty)}) from CandidateState(localId=2, epoch=1) (org.apache.kafka.raft.QuorumState)
[2026-11-29 08:50:00,000] INFO [RaftManager id=2] Completed transition to FollowerState(fetchTimeoutMs=2000, epoch=2, leader=3, leaderEndpoints=Endpoints(endpoints={}), votedKey=Optional.empty, voters=[1, 2, 3], highWatermark=Optional.empty) from Leader(localVoterNode=VoterNode(voterKey=ReplicaKey(id=2, directoryId=0hUD)), epoch=1) (org.apache.kafka.raft.QuorumState)
`
	leader, epoch, top := parseQuorumLog(log)
	require.Equal(t, 2, leader)
	require.Equal(t, 1, epoch)
	require.Equal(t, 2, top, "a later epoch: node 2 is no longer leader")

	leader, epoch, _ = parseQuorumLog(`INFO Completed transition to Leader(localId=1, epoch=4, epochStartOffset=9)`)
	require.Equal(t, 1, leader, "older format")
	require.Equal(t, 4, epoch)

	leader, _, _ = parseQuorumLog(`[RaftManager id=1] Completed transition to Leader(localVoterNode=VoterNode(voterKey=ReplicaKey(id=1, directoryId=x)), epoch=4, a=b)
[RaftManager id=1] Completed transition to ResignedState(localId=1, epoch=4, voters=[1, 2, 3])`)
	require.Equal(t, -1, leader, "a resigned leader leads nothing")

	leader, _, top = parseQuorumLog("nothing here")
	require.Equal(t, -1, leader)
	require.Equal(t, -1, top)
}

func TestControllerFromLogs(t *testing.T) {
	fc := newFake(3, false)
	fc.logs[1] = "[RaftManager id=1] Completed transition to Leader(localVoterNode=VoterNode(voterKey=ReplicaKey(id=1, directoryId=x)), epoch=1, a=b)\n"
	fc.logs[3] = "[RaftManager id=3] Completed transition to Leader(localVoterNode=VoterNode(voterKey=ReplicaKey(id=3, directoryId=x)), epoch=2, a=b)\n"
	k := NewKafkaLocator(fc, nil)
	id, epoch, err := k.controllerFromLogs(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, id)
	require.Equal(t, 2, epoch)

	fc.logs[2] = "[RaftManager id=2] Completed transition to CandidateState(localId=2, localDirectoryId=x, epoch=3, retries=1)\n"
	_, _, err = k.controllerFromLogs(t.Context())
	require.ErrorContains(t, err, "election is under way")
}
