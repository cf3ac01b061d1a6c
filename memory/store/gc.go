package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

// GCOptions select what GC removes.
type GCOptions struct {
	Before time.Time // root sessions whose last activity is before this go
	Keep   []string  // sessions never removed (the one in use); the latest root session is always kept
	DryRun bool      // count only; change nothing
}

// GCReport is what GC removed, or with DryRun would remove. Counts include
// the sub-agent runs of the removed sessions.
type GCReport struct {
	Sessions    int      // root sessions
	SubSessions int      // their sub-agent runs
	Messages    int      // archived ones included
	ToolOutputs int      // tool executions with their output chunks and index rows
	Summaries   int      //
	LLMCalls    int      //
	Backups     int      // undo backups (undo_backups rows) of the removed sessions
	Archives    []string // archive files of the removed summaries, as stored
	Kept        string   // the latest session, always kept
	Skipped     []string // sessions left alone because another process held the database too long
	BytesBefore int64    // polly.db + its WAL
	BytesAfter  int64
	Vacuumed    bool
	VacuumError string // why VACUUM did not run ("" when it ran or was not needed)
}

// GC removes root sessions last active before opts.Before, with everything
// that belongs to them — messages, tool outputs (and their search index
// rows), summaries, model calls, agent state, permission decisions, child
// sessions, and rows of a backups table if there is one — then VACUUMs so
// the file shrinks. The latest root session and opts.Keep are never
// removed.
//
// Each session goes in its own write transaction, so another Polly process
// waits at most one session's delete; a session whose transaction cannot
// start within the busy timeout is skipped and listed, never half-removed.
func (s *Store) GC(ctx context.Context, opts GCOptions) (GCReport, error) {
	var rep GCReport
	rep.BytesBefore = s.fileBytes()
	if latest, err := s.LatestSession(ctx); err == nil {
		rep.Kept = latest.ID
	} else if !errors.Is(err, ErrNotFound) {
		return rep, fmt.Errorf("gc: %w", err)
	}
	ids, err := s.gcCandidates(ctx, opts.Before, append(slices.Clone(opts.Keep), rep.Kept))
	if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	backups, err := s.hasSessionColumn(ctx, "undo_backups")
	if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if opts.DryRun {
			c, err := s.countTree(ctx, s.r, id, backups)
			if err != nil {
				return rep, fmt.Errorf("gc: session %s: %w", id, err)
			}
			rep.add(c)
			continue
		}
		var c treeCount
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			var err error
			if c, err = s.countTree(ctx, tx, id, backups); err != nil {
				return err
			}
			if backups {
				if _, err := tx.ExecContext(ctx, `DELETE FROM undo_backups WHERE session_id IN (`+treeIDs+`)`, id); err != nil {
					return err
				}
			}
			// Messages point at summaries without a cascade; drop them first.
			if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE session_id IN (`+treeIDs+`)`, id); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id) // the rest cascades
			return err
		})
		if isBusy(err) {
			rep.Skipped = append(rep.Skipped, id)
			continue
		}
		if err != nil {
			return rep, wrap("gc: session "+id, err)
		}
		rep.add(c)
	}
	if !opts.DryRun && rep.Sessions > 0 {
		if err := s.vacuum(ctx); err != nil {
			rep.VacuumError = err.Error()
		} else {
			rep.Vacuumed = true
		}
	}
	rep.BytesAfter = s.fileBytes()
	return rep, nil
}

// treeIDs selects a session and all its descendants; ?1 is the root.
const treeIDs = `WITH RECURSIVE tree(id) AS (SELECT ?1 UNION ALL SELECT c.id FROM sessions c JOIN tree t ON c.parent_id = t.id) SELECT id FROM tree`

// gcCandidates lists root sessions last active before cutoff, oldest
// first, leaving out keep.
func (s *Store) gcCandidates(ctx context.Context, before time.Time, keep []string) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM sessions WHERE parent_id IS NULL AND updated_at < ? ORDER BY updated_at, rowid`, before.UnixMilli())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		if !slices.Contains(keep, id) {
			ids = append(ids, id)
		}
	}
	return ids, rows.Err()
}

// treeCount is what one session tree holds.
type treeCount struct {
	sessions, messages, outputs, summaries, calls, backups int
	archives                                               []string
}

func (r *GCReport) add(c treeCount) {
	r.Sessions++
	r.SubSessions += c.sessions - 1
	r.Messages += c.messages
	r.ToolOutputs += c.outputs
	r.Summaries += c.summaries
	r.LLMCalls += c.calls
	r.Backups += c.backups
	r.Archives = append(r.Archives, c.archives...)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *Store) countTree(ctx context.Context, q querier, id string, backups bool) (treeCount, error) {
	var c treeCount
	backupCount := `0`
	if backups {
		backupCount = `(SELECT COUNT(*) FROM undo_backups WHERE session_id IN (SELECT id FROM tree))`
	}
	err := q.QueryRowContext(ctx, `WITH RECURSIVE tree(id) AS (SELECT ?1 UNION ALL SELECT c.id FROM sessions c JOIN tree t ON c.parent_id = t.id)
		SELECT (SELECT COUNT(*) FROM tree),
			(SELECT COUNT(*) FROM messages WHERE session_id IN (SELECT id FROM tree)),
			(SELECT COUNT(*) FROM tool_executions WHERE session_id IN (SELECT id FROM tree)),
			(SELECT COUNT(*) FROM summaries WHERE session_id IN (SELECT id FROM tree)),
			(SELECT COUNT(*) FROM llm_calls WHERE session_id IN (SELECT id FROM tree)),
			`+backupCount, id).Scan(&c.sessions, &c.messages, &c.outputs, &c.summaries, &c.calls, &c.backups)
	if err != nil {
		return c, err
	}
	rows, err := q.QueryContext(ctx, `SELECT archive_path FROM summaries WHERE archive_path <> '' AND session_id IN (`+treeIDs+`)`, id)
	if err != nil {
		return c, err
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return c, err
		}
		c.archives = append(c.archives, p)
	}
	return c, rows.Err()
}

// hasSessionColumn reports whether table exists with a session_id column
// (the backups table of a newer schema).
func (s *Store) hasSessionColumn(ctx context.Context, table string) (bool, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = 'session_id'`, table).Scan(&n)
	return n > 0, err
}

// vacuum rebuilds the file without the freed pages and truncates the WAL,
// so the space goes back to the file system.
func (s *Store) vacuum(ctx context.Context) error {
	// FTS5 deletes only add tombstones to the index; merging its segments is
	// what gives the space of removed outputs back before VACUUM.
	if _, err := s.w.ExecContext(ctx, `INSERT INTO output_fts(output_fts) VALUES ('optimize')`); err != nil {
		return fmt.Errorf("optimize search index: %w", classify(err))
	}
	if _, err := s.w.ExecContext(ctx, `VACUUM`); err != nil {
		return fmt.Errorf("vacuum: %w", classify(err))
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("checkpoint after vacuum: %w", classify(err))
	}
	return nil
}

// fileBytes is the size of the database file and its WAL.
func (s *Store) fileBytes() int64 {
	var n int64
	for _, p := range []string{s.path, s.path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// IntegrityCheck runs PRAGMA integrity_check and returns its first
// complaint, or "" when the database is sound.
func (s *Store) IntegrityCheck(ctx context.Context) (string, error) {
	var res string
	if err := s.r.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&res); err != nil {
		return "", wrap("integrity check", err)
	}
	if res == "ok" {
		return "", nil
	}
	return res, nil
}
