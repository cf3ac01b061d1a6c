package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// SessionStatus is the lifecycle state of a session.
type SessionStatus string

const (
	StatusActive      SessionStatus = "active"
	StatusDone        SessionStatus = "done"
	StatusFailed      SessionStatus = "failed"
	StatusInterrupted SessionStatus = "interrupted"
)

// Session is one run of Polly, or of a sub-agent when ParentID is set.
type Session struct {
	ID        string // 8 hex digits, made by CreateSession
	ParentID  string // "" for a root session
	Persona   string // persona that started it
	Title     string // first user prompt, whitespace collapsed, capped at TitleMax runes
	Cwd       string
	Project   string // the project it was made in (absolute, links resolved); "" before owners were recorded
	Owner     string // the stamp of the install that made it there (agent/owner); "" when none
	Model     string
	Status    SessionStatus
	CreatedAt time.Time
	UpdatedAt time.Time // last activity: bumped by AppendMessage and SetSessionStatus
}

// SessionSummary is a session as the session list shows it.
type SessionSummary struct {
	Session
	Messages         int // all messages of all personas, archived included
	PromptTokens     int // from llm_calls
	CompletionTokens int
}

// TitleMax caps Session.Title in runes.
const TitleMax = 200

// sessionCols is the column list scanSession reads, in order.
const sessionCols = `s.id, COALESCE(s.parent_id, ''), s.persona, s.title, s.cwd, s.project, s.owner, s.model, s.status, s.created_at, s.updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanSession(row scanner, extra ...any) (Session, error) {
	var ss Session
	var created, updated int64
	dest := append([]any{&ss.ID, &ss.ParentID, &ss.Persona, &ss.Title, &ss.Cwd, &ss.Project, &ss.Owner, &ss.Model, &ss.Status, &created, &updated}, extra...)
	if err := row.Scan(dest...); err != nil {
		return Session{}, err
	}
	ss.CreatedAt, ss.UpdatedAt = fromMs(created), fromMs(updated)
	return ss, nil
}

// newSessionID returns 8 random hex digits: short enough to type in
// `polly --resume a1b2c3d4`, and collisions are retried by CreateSession.
// NewSessionID returns a fresh session id for a session whose row is
// created later (CreateSession with that ID); "" if no randomness is
// available.
func NewSessionID() string {
	id, _ := newSessionID()
	return id
}

func newSessionID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// cleanTitle collapses whitespace and caps the length.
func cleanTitle(s string) string {
	// A long paste needs no more than its head for a title.
	if limit := 8 * TitleMax; len(s) > limit {
		for limit > 0 && !utf8.RuneStart(s[limit]) {
			limit--
		}
		s = s[:limit]
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= TitleMax {
		return s
	}
	r := []rune(s)
	return string(r[:TitleMax])
}

// Stamper gives a new session its project and owner stamp (agent/owner).
type Stamper func(sessionID string) (project, owner string)

// SetStamper makes every session created from now on (CreateSession,
// ForkSession) record its project and owner as f gives them, unless the
// caller set Owner. Call it before sessions are created.
func (s *Store) SetStamper(f Stamper) { s.stamper = f }

// CreateSession stores a new session. It fills ID (when empty), the
// timestamps, when empty Status (active), and Project and Owner from the
// stamper when one is set and Owner is empty. A ParentID that does not
// exist gives ErrNotFound.
func (s *Store) CreateSession(ctx context.Context, in Session) (Session, error) {
	if in.Status == "" {
		in.Status = StatusActive
	}
	in.Title = cleanTitle(in.Title)
	now := s.nowMs()
	in.CreatedAt, in.UpdatedAt = fromMs(now), fromMs(now)
	generated := in.ID == ""
	stamped := false // the stamp covers the id: made again for each id tried
	for attempt := 0; ; attempt++ {
		if generated {
			id, err := newSessionID()
			if err != nil {
				return Session{}, fmt.Errorf("create session: %w", err)
			}
			in.ID = id
		}
		if stamped || in.Owner == "" && s.stamper != nil {
			in.Project, in.Owner = s.stamper(in.ID)
			stamped = true
		}
		_, err := s.exec(ctx, `INSERT INTO sessions
			(id, parent_id, persona, title, cwd, project, owner, model, status, created_at, updated_at)
			VALUES (?, NULLIF(?, ''), ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			in.ID, in.ParentID, in.Persona, in.Title, in.Cwd, in.Project, in.Owner, in.Model, string(in.Status), now, now)
		err = classify(err)
		if generated && errors.Is(err, ErrConflict) && attempt < 5 {
			continue
		}
		if err != nil {
			return Session{}, fmt.Errorf("create session: %w", err)
		}
		return in, nil
	}
}

