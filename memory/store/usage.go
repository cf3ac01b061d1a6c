package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"polly/memory/chat"
)

// LLMCall is one request to a model, successful or not.
type LLMCall struct {
	ID        int64
	SessionID string
	Persona   string
	Model     string
	Usage     chat.Usage
	Latency   time.Duration
	Attempts  int      // 1 + retries
	Error     string   // "" on success
	ErrorKind string   // e.g. "rate_limit", "context_length"; "" on success
	Cost      *float64 // nil when the price is unknown
	CreatedAt time.Time
	Request   *RequestRecord // what rebuilds the request; nil: none kept
}

// UsageStats are summed LLM calls.
type UsageStats struct {
	chat.Usage
	Cost   float64 // sum of the known costs
	Calls  int
	Errors int // calls that ended in an error
}

func (u UsageStats) add(o UsageStats) UsageStats {
	return UsageStats{Usage: u.Usage.Add(o.Usage), Cost: u.Cost + o.Cost, Calls: u.Calls + o.Calls, Errors: u.Errors + o.Errors}
}

// PersonaUsage is the share of one persona.
type PersonaUsage struct {
	Persona string
	UsageStats
}

// UsageTotals is what Usage returns: the sum, and per persona (sorted by name).
type UsageTotals struct {
	Total     UsageStats
	ByPersona []PersonaUsage
}

// nullIfEmpty stores "" as NULL for columns where NULL means "none".
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// RecordLLMCall stores one call. Attempts < 1 is stored as 1.
func (s *Store) RecordLLMCall(ctx context.Context, c LLMCall) error {
	if c.Attempts < 1 {
		c.Attempts = 1
	}
	var cost any
	if c.Cost != nil {
		cost = *c.Cost
	}
	created := s.nowMs()
	if !c.CreatedAt.IsZero() {
		created = c.CreatedAt.UnixMilli()
	}
	var request any // NULL: no record
	if c.Request != nil {
		rec, err := s.saveRequest(ctx, c.SessionID, c.Request)
		if err != nil {
			return fmt.Errorf("record llm call: %w", err)
		}
		request = rec
	}
	_, err := s.execStmt(ctx, s.stmts.recordCall, c.SessionID, c.Persona, c.Model, c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.CachedTokens,
		c.Latency.Milliseconds(), c.Attempts, nullIfEmpty(c.Error), nullIfEmpty(c.ErrorKind), cost, created, request)
	return wrap("record llm call", err)
}

// Usage sums the LLM calls of a session, and of all its descendants (sub-agent
// runs, at any depth) when includeChildren is set. An unknown session has
// zero usage.
func (s *Store) Usage(ctx context.Context, sessionID string, includeChildren bool) (UsageTotals, error) {
	const sums = `SELECT l.persona, SUM(l.prompt_tokens), SUM(l.completion_tokens), SUM(l.cached_tokens),
		COALESCE(SUM(l.cost), 0), COUNT(*), COUNT(l.error) FROM llm_calls l`
	var rows *sql.Rows
	var err error
	if includeChildren {
		rows, err = s.r.QueryContext(ctx, `WITH RECURSIVE tree(id) AS (
				SELECT ? UNION SELECT c.id FROM sessions c JOIN tree ON c.parent_id = tree.id)
			`+sums+` JOIN tree ON l.session_id = tree.id GROUP BY l.persona ORDER BY l.persona`, sessionID)
	} else {
		rows, err = s.r.QueryContext(ctx, sums+` WHERE l.session_id = ? GROUP BY l.persona ORDER BY l.persona`, sessionID)
	}
	if err != nil {
		return UsageTotals{}, wrap("usage of session "+sessionID, err)
	}
	defer rows.Close()
	var t UsageTotals
	for rows.Next() {
		var p PersonaUsage
		if err := rows.Scan(&p.Persona, &p.PromptTokens, &p.CompletionTokens, &p.CachedTokens,
			&p.Cost, &p.Calls, &p.Errors); err != nil {
			return UsageTotals{}, wrap("usage of session "+sessionID, err)
		}
		t.ByPersona = append(t.ByPersona, p)
		t.Total = t.Total.add(p.UsageStats)
	}
	return t, wrap("usage of session "+sessionID, rows.Err())
}
