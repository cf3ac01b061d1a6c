package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"polly/memory/chat"
)

// AppendMessage stores m as the next message of (sessionID, persona) and
// returns it with ID set. The message is committed when this returns. seq is
// assigned inside the insert's write transaction, so concurrent appends get
// distinct, gap-free numbers. The first plain user message also becomes the
// session title when the session has none. An unknown session gives
// ErrNotFound.
func (s *Store) AppendMessage(ctx context.Context, sessionID, persona string, m chat.Message) (chat.Message, error) {
	var toolCalls any // NULL when there are none
	if len(m.ToolCalls) > 0 {
		b, err := json.Marshal(m.ToolCalls)
		if err != nil {
			return m, fmt.Errorf("append message: encode tool calls: %w", err)
		}
		toolCalls = string(b)
	}
	var execID, chars, lines any
	var offloaded, failed bool
	var stub string
	if o := m.Output; o != nil {
		if o.ExecID != 0 {
			execID = o.ExecID
		}
		chars, lines, offloaded, failed, stub = o.Chars, o.Lines, o.Offloaded, o.Failed, o.Stub
	}
	var title string
	if m.Role == chat.User && m.Kind == chat.KindNormal {
		title = cleanTitle(m.Content)
	}
	now := s.nowMs()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.stmts.appendMessage).ExecContext(ctx,
			sessionID, persona, string(m.Role), string(m.Kind), m.Content, toolCalls, m.ToolCallID, m.ToolName,
			execID, chars, lines, offloaded, failed, m.Tokens, now, stub, m.Label)
		if err != nil {
			return err
		}
		if m.ID, err = res.LastInsertId(); err != nil {
			return err
		}
		_, err = tx.StmtContext(ctx, s.stmts.touchSession).ExecContext(ctx, now, title, sessionID)
		return err
	})
	if err != nil {
		m.ID = 0
		return m, wrap(fmt.Sprintf("append message to session %s/%s", sessionID, persona), err)
	}
	return m, nil
}

// messageCols is the column list scanMessage reads, in order.
const messageCols = `id, role, kind, content, tool_calls, tool_call_id, tool_name,
	exec_id, output_chars, output_lines, offloaded, failed, tokens, output_stub, label`

func scanMessage(row scanner) (chat.Message, error) {
	var m chat.Message
	var toolCalls sql.NullString
	var execID, chars, lines sql.NullInt64
	var offloaded, failed bool
	var stub string
	if err := row.Scan(&m.ID, &m.Role, &m.Kind, &m.Content, &toolCalls, &m.ToolCallID, &m.ToolName,
		&execID, &chars, &lines, &offloaded, &failed, &m.Tokens, &stub, &m.Label); err != nil {
		return m, err
	}
	if toolCalls.Valid {
		if err := json.Unmarshal([]byte(toolCalls.String), &m.ToolCalls); err != nil {
			return m, fmt.Errorf("message %d: decode tool calls: %w", m.ID, err)
		}
	}
	if chars.Valid {
		m.Output = &chat.Output{ExecID: execID.Int64, Chars: int(chars.Int64), Lines: int(lines.Int64),
			Offloaded: offloaded, Failed: failed, Stub: stub}
	}
	return m, nil
}

func (s *Store) queryMessages(ctx context.Context, op, query string, args ...any) ([]chat.Message, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	defer rows.Close()
	var out []chat.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, wrap(op, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// Messages returns the live (not archived) messages of (sessionID, persona)
// in order. An unknown session simply has no messages.
func (s *Store) Messages(ctx context.Context, sessionID, persona string) ([]chat.Message, error) {
	return s.queryMessages(ctx, "load messages", `SELECT `+messageCols+` FROM messages
		WHERE session_id = ? AND persona = ? AND summary_id IS NULL ORDER BY seq`, sessionID, persona)
}

// AllMessages returns every message of (sessionID, persona) in order,
// archived ones included.
func (s *Store) AllMessages(ctx context.Context, sessionID, persona string) ([]chat.Message, error) {
	return s.queryMessages(ctx, "load all messages", `SELECT `+messageCols+` FROM messages
		WHERE session_id = ? AND persona = ? ORDER BY seq`, sessionID, persona)
}

// ArchiveMessages marks the messages as replaced by summary summaryID: they
// leave Messages but stay in AllMessages. All or nothing: if one id is
// unknown or already archived, nothing changes and the error wraps
// ErrNotFound.
func (s *Store) ArchiveMessages(ctx context.Context, ids []int64, summaryID int64) error {
	if len(ids) == 0 {
		return nil
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `UPDATE messages SET summary_id = ? WHERE id = ? AND summary_id IS NULL`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, id := range ids {
			res, err := stmt.ExecContext(ctx, summaryID, id)
			if err != nil {
				return err
			}
			if err := mustAffect(res, fmt.Sprintf("message %d (unknown or already archived)", id)); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap(fmt.Sprintf("archive %d messages under summary %d", len(ids), summaryID), err)
}

// DeleteMessage removes one message for good. It is for harness messages
// that are superseded rather than summarized, such as an older task anchor
// (only the latest is kept). Unknown id: ErrNotFound.
func (s *Store) DeleteMessage(ctx context.Context, id int64) error {
	res, err := s.exec(ctx, `DELETE FROM messages WHERE id = ?`, id)
	if err != nil {
		return wrap(fmt.Sprintf("delete message %d", id), err)
	}
	return mustAffect(res, fmt.Sprintf("delete message %d", id))
}

// Personas returns the personas that have messages in the session, in the
// order they first spoke.
func (s *Store) Personas(ctx context.Context, sessionID string) ([]string, error) {
	return readAll(ctx, s.r, "list personas", func(rows *sql.Rows) (p string, err error) {
		return p, rows.Scan(&p)
	}, `SELECT persona FROM messages WHERE session_id = ? GROUP BY persona ORDER BY MIN(id)`, sessionID)
}
