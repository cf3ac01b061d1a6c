package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// DiffMax is the most of a diff kept with its execution; past it the
// diff is cut and says so.
const DiffMax = 64 << 10

// SetToolDiff keeps the diff a call's file change made (ErrNotFound for
// an unknown id).
func (s *Store) SetToolDiff(ctx context.Context, id int64, diff string) error {
	if len(diff) > DiffMax {
		cut := DiffMax
		for cut > 0 && !utf8.RuneStart(diff[cut]) {
			cut--
		}
		diff = diff[:cut] + "\n… (the diff was cut here when it was stored)"
	}
	res, err := s.exec(ctx, `UPDATE tool_executions SET diff = ? WHERE id = ?`, cleanText(diff), id)
	if err != nil {
		return wrap("set tool diff", err)
	}
	return mustAffect(res, fmt.Sprintf("set tool diff %d", id))
}

// ToolRecord is an execution without its output, with its diff: what a
// transcript shows of a call.
type ToolRecord struct {
	ToolExecution
	Diff string
}

// ToolRecords returns the executions with the given ids (a transcript's
// tool messages name them; a forked session's live in the session it was
// forked from), by id. Unknown ids are left out.
func (s *Store) ToolRecords(ctx context.Context, ids []int64) (map[int64]ToolRecord, error) {
	out := map[int64]ToolRecord{}
	if len(ids) == 0 {
		return out, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("read tool records: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+execMetaCols+`, diff FROM tool_executions
		WHERE id IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, wrap("read tool records", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r ToolRecord
		if r.ToolExecution, err = scanExec(diffScanner{rows, &r.Diff}); err != nil {
			return nil, wrap("read tool records", err)
		}
		out[r.ID] = r
	}
	return out, wrap("read tool records", rows.Err())
}

// diffScanner scans execMetaCols and then the diff column.
type diffScanner struct {
	rows *sql.Rows
	diff *string
}

func (d diffScanner) Scan(dest ...any) error { return d.rows.Scan(append(dest, d.diff)...) }

// SetSessionModel remembers the model chosen for a persona in a session
// ("" forgets the choice).
func (s *Store) SetSessionModel(ctx context.Context, sessionID, persona, model string) error {
	var err error
	if model == "" {
		_, err = s.exec(ctx, `DELETE FROM session_models WHERE session_id = ? AND persona = ?`, sessionID, persona)
	} else {
		_, err = s.exec(ctx, `INSERT INTO session_models (session_id, persona, model) VALUES (?, ?, ?)
			ON CONFLICT (session_id, persona) DO UPDATE SET model = excluded.model`, sessionID, persona, model)
	}
	return wrap("remember the model of session "+sessionID, err)
}

// SessionModels are the models chosen in a session, by persona.
func (s *Store) SessionModels(ctx context.Context, sessionID string) (map[string]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT persona, model FROM session_models WHERE session_id = ?`, sessionID)
	if err != nil {
		return nil, wrap("read the models of session "+sessionID, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var p, m string
		if err := rows.Scan(&p, &m); err != nil {
			return nil, wrap("read the models of session "+sessionID, err)
		}
		out[p] = m
	}
	return out, wrap("read the models of session "+sessionID, rows.Err())
}