// Session returns one session, or ErrNotFound.
func (s *Store) Session(ctx context.Context, id string) (Session, error) {
	row := s.r.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions s WHERE s.id = ?`, id)
	ss, err := scanSession(row)
	if err != nil {
		return Session{}, wrap("session "+id, err)
	}
	return ss, nil
}

// LatestSession returns the root session with the most recent activity, or
// ErrNotFound when there is none.
func (s *Store) LatestSession(ctx context.Context) (Session, error) {
	row := s.r.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions s
		WHERE s.parent_id IS NULL ORDER BY s.updated_at DESC, s.rowid DESC LIMIT 1`)
	ss, err := scanSession(row)
	if err != nil {
		return Session{}, wrap("latest session", err)
	}
	return ss, nil
}

// SetSessionStatus changes a session's status (ErrNotFound if it does not
// exist, ErrInvalid for an unknown status).
func (s *Store) SetSessionStatus(ctx context.Context, id string, status SessionStatus) error {
	res, err := s.exec(ctx, `UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?`,
		string(status), s.nowMs(), id)
	if err != nil {
		return wrap("set session status", err)
	}
	return mustAffect(res, "set session status "+id)
}

// mustAffect turns "no row matched" into ErrNotFound.
func mustAffect(res sql.Result, op string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	return nil
}

// summarySelect lists sessions with their counts; the correlated subqueries
// use the (session_id, …) indexes, so the cost is per listed session.
const summarySelect = `SELECT ` + sessionCols + `,
	(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id),
	(SELECT COALESCE(SUM(prompt_tokens), 0) FROM llm_calls l WHERE l.session_id = s.id),
	(SELECT COALESCE(SUM(completion_tokens), 0) FROM llm_calls l WHERE l.session_id = s.id)
	FROM sessions s`

func (s *Store) listSummaries(ctx context.Context, op, query string, args ...any) ([]SessionSummary, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	defer rows.Close()
	var out []SessionSummary
	for rows.Next() {
		var sum SessionSummary
		sess, err := scanSession(rows, &sum.Messages, &sum.PromptTokens, &sum.CompletionTokens)
		if err != nil {
			return nil, wrap(op, err)
		}
		sum.Session = sess
		out = append(out, sum)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// ListSessions returns root sessions, most recent activity first, at most
// limit of them (limit <= 0: all). Sub-agent runs are left out; ask for them
// with ChildSessions.
func (s *Store) ListSessions(ctx context.Context, limit int) ([]SessionSummary, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	return s.listSummaries(ctx, "list sessions",
		summarySelect+` WHERE s.parent_id IS NULL ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ?`, limit)
}

// ChildSessions returns the direct children of a session, oldest first.
func (s *Store) ChildSessions(ctx context.Context, parentID string) ([]SessionSummary, error) {
	return s.listSummaries(ctx, "child sessions",
		summarySelect+` WHERE s.parent_id = ? ORDER BY s.created_at, s.rowid`, parentID)
}

// Restamp takes over the root session id and every session under it for
// the stamper's install and project (polly sessions --adopt): their
// project and owner are stamped anew, and the paths of their backups are
// moved from the project they were made in to the new one, so undo finds
// the files of a moved project. It returns the backup rows moved. Paths
// outside the old project stay as they are (undo refuses them).
func (s *Store) Restamp(ctx context.Context, id string) (moved int64, err error) {
	if s.stamper == nil {
		return 0, fmt.Errorf("restamp %s: %w: no stamper set", id, ErrInvalid)
	}
	root, err := s.Session(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("restamp: %w", err)
	}
	ids, err := readAll(ctx, s.r, "restamp "+id, func(r *sql.Rows) (string, error) {
		var v string
		return v, r.Scan(&v)
	}, `WITH RECURSIVE tree(id) AS (
			SELECT id FROM sessions WHERE id = ?
			UNION ALL SELECT s.id FROM sessions s JOIN tree t ON s.parent_id = t.id)
		SELECT id FROM tree`, id)
	if err != nil {
		return 0, err
	}
	from := root.Project
	if from == "" {
		from = root.Cwd // what a Polly before 0004 recorded
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var to string
		for _, sid := range ids {
			project, owner := s.stamper(sid)
			to = project
			if _, err := tx.ExecContext(ctx, `UPDATE sessions SET project = ?, owner = ? WHERE id = ?`, project, owner, sid); err != nil {
				return err
			}
		}
		if from == "" || from == to {
			return nil
		}
		for _, col := range []string{"path", "link"} {
			res, err := tx.ExecContext(ctx, `UPDATE undo_backups SET `+col+` = ?1 || substr(`+col+`, length(?2) + 1)
				WHERE session_id = ?3 AND substr(`+col+`, 1, length(?2) + 1) = ?2 || '/'`, to, from, id)
			if err != nil {
				return err
			}
			if col == "path" {
				if moved, err = res.RowsAffected(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, wrap("restamp "+id, err)
	}
	return moved, nil
}
