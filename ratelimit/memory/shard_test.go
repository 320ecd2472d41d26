package memory

import (
	"testing"
	"unsafe"
)

func TestShard_OneCacheLine(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("padded for 64-bit platforms")
	}
	if size := unsafe.Sizeof(shard{}); size != 64 {
		t.Fatalf("shard is %d bytes, want 64", size)
	}
}
