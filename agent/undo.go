package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"polly/memory/chat"
	"polly/memory/store"
	"polly/tools"
	"polly/tools/beneath"
)

// History takes file changes back: /undo, /redo, /rewind in the TUI and
// polly undo / rewind on the command line share it. It never overwrites a
// file whose content is not what Polly last left there.
type History struct {
	Store *store.Store
	Root  string       // the project root: every write stays beneath it
	Owner SessionOwner // only sessions it accepts are touched
}

// UndoInputError is a request that cannot be served as asked (unknown
// session, a turn count out of range, nothing to redo); the command line
// exits 2 on it.
type UndoInputError struct{ Msg string }

func (e *UndoInputError) Error() string { return e.Msg }

func inputErrorf(format string, a ...any) error {
	return &UndoInputError{Msg: fmt.Sprintf(format, a...)}
}

// TurnInfo is a turn as /rewind lists it.
type TurnInfo struct {
	Number  int       `json:"number"` // 1-based, in the session
	ID      int64     `json:"id"`
	Persona string    `json:"persona"`
	Prompt  string    `json:"prompt"`
	Files   []string  `json:"files"` // changed, as shown (project-relative when inside)
	Time    time.Time `json:"time"`
	Undone  bool      `json:"undone"` // taken back by an undo or rewind that stands
}

// SkippedFile is a file an undo left alone, and why.
type SkippedFile struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// UndoReport is what one undo, redo or rewind did.
type UndoReport struct {
	Kind      store.UndoKind `json:"kind"`
	Session   string         `json:"session"`
	Turns     []TurnInfo     `json:"turns"`     // the turns taken back (undo, rewind) or brought back (redo)
	Restored  []string       `json:"restored"`  // put back to their earlier content
	Removed   []string       `json:"removed"`   // created by Polly, unchanged since, removed
	Unchanged []string       `json:"unchanged"` // already as they were before: nothing to do
	Skipped   []SkippedFile  `json:"skipped"`
	Fork      string         `json:"fork,omitempty"` // rewind: the session the conversation was forked into
}

// Complete reports whether every file was taken back.
func (r UndoReport) Complete() bool { return len(r.Skipped) == 0 }

// Text renders the report for people: one line per file.
func (r UndoReport) Text() string {
	var b strings.Builder
	verb := map[store.UndoKind]string{store.UndoKindUndo: "undid", store.UndoKindRedo: "redid", store.UndoKindRewind: "rewound"}[r.Kind]
	switch {
	case r.Kind == store.UndoKindRewind && len(r.Turns) > 0:
		fmt.Fprintf(&b, "rewound session %s to turn %d (took back turns %d–%d)\n", r.Session, r.Turns[0].Number-1, r.Turns[0].Number, r.Turns[len(r.Turns)-1].Number)
	case len(r.Turns) == 1:
		fmt.Fprintf(&b, "%s turn %d %q of session %s\n", verb, r.Turns[0].Number, r.Turns[0].Prompt, r.Session)
	default:
		var nums []string
		for _, t := range r.Turns {
			nums = append(nums, fmt.Sprint(t.Number))
		}
		fmt.Fprintf(&b, "%s turns %s of session %s\n", verb, strings.Join(nums, ", "), r.Session)
	}
	for _, p := range r.Restored {
		fmt.Fprintf(&b, "  restored  %s\n", p)
	}
	for _, p := range r.Removed {
		fmt.Fprintf(&b, "  removed   %s\n", p)
	}
	for _, p := range r.Unchanged {
		fmt.Fprintf(&b, "  unchanged %s (already as before)\n", p)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(&b, "  skipped   %s: %s\n", s.Path, s.Reason)
	}
	if len(r.Restored)+len(r.Removed)+len(r.Unchanged)+len(r.Skipped) == 0 {
		b.WriteString("  no file changes to take back\n")
	}
	if r.Fork != "" {
		fmt.Fprintf(&b, "the conversation continues in session %s (forked; %s stays as it was)\n", r.Fork, r.Session)
	}
	return b.String()
}

// state is what History works from: one session's turns, backups and actions.
type state struct {
	turns   []store.Turn
	backups []store.Backup
	actions []store.UndoAction
}

