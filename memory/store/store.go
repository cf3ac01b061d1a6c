// Package store is Polly's SQLite store (.agent/polly.db): sessions, messages,
// tool outputs, LLM calls, summaries, agent state, permission decisions and
// leads. It is hand-written SQL over database/sql with modernc.org/sqlite.
//
// A *Store is safe for concurrent use by many goroutines, and several
// processes may open the same file: SQLite's WAL mode and busy timeout
// arbitrate between them.
//
// Conventions: times are stored as unix milliseconds and returned in UTC;
// every write is committed (durable up to synchronous=NORMAL in WAL) when the
// method returns.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Sentinel errors. Returned errors wrap them, so test with errors.Is.
var (
	// ErrNotFound: the row asked for, or a row it refers to, does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a row with the same key already exists.
	ErrConflict = errors.New("already exists")
	// ErrInvalid: a value the schema or the API rejects (bad status, negative offset…).
	ErrInvalid = errors.New("invalid value")
	// ErrCorrupt: the file is not a SQLite database or is damaged.
	ErrCorrupt = errors.New("database file is corrupt or not a SQLite database")
	// ErrSchemaTooNew: the database was migrated by a newer Polly.
	ErrSchemaTooNew = errors.New("database schema is newer than this version of Polly")
)

// Store is the handle on one polly.db file.
//
// It keeps two pools on the same file: one connection for writes, so that
// goroutines of this process queue in Go instead of sleeping in SQLite's busy
// handler, and a few for reads, which WAL lets run beside the writer. Other
// processes are arbitrated by busy_timeout and BEGIN IMMEDIATE.
type Store struct {
	path string
	w    *sql.DB // writes; MaxOpenConns(1)
	r    *sql.DB // reads only; never used for a transaction
	now  func() time.Time

	stmts stmts // hot write statements, prepared once on the writer

	stamper Stamper // stamps new sessions with their project and owner; nil: none

	// Background maintenance: output indexing, WAL checkpoints (maintain.go).
	idle    time.Duration // quiet time before indexing
	busyMax time.Duration // longest wait for a checkpoint while writes go on
	kick    chan struct{}
	bg      context.Context // cancelled by Close
	stopBg  context.CancelFunc
	wg      sync.WaitGroup
}

// readConns caps the read pool; more than a handful buys nothing on SQLite.
const readConns = 4

// Open opens (creating if needed) the database at path, creating its parent
// directory, and migrates it to the newest schema this build knows.
func Open(path string) (*Store, error) {
	// Absolute, so the URI below cannot be misread and Path is unambiguous.
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open store %s: create directory: %w", path, err)
	}
	s := &Store{path: path, now: time.Now, idle: maintainIdle, busyMax: maintainBusyMax, kick: make(chan struct{}, 1)}
	s.bg, s.stopBg = context.WithCancel(context.Background())
	if s.w, err = openPool(path, 1); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if s.r, err = openPool(path, readConns); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// Another process creating the same fresh file, or switching it to
	// WAL, makes SQLite answer SQLITE_BUSY at once, without the busy
	// handler: wait for it rather than lose this process's session.
	ctx := context.Background()
	if err := retryBusy(ctx, openBusyWait, func() error { return s.migrate(ctx) }); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, classify(err))
	}
	if err := retryBusy(ctx, openBusyWait, func() error { s.stmts.close(); s.stmts = stmts{}; return s.stmts.prepare(s.w) }); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: prepare: %w", path, err)
	}
	s.wg.Add(1)
	go s.maintain()
	s.kickMaintain() // outputs a previous run saved but did not index
	return s, nil
}

// openBusyWait bounds how long Open waits for other processes that hold
// the fresh file; a normal open takes milliseconds.
const openBusyWait = 30 * time.Second

// retryBusy runs fn until it does not fail with SQLITE_BUSY or SQLITE_LOCKED,
// backing off, for at most limit.
func retryBusy(ctx context.Context, limit time.Duration, fn func() error) error {
	deadline := time.Now().Add(limit)
	delay := 2 * time.Millisecond
	for {
		err := fn()
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
}

// isBusy: the database is locked by another connection or process.
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff // extended codes keep the primary code in the low byte
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
}

