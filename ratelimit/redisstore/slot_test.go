package redisstore

import (
	"strconv"
	"strings"
	"testing"
)

func TestSlot(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]uint16{
		"123456789":            12739,
		"foo":                  12182,
		"{user1000}.following": 3443,
		"{user1000}.followers": 3443,
		"foo{}{bar}":           8363,
		"rl:{user:1}":          slot("user:1"),
		"{}":                   slot("{}"),
	} {
		if got := slot(key); got != want {
			t.Errorf("slot(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestEncodeLimitID(t *testing.T) {
	seen := map[string]bool{}
	for _, id := range []uint32{0, 1, 63, 64, 1<<30 - 1, 1 << 30, 0xffffffff} {
		s := encodeLimitID(id)
		if len(s) != limitIDLen {
			t.Fatalf("encodeLimitID(%d) = %q", id, s)
		}
		seen[s] = true
	}
	if len(seen) != 5 { // ids equal modulo 2^30 share a spelling
		t.Fatalf("spellings: %v", seen)
	}
}

func TestDecodeState(t *testing.T) {
	st, ok := decodeState("12|abcde5,1|fghij,,,250")
	if !ok || st.hits != 12 || st.blockedUntil != stateEpoch+250 {
		t.Fatalf("decodeState: %+v %v", st, ok)
	}
	if _, ok := decodeState("not state"); ok {
		t.Fatal("garbage decoded")
	}
}

// A prefix with a brace would take the place of the store's own hash tag.
func TestCheckPrefix_RefusesBracesOnly(t *testing.T) {
	for _, ok := range []string{"", DefaultPrefix, "app:", "a:b:c-", "ümlaut:"} {
		if err := CheckPrefix(ok); err != nil {
			t.Errorf("CheckPrefix(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"{", "}", "app{x}:", "app{}:", "a}b{"} {
		err := CheckPrefix(bad)
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("CheckPrefix(%q) = %v, want an error naming it", bad, err)
		}
	}
}
