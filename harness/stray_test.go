package harness

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnBatch: the stray batch is one transactional record that a broker's checks accept: its
// length and Castagnoli CRC are right and its record reads back.
func TestTxnBatch(t *testing.T) {
	raw := txnBatch(42, 3, []byte("stray-1"), time.UnixMilli(1_700_000_000_000))
	var b kmsg.RecordBatch
	if err := b.ReadFrom(raw); err != nil {
		t.Fatal(err)
	}
	if int(b.Length) != len(raw)-12 || b.Magic != 2 || b.Attributes&0x10 == 0 || b.ProducerID != 42 || b.ProducerEpoch != 3 || b.NumRecords != 1 {
		t.Fatalf("batch %+v", b)
	}
	if crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)); uint32(b.CRC) != crc || binary.BigEndian.Uint32(raw[17:21]) != crc {
		t.Fatalf("crc %x, want %x", uint32(b.CRC), crc)
	}
	var r kmsg.Record
	if err := r.ReadFrom(b.Records); err != nil {
		t.Fatal(err)
	}
	if string(r.Value) != "stray-1" || int(r.Length) != len(b.Records)-1 {
		t.Fatalf("record %+v (%d bytes)", r, len(b.Records))
	}
}
