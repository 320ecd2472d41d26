package kvstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"time"

	"github.com/devkit-go/devkit/kvstore/internal/snapshot"
	"github.com/devkit-go/devkit/kvstore/internal/vfs"
)

// Checkpoints: a consistent copy of the store while writers go on.
//
// Invariant: a checkpoint holds exactly the writes applied when it was
// frozen (every write acknowledged before the call, none enqueued after
// it), and a restored checkpoint is trusted only after its checksum passed,
// so a directory RestoreCheckpoint made is one Open and Verify accept.

// StreamCheckpoint writes a consistent copy of the store to w in the
// snapshot format, while writers keep going (they pause only while the
// index is cloned). The returned info's Path is the file name the stream
// must be stored under; RestoreCheckpoint does that.
func (db *DB) StreamCheckpoint(ctx context.Context, w io.Writer) (SnapshotInfo, error) {
	ctx, cancel := db.untilClose(ctx)
	defer cancel()
	view, release, err := db.freezeForCheckpoint(ctx)
	if err != nil {
		return SnapshotInfo{}, err
	}
	defer release()
	start := time.Now()
	n, err := writeFrozen(ctx, w, view)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("kvstore: checkpoint: %w", err)
	}
	return SnapshotInfo{Path: snapshotName(view.seq), Seq: view.seq, Keys: view.count, Bytes: n,
		Duration: time.Since(start), At: time.Now()}, nil
}

// untilClose is ctx, also cancelled when Close begins (which then waits for
// the work to stop).
func (db *DB) untilClose(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(db.bgCtx, cancel)
	return ctx, func() { stop(); cancel() }
}

// freezeForCheckpoint clones the index for a checkpoint; release undoes it
// and lets Close go on.
func (db *DB) freezeForCheckpoint(ctx context.Context) (frozen, func(), error) {
	db.mu.Lock()
	if db.closing {
		db.mu.Unlock()
		return frozen{}, nil, ErrClosed
	}
	db.bg.Add(1) // Close waits for us
	db.mu.Unlock()
	var view frozen
	err := db.pipe.exclusive(func() error {
		if err := db.failure(); err != nil {
			return err
		}
		view = db.mem.freeze()
		return nil
	})
	if err != nil {
		db.bg.Done()
		return frozen{}, nil, err
	}
	return view, func() { view.release(); db.bg.Done() }, nil
}

// writeFrozen streams view to w in the snapshot format.
func writeFrozen(ctx context.Context, w io.Writer, view frozen) (int64, error) {
	pull, stop := iter.Pull(func(yield func(snapshot.Entry) bool) {
		view.each(func(key string, value []byte, kind Kind, expireAt int64) bool {
			return yield(snapshot.Entry{Key: key, Value: value, ExpireAt: expireAt, Kind: uint8(kind)})
		})
	})
	defer stop()
	return snapshot.Write(ctx, w, snapshot.Header{Seq: view.seq, Count: uint64(view.count)}, pull)
}

// RestoreCheckpoint stores a stream StreamCheckpoint wrote as the data
// directory dir (created; it must not exist or be empty), after checking it
// against its checksum. A damaged or cut stream leaves no snapshot behind
// and returns an error matching ErrCorrupt.
func RestoreCheckpoint(r io.Reader, dir string) (SnapshotInfo, error) {
	fs := Options{}.withDefaultsFS()
	if entries, err := fs.ReadDir(dir); err == nil && len(entries) > 0 {
		return SnapshotInfo{}, fmt.Errorf("kvstore: restore: %s is not empty", dir)
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return SnapshotInfo{}, fmt.Errorf("kvstore: restore: %w", err)
	}
	tmp := filepath.Join(dir, "restore"+tmpSuffix)
	f, err := fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("kvstore: restore: %w", err)
	}
	var h snapshot.Header
	final, n, err := installTemp(fs, dir, tmp, f, func(f vfs.File) (int64, error) { return io.Copy(f, r) },
		func() (string, error) {
			var cerr error
			if h, cerr = readSnapshot(fs, tmp, func([]byte, []byte, int64, Kind) {}); cerr != nil {
				return "", fmt.Errorf("%w: %w", ErrCorrupt, cerr)
			}
			return filepath.Join(dir, snapshotName(h.Seq)), nil
		})
	if err != nil {
		if rerr := fs.Remove(tmp); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		return SnapshotInfo{}, fmt.Errorf("kvstore: restore into %s: %w", dir, err)
	}
	return SnapshotInfo{Path: final, Seq: h.Seq, Keys: int(h.Count), Bytes: n, At: time.Now()}, nil
}