// openPool opens a pool whose every connection gets the pragmas: they are in
// the DSN because db.Exec("PRAGMA …") would reach only one pooled connection.
// _txlock=immediate makes BeginTx take the write lock at once; a deferred
// transaction that reads and then writes fails with SQLITE_BUSY without
// waiting when another connection wrote in between (DEPS.md §4.4).
func openPool(path string, conns int) (*sql.DB, error) {
	u := url.URL{Scheme: "file", OmitHost: true, Path: path}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// The background checkpoint (maintain.go) keeps the WAL short; this
	// bound (16 MiB, default 4 MiB) is only the backstop, so commits rarely
	// pay for a checkpoint inline.
	q.Add("_pragma", "wal_autocheckpoint(4096)")
	// A page cache of 512 KiB per connection, not SQLite's default 2 MiB:
	// the pool has up to five connections and the cache lives outside the
	// Go heap (modernc's allocator), so the default cost ~2.5 MiB of a
	// Polly process's peak RSS on a 100-call task with no measurable
	// change in the store's benchmarks (the file's pages stay in the OS
	// page cache).
	q.Add("_pragma", "cache_size(-512)")
	q.Set("_txlock", "immediate")
	u.RawQuery = q.Encode()
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close stops background maintenance (what is left is indexed on the next
// search or open) and closes the pools.
func (s *Store) Close() error {
	s.stopBg()
	s.wg.Wait()
	return errors.Join(s.stmts.close(), s.r.Close(), s.w.Close())
}

// stmts are the statements run on every message or tool call. Parsing them
// was ~40% of AppendMessage; prepared on the one writer connection, each
// transaction reuses them through tx.StmtContext (database/sql keeps one
// prepared copy per connection, and the writer pool has one).
type stmts struct {
	appendMessage, touchSession, insertExec, insertChunk, recordCall, saveState *sql.Stmt
	// A batch's savepoint around each multi-statement write.
	savepoint, release, rollbackTo *sql.Stmt
}

// all lists the statements with their fields, for prepare and close.
func (st *stmts) all() []*sql.Stmt {
	return []*sql.Stmt{st.appendMessage, st.touchSession, st.insertExec, st.insertChunk, st.recordCall, st.saveState,
		st.savepoint, st.release, st.rollbackTo}
}

func (st *stmts) prepare(db *sql.DB) error {
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{
		// seq is computed inside the insert, under the write lock.
		{&st.appendMessage, `INSERT INTO messages
			(session_id, persona, seq, role, kind, content, tool_calls, tool_call_id, tool_name,
			 exec_id, output_chars, output_lines, offloaded, failed, tokens, created_at, output_stub, label)
			VALUES (?1, ?2,
				(SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?1 AND persona = ?2),
				?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)`},
		{&st.touchSession, `UPDATE sessions SET updated_at = ?,
			title = CASE WHEN title = '' THEN ? ELSE title END WHERE id = ?`},
		{&st.insertExec, `INSERT INTO tool_executions
			(session_id, persona, call_id, tool, arguments, preview, status, exit_code,
			 duration_ms, output_chars, output_lines, output_bytes, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&st.insertChunk, `INSERT INTO output_chunks (exec_id, start, text) VALUES (?, ?, ?)`},
		{&st.recordCall, `INSERT INTO llm_calls
			(session_id, persona, model, prompt_tokens, completion_tokens, cached_tokens,
			 latency_ms, attempts, error, error_kind, cost, created_at, request)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&st.saveState, `INSERT INTO agents (session_id, persona, state, updated_at)
			VALUES (?, ?, ?, ?)
			ON CONFLICT (session_id, persona) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`},
		{&st.savepoint, `SAVEPOINT write`},
		{&st.release, `RELEASE write`},
		{&st.rollbackTo, `ROLLBACK TO write`},
	} {
		stmt, err := db.Prepare(p.query)
		if err != nil {
			return err
		}
		*p.dst = stmt
	}
	return nil
}

func (st *stmts) close() error {
	var errs []error
	for _, s := range st.all() {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

// nowMs is the current time as stored.
func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// fromMs converts a stored time back.
func fromMs(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// exec runs one write statement outside a transaction (inside the batch's
// when ctx carries one).
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if b := s.batchOf(ctx); b != nil {
		return b.tx.ExecContext(ctx, query, args...)
	}
	res, err := s.w.ExecContext(ctx, query, args...)
	if err == nil {
		s.kickMaintain()
	}
	return res, err
}

// execStmt is exec for a statement of s.stmts.
func (s *Store) execStmt(ctx context.Context, stmt *sql.Stmt, args ...any) (sql.Result, error) {
	if b := s.batchOf(ctx); b != nil {
		return b.tx.StmtContext(ctx, stmt).ExecContext(ctx, args...)
	}
	res, err := stmt.ExecContext(ctx, args...)
	if err == nil {
		s.kickMaintain()
	}
	return res, err
}

// batchKey marks a context whose writes go into one transaction (Batch).
type batchKey struct{}

type batch struct {
	s  *Store
	tx *sql.Tx
}

func (s *Store) batchOf(ctx context.Context) *batch {
	if b, ok := ctx.Value(batchKey{}).(*batch); ok && b.s == s {
		return b
	}
	return nil
}

// Batch runs fn with a context whose writes to s (AppendMessage,
// SaveToolExecution, RecordLLMCall, SaveAgentState, …) share one
// transaction, committed when fn returns nil: the writes of one step cost
// one commit instead of one each. Each write stays atomic on its own (a
// savepoint), so one that fails is undone alone and reports its error
// while the others commit. fn must not wait on anything slow (a model, a
// tool): the store has one writer, and other writers wait for the commit.
// A Batch inside a Batch joins it.
func (s *Store) Batch(ctx context.Context, fn func(ctx context.Context) error) error {
	if s.batchOf(ctx) != nil {
		return fn(ctx)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return wrap("begin batch", err)
	}
	if err := fn(context.WithValue(ctx, batchKey{}, &batch{s: s, tx: tx})); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return wrap("commit batch", err)
	}
	s.kickMaintain()
	return nil
}

// inTx runs fn in a write transaction (BEGIN IMMEDIATE) and commits it.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := s.inQuietTx(ctx, fn); err != nil {
		return err
	}
	s.kickMaintain()
	return nil
}

// inQuietTx is inTx without waking maintenance, for maintenance itself.
// Inside a Batch, fn runs in a savepoint of the batch's transaction.
func (s *Store) inQuietTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if b := s.batchOf(ctx); b != nil {
		return b.savepoint(ctx, fn)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// savepoint runs fn atomically inside the batch: undone alone on error.
func (b *batch) savepoint(ctx context.Context, fn func(tx *sql.Tx) error) error {
	st := &b.s.stmts
	if _, err := b.tx.StmtContext(ctx, st.savepoint).ExecContext(ctx); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if err := fn(b.tx); err != nil {
		_, _ = b.tx.StmtContext(ctx, st.rollbackTo).ExecContext(ctx)
		_, _ = b.tx.StmtContext(ctx, st.release).ExecContext(ctx)
		return err
	}
	if _, err := b.tx.StmtContext(ctx, st.release).ExecContext(ctx); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}

// wrap adds the operation to err and, for driver errors, the sentinel that
// describes them (both stay reachable through errors.Is / errors.As).
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, classify(err))
}

// classify maps sql.ErrNoRows and SQLite result codes to the sentinels.
func classify(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	for _, s := range []error{ErrNotFound, ErrConflict, ErrInvalid, ErrCorrupt, ErrSchemaTooNew} {
		if errors.Is(err, s) {
			return err
		}
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	var sentinel error
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		sentinel = ErrNotFound
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		sentinel = ErrConflict
	default:
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CONSTRAINT:
			sentinel = ErrInvalid
		case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
			sentinel = ErrCorrupt
		}
	}
	if sentinel == nil {
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}

// readAll runs a query on the read pool and returns every row as scan
// makes it; an error is wrapped with what was being listed.
func readAll[T any](ctx context.Context, db *sql.DB, what string, scan func(*sql.Rows) (T, error), query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap(what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, wrap(what, err)
		}
		out = append(out, v)
	}
	return out, wrap(what, rows.Err())
}
