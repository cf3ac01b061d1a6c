package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"time"
)

// FileKind is what was at a path.
type FileKind string

const (
	FileRegular FileKind = "file"
	FileMissing FileKind = "missing" // nothing: the file did not exist (or was removed)
	FileSymlink FileKind = "symlink" // a symlink itself (Data is its target), e.g. a dangling one a write replaced
	FileUnknown FileKind = "unknown" // a command changed it; what was there before was never read
)

// FileState is a path's state at one moment. Data is set for a Before that
// must be restorable (a regular file's content, a symlink's target) and is
// stored content-addressed; Hash identifies it (ContentHash) and is all an
// After needs.
type FileState struct {
	Kind FileKind
	Data []byte
	Hash string
	Mode fs.FileMode // permission bits of a regular file
}

// Same reports whether two states have the same kind and content (modes are
// not compared: a chmod is not an edit).
func (f FileState) Same(o FileState) bool {
	return f.Kind == o.Kind && f.Hash == o.Hash
}

// ContentHash is the content address of data: sha256, hex.
func ContentHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Backup is one file change, recorded before it happens: by a tool in a
// turn (TurnID), or by an undo, redo or rewind (ActionID).
type Backup struct {
	ID         int64
	SessionID  string // the session of the agent the user talks to (sub-agents' changes too)
	TurnID     int64
	ActionID   int64
	Agent      string // the agent that made it: "default", "coder#2" …
	CallID     string
	Tool       string
	Path       string // absolute path written
	Link       string // the symlink the tool was given, when it followed one to Path
	Before     FileState
	After      FileState
	RevertedBy int64 // the action that took it back; 0 while it stands
	CreatedAt  time.Time
}

// Turn is one user message to the agent the user talks to, with what its
// tools changed.
type Turn struct {
	ID        int64
	SessionID string
	Persona   string
	MessageID int64 // the user message as first stored
	Prompt    string
	CreatedAt time.Time
	Files     []string // paths its changes touched, in first-change order
}

// UndoKind is what an UndoAction did.
type UndoKind string

const (
	UndoKindUndo   UndoKind = "undo"
	UndoKindRewind UndoKind = "rewind"
	UndoKindRedo   UndoKind = "redo"
)

// UndoAction is one undo, rewind or redo.
type UndoAction struct {
	ID          int64
	SessionID   string
	Kind        UndoKind
	Turns       []int64 // undo, rewind: the turns it took back
	Reverts     int64   // redo: the action it took back
	RevertedBy  int64   // set when a redo took this one back
	ForkSession string
	CreatedAt   time.Time
}

