package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"polly/memory/chat"
)

// ExecStatus is how a tool call ended.
type ExecStatus string

const (
	ExecOK          ExecStatus = "ok"
	ExecError       ExecStatus = "error"
	ExecDenied      ExecStatus = "denied"
	ExecInterrupted ExecStatus = "interrupted"
)

// ToolExecution is one tool call with its whole output.
type ToolExecution struct {
	ID          int64
	SessionID   string
	Persona     string
	CallID      string // the model's tool_call id
	Tool        string
	Arguments   string // raw JSON as the model sent it
	Output      string // the whole output
	Preview     string // what the context got instead of Output when it was offloaded; "" when the model saw it whole
	Status      ExecStatus
	ExitCode    *int // nil when the tool has no exit code
	Duration    time.Duration
	OutputChars int // characters (runes) of Output; computed on save
	OutputLines int // chat.CountLines(Output); computed on save
	CreatedAt   time.Time
}

// OutputHit is one result of SearchOutputs: the best matching part of one
// execution's output.
type OutputHit struct {
	ExecID    int64
	SessionID string
	Persona   string
	Tool      string
	Offset    int    // character offset of the matching part: OutputSlice(ExecID, Offset, …) reads it
	Snippet   string // text around the match; matched terms are between HitStart and HitEnd
	CreatedAt time.Time
}

// Markers around matched terms in OutputHit.Snippet.
const (
	HitStart = "«"
	HitEnd   = "»"
)

// chunkChars is the most characters an output chunk holds. Small enough
// that a snippet (quadratic in the matches of its chunk) stays cheap and a
// slice reads little; large enough that 1 MB is ~130 rows.
const chunkChars = 8192

// outputChunk is one row of output_chunks.
type outputChunk struct {
	start int // character offset
	text  string
}

// splitOutput cuts s into chunks of at most chunkChars characters, at the
// last whitespace of each when there is one in its second half (so words
// stay whole for the index), and counts the characters of s. s must be valid
// UTF-8. It works on byte windows with utf8.RuneCountInString rather than
// rune by rune: a 1 MB output is split in well under a millisecond.
func splitOutput(s string) (chunks []outputChunk, chars int) {
	for start := 0; start < len(s); {
		// Grow [start, end) until it holds chunkChars characters or s ends;
		// each window of k bytes holds at least k/4 more, so few rounds.
		end, n := start, 0
		for n < chunkChars && end < len(s) {
			next := min(len(s), end+chunkChars-n)
			for next < len(s) && !utf8.RuneStart(s[next]) {
				next--
			}
			if next == end { // one rune wider than the room left: take it
				_, w := utf8.DecodeRuneInString(s[end:])
				next = end + w
			}
			n += utf8.RuneCountInString(s[end:next])
			end = next
		}
		if end < len(s) {
			// ASCII whitespace never occurs inside a multi-byte rune.
			if brk := strings.LastIndexAny(s[start:end], " \n\t\r") + 1; brk > 0 {
				// Count the short tail, not the whole head again.
				if bn := n - utf8.RuneCountInString(s[start+brk:end]); bn >= chunkChars/2 {
					end, n = start+brk, bn
				}
			}
		}
		chunks = append(chunks, outputChunk{chars, s[start:end]})
		chars += n
		start = end
	}
	return chunks, chars
}

// cleanText makes s valid UTF-8 without NULs (U+FFFD instead), so that Go
// and SQLite agree on characters and the FTS tokenizer sees all of it.
func cleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}

// SaveToolExecution stores e with its whole output and returns its id.
// Invalid UTF-8 and NUL bytes in Output become U+FFFD; OutputChars and
// OutputLines are computed from it. Full-text indexing happens later, off
// this path (see IndexOutputs).
func (s *Store) SaveToolExecution(ctx context.Context, e ToolExecution) (int64, error) {
	out := cleanText(e.Output)
	chunks, chars := splitOutput(out)
	var exit any
	if e.ExitCode != nil {
		exit = *e.ExitCode
	}
	created := s.nowMs()
	if !e.CreatedAt.IsZero() {
		created = e.CreatedAt.UnixMilli()
	}
	var id int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.stmts.insertExec).ExecContext(ctx,
			e.SessionID, e.Persona, e.CallID, e.Tool, e.Arguments, cleanText(e.Preview), string(e.Status), exit,
			e.Duration.Milliseconds(), chars, chat.CountLines(out), len(out), created)
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil || len(chunks) == 0 {
			return err
		}
		stmt := tx.StmtContext(ctx, s.stmts.insertChunk)
		for _, c := range chunks {
			if _, err := stmt.ExecContext(ctx, id, c.start, c.text); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, wrap(fmt.Sprintf("save %s execution", e.Tool), err)
	}
	return id, nil
}

const execMetaCols = `id, session_id, persona, call_id, tool, arguments, preview, status, exit_code,
	duration_ms, output_chars, output_lines, created_at`