func (h History) load(ctx context.Context, session string) (state, error) {
	if h.Store == nil {
		return state{}, errors.New("no session store (.agent/polly.db could not be opened): there is no undo history")
	}
	if session == "" {
		return state{}, inputErrorf("no session given")
	}
	sess, err := h.Store.Session(ctx, session)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return state{}, inputErrorf("no session %q in %s (polly sessions lists them)", session, h.Store.Path())
		}
		return state{}, err
	}
	if err := checkOwner(h.Owner, sess); err != nil {
		return state{}, err
	}
	var st state
	if st.turns, err = h.Store.Turns(ctx, session); err != nil {
		return st, err
	}
	if st.backups, err = h.Store.Backups(ctx, session); err != nil {
		return st, err
	}
	st.actions, err = h.Store.UndoActions(ctx, session)
	return st, err
}

// undone is the set of turns a standing undo or rewind took back.
func (st state) undone() map[int64]bool {
	out := map[int64]bool{}
	for _, a := range st.actions {
		if a.Kind != store.UndoKindRedo && a.RevertedBy == 0 {
			for _, t := range a.Turns {
				out[t] = true
			}
		}
	}
	return out
}

// standing returns the turn's changes that no action took back.
func (st state) standing(turn int64) []store.Backup {
	var out []store.Backup
	for _, b := range st.backups {
		if b.TurnID == turn && b.RevertedBy == 0 {
			out = append(out, b)
		}
	}
	return out
}

func (h History) info(st state, i int, undone map[int64]bool) TurnInfo {
	t := st.turns[i]
	files := make([]string, len(t.Files))
	for k, f := range t.Files {
		files[k] = h.show(f)
	}
	return TurnInfo{Number: i + 1, ID: t.ID, Persona: t.Persona, Prompt: t.Prompt, Files: files, Time: t.CreatedAt, Undone: undone[t.ID]}
}

// Turns lists a session's turns, oldest first.
func (h History) Turns(ctx context.Context, session string) ([]TurnInfo, error) {
	st, err := h.load(ctx, session)
	if err != nil {
		return nil, err
	}
	undone := st.undone()
	out := make([]TurnInfo, len(st.turns))
	for i := range st.turns {
		out[i] = h.info(st, i, undone)
	}
	return out, nil
}

// Undo takes back the file changes of the session's last n turns that
// changed files and were not undone yet.
func (h History) Undo(ctx context.Context, session string, n int) (UndoReport, error) {
	if n < 1 {
		return UndoReport{}, inputErrorf("the number of turns to undo must be at least 1, got %d", n)
	}
	st, err := h.load(ctx, session)
	if err != nil {
		return UndoReport{}, err
	}
	undone := st.undone()
	var picked []int // indexes into st.turns, newest first
	for i := len(st.turns) - 1; i >= 0 && len(picked) < n; i-- {
		if !undone[st.turns[i].ID] && len(st.standing(st.turns[i].ID)) > 0 {
			picked = append(picked, i)
		}
	}
	if len(picked) < n {
		if len(picked) == 0 {
			return UndoReport{}, inputErrorf("nothing to undo in session %s: none of its %d turns has file changes left to take back", session, len(st.turns))
		}
		return UndoReport{}, inputErrorf("session %s has only %d turn(s) with file changes to undo, not %d", session, len(picked), n)
	}
	slices.Reverse(picked)
	rep := UndoReport{Kind: store.UndoKindUndo, Session: session}
	act := store.UndoAction{SessionID: session, Kind: store.UndoKindUndo}
	var target []store.Backup
	for _, i := range picked {
		rep.Turns = append(rep.Turns, h.info(st, i, undone))
		act.Turns = append(act.Turns, st.turns[i].ID)
		target = append(target, st.standing(st.turns[i].ID)...)
	}
	if _, err = h.revert(ctx, st, target, act, &rep, nil); err != nil {
		return rep, err
	}
	return rep, h.tellModel(ctx, st, rep)
}