// BeginTurn records the start of a turn and returns its id.
func (s *Store) BeginTurn(ctx context.Context, sessionID, persona string, messageID int64, prompt string) (int64, error) {
	res, err := s.exec(ctx, `INSERT INTO undo_turns (session_id, persona, message_id, prompt, created_at)
		VALUES (?, ?, ?, ?, ?)`, sessionID, persona, messageID, cleanTitle(prompt), s.nowMs())
	if err != nil {
		return 0, wrap("begin turn", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("begin turn: %w", err)
	}
	return id, nil
}

// Turns returns a session's turns, oldest first, each with the files its
// changes touched.
func (s *Store) Turns(ctx context.Context, sessionID string) ([]Turn, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, session_id, persona, message_id, prompt, created_at
		FROM undo_turns WHERE session_id = ? ORDER BY id`, sessionID)
	if err != nil {
		return nil, wrap("list turns", err)
	}
	var out []Turn
	byID := map[int64]int{}
	for rows.Next() {
		var t Turn
		var created int64
		if err := rows.Scan(&t.ID, &t.SessionID, &t.Persona, &t.MessageID, &t.Prompt, &created); err != nil {
			rows.Close()
			return nil, wrap("list turns", err)
		}
		t.CreatedAt = fromMs(created)
		byID[t.ID] = len(out)
		out = append(out, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wrap("list turns", err)
	}
	files, err := s.r.QueryContext(ctx, `SELECT turn_id, CASE WHEN link <> '' THEN link ELSE path END, MIN(id)
		FROM undo_backups WHERE session_id = ? AND turn_id IS NOT NULL GROUP BY turn_id, path ORDER BY MIN(id)`, sessionID)
	if err != nil {
		return nil, wrap("list turn files", err)
	}
	defer files.Close()
	for files.Next() {
		var turn, first int64
		var path string
		if err := files.Scan(&turn, &path, &first); err != nil {
			return nil, wrap("list turn files", err)
		}
		if i, ok := byID[turn]; ok {
			out[i].Files = append(out[i].Files, path)
		}
	}
	return out, wrap("list turn files", files.Err())
}

// putBlob stores data under its hash unless it is there already.
func putBlob(ctx context.Context, tx *sql.Tx, hash string, data []byte) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM undo_blobs WHERE hash = ?`, hash).Scan(&one)
	if err == nil {
		return nil // stored once: identical contents share the row
	}
	if err != sql.ErrNoRows {
		return err
	}
	if data == nil {
		data = []byte{} // NOT NULL: an empty file is an empty blob
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO undo_blobs (hash, size, data) VALUES (?, ?, ?)`, hash, len(data), data)
	return err
}

// hashOf fills in the hash of a state that carries data.
func hashOf(st FileState) (FileState, error) {
	switch st.Kind {
	case FileRegular, FileSymlink:
		if st.Data == nil && st.Hash == "" {
			return st, fmt.Errorf("%w: a %s state needs its content", ErrInvalid, st.Kind)
		}
		if st.Data != nil {
			st.Hash = ContentHash(st.Data)
		}
	case FileMissing:
		st.Hash = ""
	case FileUnknown:
	default:
		return st, fmt.Errorf("%w: file kind %q", ErrInvalid, st.Kind)
	}
	return st, nil
}

func insertBackups(ctx context.Context, tx *sql.Tx, now int64, bs []Backup) ([]int64, error) {
	ids := make([]int64, len(bs))
	for i, b := range bs {
		before, err := hashOf(b.Before)
		if err != nil {
			return nil, fmt.Errorf("%s: before: %w", b.Path, err)
		}
		if before.Kind == FileRegular || before.Kind == FileSymlink {
			if before.Data == nil {
				return nil, fmt.Errorf("%w: %s: the state before a change must carry its content", ErrInvalid, b.Path)
			}
			if err := putBlob(ctx, tx, before.Hash, before.Data); err != nil {
				return nil, fmt.Errorf("%s: store content: %w", b.Path, err)
			}
		}
		after, err := hashOf(b.After)
		if err != nil {
			return nil, fmt.Errorf("%s: after: %w", b.Path, err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO undo_backups
			(session_id, turn_id, action_id, agent, call_id, tool, path, link,
			 before_kind, before_hash, before_mode, after_kind, after_hash, after_mode, created_at)
			VALUES (?, NULLIF(?, 0), NULLIF(?, 0), ?, ?, ?, ?, ?, ?, NULLIF(?, ''), ?, ?, ?, ?, ?)`,
			b.SessionID, b.TurnID, b.ActionID, b.Agent, b.CallID, b.Tool, b.Path, b.Link,
			string(before.Kind), before.Hash, uint32(before.Mode.Perm()), string(after.Kind), after.Hash, uint32(after.Mode.Perm()), now)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Path, err)
		}
		if ids[i], err = res.LastInsertId(); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// SaveBackups stores changes about to happen, with the content they replace,
// in one transaction, and returns their ids. If it fails, nothing is stored
// and the change must not happen.
func (s *Store) SaveBackups(ctx context.Context, bs []Backup) ([]int64, error) {
	var ids []int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		ids, err = insertBackups(ctx, tx, s.nowMs(), bs)
		return err
	})
	if err != nil {
		return nil, wrap(fmt.Sprintf("save %d backups", len(bs)), err)
	}
	return ids, nil
}