func scanExec(row scanner) (ToolExecution, error) {
	var e ToolExecution
	var exit sql.NullInt64
	var durMs, created int64
	if err := row.Scan(&e.ID, &e.SessionID, &e.Persona, &e.CallID, &e.Tool, &e.Arguments, &e.Preview,
		&e.Status, &exit, &durMs, &e.OutputChars, &e.OutputLines, &created); err != nil {
		return e, err
	}
	if exit.Valid {
		c := int(exit.Int64)
		e.ExitCode = &c
	}
	e.Duration = time.Duration(durMs) * time.Millisecond
	e.CreatedAt = fromMs(created)
	return e, nil
}

// ToolExecution returns one execution with its whole output, or ErrNotFound.
func (s *Store) ToolExecution(ctx context.Context, id int64) (ToolExecution, error) {
	op := fmt.Sprintf("tool execution %d", id)
	e, err := scanExec(s.r.QueryRowContext(ctx, `SELECT `+execMetaCols+` FROM tool_executions WHERE id = ?`, id))
	if err != nil {
		return ToolExecution{}, wrap(op, err)
	}
	// Chunks are written with their execution and never change, so reading
	// them in a second statement cannot see a different output.
	if e.Output, err = s.Output(ctx, id); err != nil {
		return ToolExecution{}, fmt.Errorf("%s: %w", op, err)
	}
	return e, nil
}