// Rewind takes back every turn after the first keep (files to their state
// before turn keep+1) and, with fork, copies the conversation up to there
// into a new session; the original session stays as it is.
func (h History) Rewind(ctx context.Context, session string, keep int, fork bool) (UndoReport, error) {
	st, err := h.load(ctx, session)
	if err != nil {
		return UndoReport{}, err
	}
	if len(st.turns) == 0 {
		return UndoReport{}, inputErrorf("session %s has no turns to rewind", session)
	}
	if keep < 0 || keep >= len(st.turns) {
		return UndoReport{}, inputErrorf("turn %d is out of range: session %s has %d turns; rewind to 0–%d (the turns after it are taken back)",
			keep, session, len(st.turns), len(st.turns)-1)
	}
	undone := st.undone()
	rep := UndoReport{Kind: store.UndoKindRewind, Session: session}
	act := store.UndoAction{SessionID: session, Kind: store.UndoKindRewind}
	var target []store.Backup
	for i := keep; i < len(st.turns); i++ {
		rep.Turns = append(rep.Turns, h.info(st, i, undone))
		act.Turns = append(act.Turns, st.turns[i].ID)
		target = append(target, st.standing(st.turns[i].ID)...)
	}
	id, err := h.revert(ctx, st, target, act, &rep, nil)
	if err == nil {
		err = h.tellModel(ctx, st, rep)
	}
	if err != nil || !fork {
		return rep, err
	}
	f, err := h.Store.ForkSession(ctx, session, keep)
	if err != nil {
		return rep, fmt.Errorf("files were rewound, but forking the conversation failed: %w", err)
	}
	rep.Fork = f.ID
	if err := h.Store.SetForkSession(ctx, id, f.ID); err != nil {
		return rep, err
	}
	return rep, nil
}

// Redo takes back the session's latest undo or rewind that still stands.
func (h History) Redo(ctx context.Context, session string) (UndoReport, error) {
	st, err := h.load(ctx, session)
	if err != nil {
		return UndoReport{}, err
	}
	var last *store.UndoAction
	for i := len(st.actions) - 1; i >= 0; i-- {
		if a := st.actions[i]; a.Kind != store.UndoKindRedo && a.RevertedBy == 0 {
			last = &st.actions[i]
			break
		}
	}
	if last == nil {
		return UndoReport{}, inputErrorf("nothing to redo in session %s: no undo or rewind stands", session)
	}
	rep := UndoReport{Kind: store.UndoKindRedo, Session: session}
	for i, t := range st.turns {
		if slices.Contains(last.Turns, t.ID) {
			rep.Turns = append(rep.Turns, h.info(st, i, nil))
		}
	}
	var target []store.Backup
	for _, b := range st.backups {
		if b.ActionID == last.ID && b.RevertedBy == 0 {
			target = append(target, b)
		}
	}
	// The turn changes the undo took back on a path stand again once
	// the redo has put that path back.
	revive := func(path string) []int64 {
		var ids []int64
		for _, b := range st.backups {
			if b.RevertedBy == last.ID && b.ActionID == 0 && b.Path == path {
				ids = append(ids, b.ID)
			}
		}
		return ids
	}
	if _, err = h.revert(ctx, st, target, store.UndoAction{SessionID: session, Kind: store.UndoKindRedo, Reverts: last.ID}, &rep, revive); err != nil {
		return rep, err
	}
	return rep, h.tellModel(ctx, st, rep)
}

