package verify

import (
	"testing"
	"unsafe"
)

// TestValueIsOneCacheLine: the value state is padded to 64 bytes, so that a read of one misses
// the cache once (see value).
func TestValueIsOneCacheLine(t *testing.T) {
	if n := unsafe.Sizeof(value{}); n != 64 {
		t.Fatalf("a value state is %d bytes, want 64: adjust its padding", n)
	}
}