// Output returns the whole output of an execution, or ErrNotFound.
func (s *Store) Output(ctx context.Context, id int64) (string, error) {
	op := fmt.Sprintf("output %d", id)
	rows, err := s.r.QueryContext(ctx, `SELECT e.output_bytes, c.text FROM tool_executions e
		LEFT JOIN output_chunks c ON c.exec_id = e.id WHERE e.id = ? ORDER BY c.start`, id)
	if err != nil {
		return "", wrap(op, err)
	}
	defer rows.Close()
	var b strings.Builder
	found := false
	for rows.Next() {
		var size int
		var text sql.NullString
		if err := rows.Scan(&size, &text); err != nil {
			return "", wrap(op, err)
		}
		if !found {
			b.Grow(size)
			found = true
		}
		b.WriteString(text.String)
	}
	if err := rows.Err(); err != nil {
		return "", wrap(op, err)
	}
	if !found {
		return "", fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	return b.String(), nil
}

// OutputSlice returns at most limit characters (runes) of an execution's
// output starting at character offset, and the output's total length in
// characters. Only the chunks the slice covers are read, so the cost does
// not grow with the output. An offset at or past the end gives "" and the
// total.
func (s *Store) OutputSlice(ctx context.Context, id int64, offset, limit int) (string, int, error) {
	op := fmt.Sprintf("output %d slice [%d:+%d]", id, offset, limit)
	if offset < 0 || limit <= 0 {
		return "", 0, fmt.Errorf("%s: %w: offset must be >= 0 and limit > 0", op, ErrInvalid)
	}
	end := offset + limit
	if end < offset { // overflow: "to the end"
		end = math.MaxInt
	}
	// The chunk holding offset is the last one starting at or before it.
	rows, err := s.r.QueryContext(ctx, `SELECT e.output_chars, c.start, c.text FROM tool_executions e
		LEFT JOIN output_chunks c ON c.exec_id = e.id AND c.start < ?3 AND c.start >=
			(SELECT COALESCE(MAX(start), 0) FROM output_chunks WHERE exec_id = ?1 AND start <= ?2)
		WHERE e.id = ?1 ORDER BY c.start`, id, offset, end)
	if err != nil {
		return "", 0, wrap(op, err)
	}
	defer rows.Close()
	var b strings.Builder
	total, first, found := 0, -1, false
	for rows.Next() {
		var start sql.NullInt64
		var text sql.NullString
		if err := rows.Scan(&total, &start, &text); err != nil {
			return "", 0, wrap(op, err)
		}
		found = true
		if start.Valid && first < 0 {
			first = int(start.Int64)
		}
		b.WriteString(text.String)
	}
	if err := rows.Err(); err != nil {
		return "", 0, wrap(op, err)
	}
	if !found {
		return "", 0, fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	if first < 0 || offset >= total {
		return "", total, nil
	}
	return runeSlice(b.String(), offset-first, limit), total, nil
}

// runeSlice returns at most take runes of s after skipping skip runes.
func runeSlice(s string, skip, take int) string {
	i := 0
	for ; skip > 0 && i < len(s); skip-- {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	j := i
	for ; take > 0 && j < len(s); take-- {
		_, w := utf8.DecodeRuneInString(s[j:])
		j += w
	}
	return s[i:j]
}

// SearchOutputs finds tool executions whose output matches query, best
// match first, one hit per execution. Each whitespace-separated word of
// query must appear in the same chunk (~8,000 characters) of an output;
// words are quoted, so punctuation is literal, and a trailing * is kept as a
// prefix match. sessionID "" searches every session.
func (s *Store) SearchOutputs(ctx context.Context, sessionID, query string, limit int) ([]OutputHit, error) {
	match := ftsQuery(query)
	if match == "" {
		return nil, nil
	}
	if limit <= 0 {
		limit = 20
	}
	if err := s.IndexOutputs(ctx); err != nil {
		return nil, fmt.Errorf("search outputs: %w", err)
	}
	hits, chunkIDs, err := s.bestChunks(ctx, sessionID, match, limit)
	if err != nil {
		return nil, wrap("search outputs", err)
	}
	// Snippets in a second pass, from highlight() rather than snippet():
	// snippet() is quadratic in the matches of a chunk (seconds for a chunk
	// of repeated "error" lines); highlight() is linear, and the window is
	// cut here.
	for i := range hits {
		var marked string
		if err := s.r.QueryRowContext(ctx, `SELECT highlight(output_fts, 0, ?, ?)
			FROM output_fts WHERE output_fts MATCH ? AND rowid = ?`,
			HitStart, HitEnd, match, chunkIDs[i]).Scan(&marked); err != nil {
			return nil, wrap("search outputs: highlight", err)
		}
		hits[i].Snippet = snippetAround(marked)
	}
	return hits, nil
}

// Snippet window, in characters around the first match.
const (
	snippetBefore = 80
	snippetAfter  = 160
)

// snippetAround cuts a one-line window of marked text around its first
// match, never splitting a HitStart…HitEnd pair, with "…" where text was
// left out.
func snippetAround(marked string) string {
	i := strings.Index(marked, HitStart)
	if i < 0 {
		i = 0
	}
	from := i
	for n := 0; n < snippetBefore && from > 0; n++ {
		_, w := utf8.DecodeLastRuneInString(marked[:from])
		from -= w
	}
	to := i
	if j := strings.Index(marked[i:], HitEnd); j >= 0 {
		to = i + j + len(HitEnd)
	}
	for n := 0; n < snippetAfter && to < len(marked); n++ {
		_, w := utf8.DecodeRuneInString(marked[to:])
		to += w
	}
	// A match opened inside the window is closed inside it.
	if open := strings.LastIndex(marked[:to], HitStart); open > strings.LastIndex(marked[:to], HitEnd) {
		if j := strings.Index(marked[to:], HitEnd); j >= 0 {
			to += j + len(HitEnd)
		}
	}
	out := strings.Join(strings.Fields(marked[from:to]), " ")
	if from > 0 {
		out = "…" + out
	}
	if to < len(marked) {
		out += "…"
	}
	return out
}

// bestChunks returns the best-ranked chunk of each of the first limit
// matching executions.
func (s *Store) bestChunks(ctx context.Context, sessionID, match string, limit int) ([]OutputHit, []int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT f.rowid, c.start, e.id, e.session_id, e.persona, e.tool, e.created_at
		FROM output_fts f
		JOIN output_chunks c ON c.id = f.rowid
		JOIN tool_executions e ON e.id = c.exec_id
		WHERE output_fts MATCH ?1 AND (?2 = '' OR e.session_id = ?2)
		ORDER BY f.rank`, match, sessionID)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var hits []OutputHit
	var chunkIDs []int64
	seen := map[int64]bool{}
	for len(hits) < limit && rows.Next() {
		var h OutputHit
		var chunkID, created int64
		if err := rows.Scan(&chunkID, &h.Offset, &h.ExecID, &h.SessionID, &h.Persona, &h.Tool, &created); err != nil {
			return nil, nil, err
		}
		if seen[h.ExecID] {
			continue
		}
		seen[h.ExecID] = true
		h.CreatedAt = fromMs(created)
		hits = append(hits, h)
		chunkIDs = append(chunkIDs, chunkID)
	}
	return hits, chunkIDs, rows.Err()
}

// ftsQuery turns free text into an FTS5 query: every word a quoted phrase,
// all required.
func ftsQuery(q string) string {
	var terms []string
	for _, w := range strings.Fields(q) {
		prefix := strings.HasSuffix(w, "*")
		w = strings.TrimRight(w, "*")
		if w == "" {
			continue
		}
		t := `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
		if prefix {
			t += "*"
		}
		terms = append(terms, t)
	}
	return strings.Join(terms, " ")
}

// ListToolExecutions lists a session's executions, newest first, whose
// output has at least minChars characters (limit <= 0: all). Output is not
// loaded (it is ""); read it with Output or OutputSlice.
func (s *Store) ListToolExecutions(ctx context.Context, sessionID string, minChars, limit int) ([]ToolExecution, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+execMetaCols+` FROM tool_executions
		WHERE session_id = ? AND output_chars >= ? ORDER BY id DESC LIMIT ?`, sessionID, minChars, limit)
	if err != nil {
		return nil, wrap("list tool executions", err)
	}
	defer rows.Close()
	var out []ToolExecution
	for rows.Next() {
		e, err := scanExec(rows)
		if err != nil {
			return nil, wrap("list tool executions", err)
		}
		out = append(out, e)
	}
	return out, wrap("list tool executions", rows.Err())
}

// SetToolPreview stores what went into the model's context in place of an
// offloaded output (ErrNotFound for an unknown id).
func (s *Store) SetToolPreview(ctx context.Context, id int64, preview string) error {
	res, err := s.exec(ctx, `UPDATE tool_executions SET preview = ? WHERE id = ?`, cleanText(preview), id)
	if err != nil {
		return wrap("set tool preview", err)
	}
	return mustAffect(res, fmt.Sprintf("set tool preview %d", id))
}