// DeleteBackups forgets backups of changes that did not happen.
func (s *Store) DeleteBackups(ctx context.Context, ids []int64) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `DELETE FROM undo_backups WHERE id = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap("delete backups", err)
}

// Backups returns every backup of a session in the order the changes
// happened, without contents (Blob reads one).
func (s *Store) Backups(ctx context.Context, sessionID string) ([]Backup, error) {
	return readAll(ctx, s.r, "list backups", func(rows *sql.Rows) (Backup, error) {
		var b Backup
		var bmode, amode uint32
		var created int64
		if err := rows.Scan(&b.ID, &b.SessionID, &b.TurnID, &b.ActionID, &b.Agent, &b.CallID, &b.Tool, &b.Path, &b.Link,
			&b.Before.Kind, &b.Before.Hash, &bmode, &b.After.Kind, &b.After.Hash, &amode, &b.RevertedBy, &created); err != nil {
			return b, err
		}
		b.Before.Mode, b.After.Mode = fs.FileMode(bmode), fs.FileMode(amode)
		b.CreatedAt = fromMs(created)
		return b, nil
	}, `SELECT id, session_id, COALESCE(turn_id, 0), COALESCE(action_id, 0), agent, call_id,
		tool, path, link, before_kind, COALESCE(before_hash, ''), before_mode, after_kind, after_hash, after_mode,
		COALESCE(reverted_by, 0), created_at FROM undo_backups WHERE session_id = ? ORDER BY id`, sessionID)
}

// Blob returns stored content by hash (ErrNotFound when absent).
func (s *Store) Blob(ctx context.Context, hash string) ([]byte, error) {
	var data []byte
	if err := s.r.QueryRowContext(ctx, `SELECT data FROM undo_blobs WHERE hash = ?`, hash).Scan(&data); err != nil {
		return nil, wrap("read backup content "+hash, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// SaveBlobs stores contents before an undo overwrites them, so that the undo
// can be taken back. A blob no backup refers to is removed by PruneUndoBlobs.
func (s *Store) SaveBlobs(ctx context.Context, contents [][]byte) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, c := range contents {
			if err := putBlob(ctx, tx, ContentHash(c), c); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap("save backup contents", err)
}

// PruneUndoBlobs removes contents no backup refers to (left when Polly
// stopped between saving them and recording an undo) and returns how many.
func (s *Store) PruneUndoBlobs(ctx context.Context) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM undo_blobs WHERE NOT EXISTS
		(SELECT 1 FROM undo_backups WHERE before_hash = undo_blobs.hash)`)
	if err != nil {
		return 0, wrap("prune backup contents", err)
	}
	return res.RowsAffected()
}

