package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Summary is a structured summary that replaced older messages.
type Summary struct {
	ID               int64
	SessionID        string
	Persona          string
	Content          string
	TokensBefore     int
	TokensAfter      int
	MessagesReplaced int
	ArchivePath      string // .agent/archive/<agent>_<timestamp>.json
	Heuristic        bool   // built without the model (the summarizer call failed)
	CreatedAt        time.Time
}

// SaveSummary stores a summary and returns its id; pass the id to
// ArchiveMessages for the messages it replaces.
func (s *Store) SaveSummary(ctx context.Context, sum Summary) (int64, error) {
	res, err := s.exec(ctx, `INSERT INTO summaries
		(session_id, persona, content, tokens_before, tokens_after, messages_replaced, archive_path, heuristic, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sum.SessionID, sum.Persona, sum.Content, sum.TokensBefore, sum.TokensAfter, sum.MessagesReplaced,
		sum.ArchivePath, sum.Heuristic, s.nowMs())
	if err != nil {
		return 0, wrap("save summary", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("save summary: %w", err)
	}
	return id, nil
}

const summaryCols = `id, session_id, persona, content, tokens_before, tokens_after, messages_replaced,
	archive_path, heuristic, created_at`

func scanSummary(row scanner) (Summary, error) {
	var sum Summary
	var created int64
	err := row.Scan(&sum.ID, &sum.SessionID, &sum.Persona, &sum.Content, &sum.TokensBefore, &sum.TokensAfter,
		&sum.MessagesReplaced, &sum.ArchivePath, &sum.Heuristic, &created)
	sum.CreatedAt = fromMs(created)
	return sum, err
}

// LatestSummary returns the newest summary of (sessionID, persona), or
// ErrNotFound.
func (s *Store) LatestSummary(ctx context.Context, sessionID, persona string) (Summary, error) {
	sum, err := scanSummary(s.r.QueryRowContext(ctx, `SELECT `+summaryCols+` FROM summaries
		WHERE session_id = ? AND persona = ? ORDER BY id DESC LIMIT 1`, sessionID, persona))
	if err != nil {
		return Summary{}, wrap(fmt.Sprintf("latest summary of %s/%s", sessionID, persona), err)
	}
	return sum, nil
}

// Summaries returns all summaries of (sessionID, persona), oldest first.
func (s *Store) Summaries(ctx context.Context, sessionID, persona string) ([]Summary, error) {
	return readAll(ctx, s.r, "list summaries", func(rows *sql.Rows) (Summary, error) { return scanSummary(rows) }, `SELECT `+summaryCols+` FROM summaries
		WHERE session_id = ? AND persona = ? ORDER BY id`, sessionID, persona)
}
