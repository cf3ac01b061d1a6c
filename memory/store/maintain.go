package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Background maintenance, off the paths the agent waits on:
//
//   - Full-text indexing of tool outputs. Indexing 1 MB costs ~55 ms, the
//     offload budget is 10 ms, so SaveToolExecution only stores the chunks
//     and the index catches up once writes pause (and before every search).
//   - WAL checkpoints. Copying the WAL back into the database costs ~6 ms per
//     MB written; autocheckpoint would charge it to whichever commit crosses
//     the threshold.

const (
	// maintainIdle: the writer must be quiet this long before indexing, so
	// the tool message that follows an offload does not queue behind it;
	// the model call after it leaves the writer idle for seconds.
	maintainIdle = 250 * time.Millisecond
	// maintainBusyMax: under a steady stream of writes, checkpoint at least
	// this often anyway, so the WAL stays short.
	maintainBusyMax = time.Second
	// indexBatchChunks bounds one indexing transaction (32 chunks ≤ 256K
	// characters, ~20 ms), so other writers never wait long behind it.
	indexBatchChunks = 32
)

// kickMaintain tells the maintenance goroutine something was written; it
// never blocks.
func (s *Store) kickMaintain() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// maintain runs until Close: after each burst of writes it indexes new
// outputs (only once the writer is quiet) and checkpoints the WAL.
func (s *Store) maintain() {
	defer s.wg.Done()
	for {
		select {
		case <-s.bg.Done():
			return
		case <-s.kick:
		}
		idle := time.NewTimer(s.idle)
		busy := time.NewTimer(s.busyMax)
		quiet := false
	wait:
		for {
			select {
			case <-s.bg.Done():
				idle.Stop()
				busy.Stop()
				return
			case <-s.kick:
				idle.Reset(s.idle)
			case <-idle.C:
				quiet = true
				break wait
			case <-busy.C:
				break wait
			}
		}
		idle.Stop()
		busy.Stop()
		// Errors have no caller to go to here: a failed index run is retried
		// by the next SearchOutputs, which reports it, and a failed
		// checkpoint by the next round or by autocheckpoint.
		if quiet {
			_ = s.IndexOutputs(s.bg)
		} else {
			s.kickMaintain() // come back to index once the writes stop
		}
		_ = s.checkpoint(s.bg)
	}
}

// checkpoint copies committed WAL frames into the database. PASSIVE never
// waits for or blocks other connections, so it runs on a read connection
// while the writer carries on.
func (s *Store) checkpoint(ctx context.Context) error {
	if _, err := s.r.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// IndexOutputs adds every output saved since the last run to the search
// index. SearchOutputs calls it first, so a search never misses an output;
// other callers need not.
func (s *Store) IndexOutputs(ctx context.Context) error {
	for {
		n, err := s.indexBatch(ctx)
		if err != nil {
			return fmt.Errorf("index outputs: %w", classify(err))
		}
		if n == 0 {
			return nil
		}
	}
}

// indexBatch indexes the next pending chunks in one write transaction and
// moves the watermark past them; it returns how many it indexed. Reading the
// watermark inside the transaction makes two processes indexing at once
// harmless.
func (s *Store) indexBatch(ctx context.Context) (int, error) {
	var n int
	err := s.inQuietTx(ctx, func(tx *sql.Tx) error {
		var upto, hi int64
		if err := tx.QueryRowContext(ctx, `SELECT indexed_upto,
				(SELECT COUNT(*) FROM (SELECT 1 FROM output_chunks WHERE id > indexed_upto LIMIT ?1)),
				COALESCE((SELECT MAX(id) FROM (SELECT id FROM output_chunks WHERE id > indexed_upto ORDER BY id LIMIT ?1)), 0)
			FROM fts_state WHERE name = 'output_chunks'`, indexBatchChunks).Scan(&upto, &n, &hi); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO output_fts (rowid, text)
			SELECT id, text FROM output_chunks WHERE id > ? AND id <= ? ORDER BY id`, upto, hi); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE fts_state SET indexed_upto = ? WHERE name = 'output_chunks'`, hi)
		return err
	})
	return n, err
}
