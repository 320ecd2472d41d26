package kvstore

import (
	"errors"
	"fmt"
	"os"
)

// Verify checks a data directory the way Open recovers it — every snapshot
// and log record against its checksum, the sequence numbers for gaps —
// without changing anything: the same recovery runs with actions that do
// nothing, so it takes no lock, cuts no torn tail and removes no file. It is
// safe on a copy, on a backup, or on a directory in use (where a torn tail
// may just be a write in flight). Mid-log corruption is returned as a
// *CorruptionError, a directory no repair can rebuild as an
// *UnrecoverableError; the report says what came before the damage, and
// DamagedSnapshots lists snapshots that failed their checksum (Open passes
// over them; Repair moves them aside).
func Verify(dir string, opts Options) (VerifyReport, error) {
	rep := VerifyReport{Dir: dir}
	o, err := opts.withDefaults()
	if err != nil {
		return rep, err
	}
	o.Recovery = RecoverStrict
	if fi, err := os.Stat(dir); err != nil {
		return rep, fmt.Errorf("kvstore: verify: %w", err)
	} else if !fi.IsDir() {
		return rep, fmt.Errorf("kvstore: verify: %s is not a directory", dir)
	}
	rc := newRecovery(dir, o, readOnlyActions{})
	err = rc.run()
	if err != nil && !errors.Is(err, ErrCorrupt) {
		err = fmt.Errorf("kvstore: verify %s: %w", dir, err)
	}
	return rc.report, err
}
