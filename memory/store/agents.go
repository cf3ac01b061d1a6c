package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// SaveAgentState stores the task state of (sessionID, persona), replacing
// the previous one. state is opaque here (JSON owned by the agent package).
func (s *Store) SaveAgentState(ctx context.Context, sessionID, persona string, state []byte) error {
	_, err := s.execStmt(ctx, s.stmts.saveState, sessionID, persona, string(state), s.nowMs())
	return wrap(fmt.Sprintf("save agent state %s/%s", sessionID, persona), err)
}

// AgentState returns the stored task state, or ErrNotFound.
func (s *Store) AgentState(ctx context.Context, sessionID, persona string) ([]byte, error) {
	var state string
	err := s.r.QueryRowContext(ctx, `SELECT state FROM agents WHERE session_id = ? AND persona = ?`,
		sessionID, persona).Scan(&state)
	if err != nil {
		return nil, wrap(fmt.Sprintf("agent state %s/%s", sessionID, persona), err)
	}
	return []byte(state), nil
}

// Scope says how far a permission decision reaches.
type Scope string

const (
	ScopeOnce    Scope = "once"
	ScopeSession Scope = "session"
	ScopeRule    Scope = "rule" // decided by a configured rule
	ScopeMode    Scope = "mode" // decided by the permission mode (e.g. yolo, read-only)
)

// Decision is one permission decision, kept for audit.
type Decision struct {
	ID        int64
	SessionID string // "" when outside a session
	Tool      string
	Kind      string // what was asked, e.g. "exec", "write", "network"
	Target    string // the command, path or host
	Allowed   bool   // stored as 'allow' / 'deny'
	Scope     Scope
	Reason    string
	CreatedAt time.Time
}

// LogDecision stores a permission decision. An unknown scope is ErrInvalid.
func (s *Store) LogDecision(ctx context.Context, d Decision) error {
	verdict := "deny"
	if d.Allowed {
		verdict = "allow"
	}
	_, err := s.exec(ctx, `INSERT INTO permission_decisions
		(session_id, tool, kind, target, decision, scope, reason, created_at)
		VALUES (NULLIF(?, ''), ?, ?, ?, ?, ?, ?, ?)`,
		d.SessionID, d.Tool, d.Kind, d.Target, verdict, string(d.Scope), d.Reason, s.nowMs())
	return wrap("log permission decision", err)
}

// Decisions returns a session's permission decisions, oldest first.
func (s *Store) Decisions(ctx context.Context, sessionID string) ([]Decision, error) {
	return readAll(ctx, s.r, "list decisions", func(rows *sql.Rows) (Decision, error) {
		var d Decision
		var created int64
		if err := rows.Scan(&d.ID, &d.SessionID, &d.Tool, &d.Kind, &d.Target, &d.Allowed, &d.Scope,
			&d.Reason, &created); err != nil {
			return d, err
		}
		d.CreatedAt = fromMs(created)
		return d, nil
	}, `SELECT id, COALESCE(session_id, ''), tool, kind, target,
		decision = 'allow', scope, reason, created_at
		FROM permission_decisions WHERE session_id = ? ORDER BY id`, sessionID)
}