// tellModel adds a note to the conversation of each persona whose turns
// the action touched, so the model does not go on believing in files that
// were taken back. A live Session must Reload to see it.
func (h History) tellModel(ctx context.Context, st state, rep UndoReport) error {
	if len(rep.Restored)+len(rep.Removed)+len(rep.Skipped) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[NOTE from Polly, not the user: the user ran %s.", rep.Kind)
	for _, t := range rep.Turns {
		fmt.Fprintf(&b, " Turn %d (%q)", t.Number, t.Prompt)
	}
	switch rep.Kind {
	case store.UndoKindRedo:
		b.WriteString(": its file changes were put back.")
	default:
		b.WriteString(": its file changes were taken back; those files are as they were before it.")
	}
	list := func(what string, files []string) {
		if len(files) > 0 {
			fmt.Fprintf(&b, " %s: %s.", what, strings.Join(files, ", "))
		}
	}
	list("Restored", rep.Restored)
	list("Removed", rep.Removed)
	var kept []string
	for _, s := range rep.Skipped {
		kept = append(kept, s.Path)
	}
	list("Left as they are (changed since)", kept)
	b.WriteString(" Read a file again before editing it.]")
	var personas []string
	for _, t := range rep.Turns {
		if !slices.Contains(personas, t.Persona) && t.Persona != "" {
			personas = append(personas, t.Persona)
		}
	}
	for _, p := range personas {
		if _, err := h.Store.AppendMessage(ctx, rep.Session, p, chat.Message{Role: chat.User, Kind: chat.KindNote, Content: b.String()}); err != nil {
			return fmt.Errorf("the files were changed as listed, but noting it in the conversation failed: %w", err)
		}
	}
	return nil
}

// planned is one path an undo will write.
type planned struct {
	path, shown string
	rel         string         // path beneath the project root
	rows        []store.Backup // the changes on path being taken back, oldest first
	current     store.FileState
	want        store.FileState
	data        []byte
}

// revert takes back the changes target (of st) path by path, records what it
// did as one action and returns its id. Per path: a later change of a turn
// that is not taken back, or content that is not what Polly last left
// there, leaves the file alone (skipped, with the reason).
func (h History) revert(ctx context.Context, st state, target []store.Backup, act store.UndoAction, rep *UndoReport,
	revive func(path string) []int64) (int64, error) {
	byPath := map[string][]store.Backup{}
	inTarget := map[int64]bool{}
	for _, b := range target {
		byPath[b.Path] = append(byPath[b.Path], b)
		inTarget[b.ID] = true
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	root, err := h.openRoot()
	if err != nil {
		return 0, err
	}
	defer root.Close()

	var plans []planned
	var reverted, revived []int64
	var contents [][]byte
	for _, p := range paths {
		rows := byPath[p]
		shown := h.shownOf(rows)
		skip := func(reason string) { rep.Skipped = append(rep.Skipped, SkippedFile{Path: shown, Reason: reason}) }
		refuse := func(err error) {
			skip(fmt.Sprintf("refused: backup row #%d (%s) %v; undo writes only beneath the project %s, through no link",
				rows[0].ID, h.rowName(st, rows[0]), err, h.Root))
		}
		rel, err := h.Beneath(p)
		if err != nil {
			refuse(err)
			continue
		}
		var latest store.Backup
		later := ""
		for _, b := range st.backups {
			if b.Path != p {
				continue
			}
			latest = b
			if b.ID > rows[0].ID && !inTarget[b.ID] && b.ActionID == 0 && b.RevertedBy == 0 && later == "" {
				later = h.turnName(st, b.TurnID)
			}
		}
		if later != "" {
			skip(fmt.Sprintf("changed again by %s, which is not being taken back; left as it is", later))
			continue
		}
		cur, err := tools.ReadStateIn(root, rel)
		if errors.Is(err, beneath.ErrSymlink) {
			refuse(linkError(rel, err))
			continue
		}
		if err != nil {
			skip(fmt.Sprintf("cannot read it (%v); left as it is", err))
			continue
		}
		want := rows[0].Before
		ids := make([]int64, len(rows))
		for i, b := range rows {
			ids[i] = b.ID
		}
		switch {
		case want.Kind != store.FileUnknown && cur.Same(want):
			rep.Unchanged = append(rep.Unchanged, shown)
			reverted = append(reverted, ids...)
			if revive != nil {
				revived = append(revived, revive(p)...)
			}
			continue
		case !cur.Same(latest.After):
			skip(changedReason(cur, latest.After))
			continue
		case want.Kind == store.FileUnknown:
			skip(fmt.Sprintf("changed by %s; its earlier content was never saved, so it cannot be restored", toolOf(rows[0])))
			continue
		}
		pl := planned{path: p, rel: rel, shown: shown, rows: rows, current: cur, want: want}
		if want.Kind == store.FileRegular || want.Kind == store.FileSymlink {
			if pl.data, err = h.Store.Blob(ctx, want.Hash); err != nil {
				skip(fmt.Sprintf("its backup cannot be read (%v); left as it is", err))
				continue
			}
		}
		if cur.Kind == store.FileRegular || cur.Kind == store.FileSymlink {
			contents = append(contents, cur.Data)
		}
		plans = append(plans, pl)
	}
	// What is overwritten is saved first, so the undo can be undone.
	if len(contents) > 0 {
		if err := h.Store.SaveBlobs(ctx, contents); err != nil {
			return 0, fmt.Errorf("nothing was changed: could not back up the files before undoing: %w", err)
		}
	}
	var changes []store.Backup
	for _, pl := range plans {
		if err := tools.RestoreStateIn(root, pl.rel, pl.want, pl.data); err != nil {
			rep.Skipped = append(rep.Skipped, SkippedFile{Path: pl.shown, Reason: err.Error()})
			continue
		}
		if pl.want.Kind == store.FileMissing {
			rep.Removed = append(rep.Removed, pl.shown)
		} else {
			rep.Restored = append(rep.Restored, pl.shown)
		}
		before := pl.current
		before.Data = nil // stored by SaveBlobs; the record refers to it by hash
		changes = append(changes, store.Backup{Path: pl.path, Link: pl.rows[0].Link, Tool: string(act.Kind), Before: before,
			After: store.FileState{Kind: pl.want.Kind, Hash: pl.want.Hash, Mode: pl.want.Mode}})
		for _, b := range pl.rows {
			reverted = append(reverted, b.ID)
		}
		if revive != nil {
			revived = append(revived, revive(pl.path)...)
		}
	}
	id, err := h.Store.SaveUndoAction(ctx, store.ActionRecord{Action: act, Changes: changes, Reverted: reverted, Revived: revived})
	if err != nil {
		return 0, fmt.Errorf("the files were changed as listed, but recording the %s failed (it cannot be redone): %w", act.Kind, err)
	}
	return id, nil
}

// openRoot opens the project root that every undo write stays beneath.
func (h History) openRoot() (*beneath.Root, error) {
	if h.Root == "" {
		return nil, errors.New("no project root given: undo writes only beneath the project, so it writes nothing")
	}
	root, err := beneath.Open(h.Root)
	if err != nil {
		return nil, fmt.Errorf("nothing was changed: open the project root: %w", err)
	}
	return root, nil
}

// Beneath turns a stored backup path into a path beneath the project
// root, or says why it is not one. Stored paths are absolute and clean;
// the root may be named through a link (backups name resolved paths).
// Whether a directory on the way is a link is the write's own check.
func (h History) Beneath(p string) (string, error) {
	if p != filepath.Clean(p) {
		return "", fmt.Errorf("names %s, which is not a clean path", p)
	}
	if !filepath.IsAbs(p) {
		if err := beneath.Check(filepath.ToSlash(p)); err != nil {
			return "", fmt.Errorf("names %s, a relative path that leaves the project", p)
		}
		return filepath.ToSlash(p), nil
	}
	for _, root := range h.roots() {
		rel, err := filepath.Rel(root, p)
		if err == nil && beneath.Check(filepath.ToSlash(rel)) == nil {
			return filepath.ToSlash(rel), nil
		}
	}
	return "", fmt.Errorf("names %s, outside the project", p)
}

// roots are the project root as given and as resolved.
func (h History) roots() []string {
	roots := []string{filepath.Clean(h.Root)}
	if real, err := filepath.EvalSymlinks(h.Root); err == nil && real != roots[0] {
		roots = append(roots, real)
	}
	return roots
}

// linkError says which directory on the way to rel is a link.
func linkError(rel string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("names %s, but %s is a symbolic link", rel, pe.Path)
	}
	return fmt.Errorf("names %s, which goes through a symbolic link", rel)
}

// rowName names a backup row's origin for messages: "turn 2, write_file".
func (h History) rowName(st state, b store.Backup) string {
	if b.ActionID != 0 {
		return fmt.Sprintf("undo action %d", b.ActionID)
	}
	return h.turnName(st, b.TurnID) + ", " + toolOf(b)
}

// changedReason explains why a file's current state is not Polly's.
func changedReason(cur, polly store.FileState) string {
	switch {
	case cur.Kind == store.FileMissing:
		return "deleted outside Polly since Polly wrote it; left as it is"
	case polly.Kind == store.FileMissing:
		return "created again outside Polly since Polly removed it; left as it is"
	}
	return "changed outside Polly since Polly wrote it; left as it is"
}

func toolOf(b store.Backup) string {
	if b.Tool == "" {
		return "a command"
	}
	return b.Tool
}

// turnName names a turn for messages: "turn 3".
func (h History) turnName(st state, id int64) string {
	for i, t := range st.turns {
		if t.ID == id {
			return fmt.Sprintf("turn %d", i+1)
		}
	}
	return "a later turn"
}

// shownOf is how a changed path is shown: the link the tool was given when
// it followed one, project-relative when inside the root.
func (h History) shownOf(rows []store.Backup) string {
	for _, b := range rows {
		if b.Link != "" {
			return h.show(b.Link)
		}
	}
	return h.show(rows[0].Path)
}

func (h History) show(p string) string {
	if h.Root == "" {
		return p
	}
	for _, root := range h.roots() { // backups name paths after following links
		if rel, err := filepath.Rel(root, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return rel
		}
	}
	return p
}
