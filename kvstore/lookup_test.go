package kvstore

import (
	"errors"
	"testing"
	"time"
)

func TestExpiry_AnswersExistenceAndExpiryInOneLookup(t *testing.T) {
	clock := newFakeClock()
	db := openT(t, t.TempDir(), ttlOptions(clock))
	at := clock.Now().Add(10 * time.Second)
	if err := db.SetWithTTL([]byte("ttl"), []byte("v"), at); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("plain"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	hits, misses := db.Stats().Hits, db.Stats().Misses
	for _, tc := range []struct {
		key     string
		advance time.Duration
		at      time.Time
		hasTTL  bool
		err     error
	}{
		{key: "ttl", at: at, hasTTL: true},
		{key: "plain"},
		{key: "missing", err: ErrNotFound},
		{key: "ttl", advance: 10 * time.Second, err: ErrNotFound}, // at its expiry: gone, as Get says
	} {
		clock.Advance(tc.advance)
		gotAt, hasTTL, err := db.Expiry([]byte(tc.key))
		if !errors.Is(err, tc.err) || hasTTL != tc.hasTTL || !gotAt.Equal(tc.at) {
			t.Errorf("Expiry(%q) after %v = %v, %v, %v; want %v, %v, %v", tc.key, tc.advance, gotAt, hasTTL, err, tc.at, tc.hasTTL, tc.err)
		}
		_, getErr := db.Get([]byte(tc.key))
		if errors.Is(getErr, ErrNotFound) != errors.Is(err, ErrNotFound) {
			t.Errorf("Expiry(%q) says %v, Get says %v", tc.key, err, getErr)
		}
	}
	// Four lookups by Expiry and four by Get: two hits and two misses each.
	if h, m := db.Stats().Hits-hits, db.Stats().Misses-misses; h != 4 || m != 4 {
		t.Errorf("hits %d misses %d, want 4 and 4", h, m)
	}
	db.Close()
	if _, _, err := db.Expiry([]byte("plain")); !errors.Is(err, ErrClosed) {
		t.Errorf("Expiry after Close = %v, want ErrClosed", err)
	}
}

func TestTxExpiry_SeesTheTransactionsOwnWrites(t *testing.T) {
	clock := newFakeClock()
	db := openT(t, t.TempDir(), ttlOptions(clock))
	at := clock.Now().Add(time.Minute)
	if err := db.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	err := db.Update(func(tx *Tx) error {
		if _, hasTTL, err := tx.Expiry([]byte("k")); err != nil || hasTTL {
			t.Errorf("before: hasTTL %v, %v", hasTTL, err)
		}
		if _, err := tx.Expire([]byte("k"), at); err != nil {
			return err
		}
		if got, hasTTL, err := tx.Expiry([]byte("k")); err != nil || !hasTTL || !got.Equal(at) {
			t.Errorf("after its EXPIRE: %v, %v, %v", got, hasTTL, err)
		}
		if _, err := tx.Delete([]byte("k")); err != nil {
			return err
		}
		if _, _, err := tx.Expiry([]byte("k")); !errors.Is(err, ErrNotFound) {
			t.Errorf("after its delete: %v, want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