// UndoStorage reports how many distinct contents the backups keep and their
// total size.
func (s *Store) UndoStorage(ctx context.Context) (blobs int, bytes int64, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(size), 0) FROM undo_blobs`).Scan(&blobs, &bytes)
	return blobs, bytes, wrap("undo storage", err)
}

// ActionRecord is an undo, rewind or redo to store with its changes.
type ActionRecord struct {
	Action  UndoAction
	Changes []Backup // the changes it made (ActionID is filled in); their Before.Data must be stored already or given
	// Reverted are the backups it took back (their RevertedBy becomes the
	// new action); Revived are backups a redo makes stand again.
	Reverted []int64
	Revived  []int64
}

// SaveUndoAction stores an action, its changes and what they took back, in
// one transaction, and returns the action's id.
func (s *Store) SaveUndoAction(ctx context.Context, rec ActionRecord) (int64, error) {
	turns, err := json.Marshal(rec.Action.Turns)
	if err != nil {
		return 0, fmt.Errorf("save undo action: %w", err)
	}
	if rec.Action.Turns == nil {
		turns = []byte("[]")
	}
	var id int64
	now := s.nowMs()
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO undo_actions (session_id, kind, turns, reverts, fork_session, created_at)
			VALUES (?, ?, ?, NULLIF(?, 0), ?, ?)`, rec.Action.SessionID, string(rec.Action.Kind), string(turns),
			rec.Action.Reverts, rec.Action.ForkSession, now)
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		changes := make([]Backup, len(rec.Changes))
		for i, c := range rec.Changes {
			c.ActionID, c.TurnID, c.SessionID = id, 0, rec.Action.SessionID
			if c.Before.Data == nil && (c.Before.Kind == FileRegular || c.Before.Kind == FileSymlink) {
				// Saved by SaveBlobs before the files changed: load it back as the reference.
				if err := tx.QueryRowContext(ctx, `SELECT data FROM undo_blobs WHERE hash = ?`, c.Before.Hash).Scan(&c.Before.Data); err != nil {
					return fmt.Errorf("%s: content %s: %w", c.Path, c.Before.Hash, err)
				}
				if c.Before.Data == nil {
					c.Before.Data = []byte{}
				}
			}
			changes[i] = c
		}
		if _, err := insertBackups(ctx, tx, now, changes); err != nil {
			return err
		}
		for _, b := range rec.Reverted {
			if _, err := tx.ExecContext(ctx, `UPDATE undo_backups SET reverted_by = ? WHERE id = ?`, id, b); err != nil {
				return err
			}
		}
		for _, b := range rec.Revived {
			if _, err := tx.ExecContext(ctx, `UPDATE undo_backups SET reverted_by = NULL WHERE id = ?`, b); err != nil {
				return err
			}
		}
		if rec.Action.Reverts != 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE undo_actions SET reverted_by = ? WHERE id = ?`, id, rec.Action.Reverts); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, wrap("save "+string(rec.Action.Kind), err)
	}
	return id, nil
}

// UndoActions returns a session's undo, rewind and redo actions, oldest first.
func (s *Store) UndoActions(ctx context.Context, sessionID string) ([]UndoAction, error) {
	return readAll(ctx, s.r, "list undo actions", func(rows *sql.Rows) (UndoAction, error) {
		var a UndoAction
		var turns string
		var created int64
		if err := rows.Scan(&a.ID, &a.SessionID, &a.Kind, &turns, &a.Reverts, &a.RevertedBy, &a.ForkSession, &created); err != nil {
			return a, err
		}
		if err := json.Unmarshal([]byte(turns), &a.Turns); err != nil {
			return a, fmt.Errorf("undo action %d: turns: %w", a.ID, err)
		}
		a.CreatedAt = fromMs(created)
		return a, nil
	}, `SELECT id, session_id, kind, turns, COALESCE(reverts, 0), COALESCE(reverted_by, 0),
		fork_session, created_at FROM undo_actions WHERE session_id = ? ORDER BY id`, sessionID)
}

// SetForkSession notes the session a rewind forked.
func (s *Store) SetForkSession(ctx context.Context, actionID int64, sessionID string) error {
	res, err := s.exec(ctx, `UPDATE undo_actions SET fork_session = ? WHERE id = ?`, sessionID, actionID)
	if err != nil {
		return wrap("note fork", err)
	}
	return mustAffect(res, fmt.Sprintf("undo action %d", actionID))
}

// ForkSession copies a session's conversation as it stood when the turns
// after the first keep had not happened yet, into a new root session (the
// original stays as it is). The copy holds, per persona, the messages that
// were live at that moment, all live; its turns are the first keep turns,
// with their standing backups, so undo keeps working in it. Task state is
// not copied: the next message starts from the conversation alone.
func (s *Store) ForkSession(ctx context.Context, from string, keep int) (Session, error) {
	src, err := s.Session(ctx, from)
	if err != nil {
		return Session{}, fmt.Errorf("fork: %w", err)
	}
	turns, err := s.Turns(ctx, from)
	if err != nil {
		return Session{}, fmt.Errorf("fork: %w", err)
	}
	if keep < 0 || keep > len(turns) {
		return Session{}, fmt.Errorf("fork %s: %w: keep %d of %d turns", from, ErrInvalid, keep, len(turns))
	}
	cut := int64(-1) // keep every message
	if keep < len(turns) {
		cut = turns[keep].MessageID
	}
	title := src.Title
	if keep > 0 {
		title = turns[0].Prompt
	}
	fork, err := s.CreateSession(ctx, Session{Persona: src.Persona, Title: title, Cwd: src.Cwd, Model: src.Model, Status: StatusDone})
	if err != nil {
		return Session{}, fmt.Errorf("fork %s: %w", from, err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		moved, err := copyLiveMessages(ctx, tx, from, fork.ID, cut)
		if err != nil {
			return err
		}
		return copyTurns(ctx, tx, fork.ID, turns[:keep], moved)
	})
	if err != nil {
		return Session{}, wrap(fmt.Sprintf("fork %s at turn %d", from, keep+1), err)
	}
	return fork, nil
}

// copyLiveMessages copies the messages of from that were live just before
// message cut was stored (cut < 0: now). A message archived by a summary is
// live at the cut when that summary came after it; the summary's own
// message is the first message of that persona stored after the archived
// ones. It returns the old and new ids of the copies, in order.
func copyLiveMessages(ctx context.Context, tx *sql.Tx, from, to string, cut int64) ([][2]int64, error) {
	type row struct {
		id, summary int64
		persona     string
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, persona, COALESCE(summary_id, 0) FROM messages
		WHERE session_id = ? ORDER BY id`, from)
	if err != nil {
		return nil, err
	}
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.persona, &r.summary); err != nil {
			rows.Close()
			return nil, err
		}
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// When did each summary take effect? At the first message of its
	// persona after the last message it archived.
	lastArchived := map[int64]int64{}
	persona := map[int64]string{}
	for _, r := range all {
		if r.summary != 0 {
			lastArchived[r.summary] = max(lastArchived[r.summary], r.id)
			persona[r.summary] = r.persona
		}
	}
	effective := map[int64]int64{}
	for sum, last := range lastArchived {
		effective[sum] = -1 // not yet: the summary never got a message
		for _, r := range all {
			if r.id > last && r.persona == persona[sum] {
				effective[sum] = r.id
				break
			}
		}
	}
	before := func(id int64) bool { return cut < 0 || id < cut }
	var moved [][2]int64
	for _, r := range all {
		if !before(r.id) {
			break
		}
		if r.summary != 0 && effective[r.summary] >= 0 && before(effective[r.summary]) {
			continue // already replaced by its summary at the cut
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO messages
			(session_id, persona, seq, role, kind, content, tool_calls, tool_call_id, tool_name,
			 exec_id, output_chars, output_lines, offloaded, failed, tokens, created_at, output_stub, label)
			SELECT ?, persona,
				(SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ? AND persona = m.persona),
				role, kind, content, tool_calls, tool_call_id, tool_name,
				exec_id, output_chars, output_lines, offloaded, failed, tokens, created_at, output_stub, label
			FROM messages m WHERE id = ?`, to, to, r.id)
		if err != nil {
			return nil, err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		moved = append(moved, [2]int64{r.id, id})
	}
	return moved, nil
}

// copyTurns copies turns and their standing backups into another session;
// moved maps the messages copied (old id → new id, in order), so each turn
// points at its own message in the copy.
func copyTurns(ctx context.Context, tx *sql.Tx, to string, turns []Turn, moved [][2]int64) error {
	for _, t := range turns {
		msg := int64(0)
		for _, m := range moved {
			if m[0] >= t.MessageID {
				msg = m[1]
				break
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO undo_turns (session_id, persona, message_id, prompt, created_at)
			SELECT ?, persona, ?, prompt, created_at FROM undo_turns WHERE id = ?`, to, msg, t.ID)
		if err != nil {
			return err
		}
		nt, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO undo_backups
			(session_id, turn_id, agent, call_id, tool, path, link, before_kind, before_hash, before_mode,
			 after_kind, after_hash, after_mode, created_at)
			SELECT ?, ?, agent, call_id, tool, path, link, before_kind, before_hash, before_mode,
			 after_kind, after_hash, after_mode, created_at
			FROM undo_backups WHERE turn_id = ? AND reverted_by IS NULL ORDER BY id`, to, nt, t.ID); err != nil {
			return err
		}
	}
	return nil
}
