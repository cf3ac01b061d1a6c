package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"polly/workspace/atomicfile"
)

const (
	stampLayout = "2006-01-02 15:04"
	// entryCap bounds one logged text (an error may be a whole stack trace).
	entryCap = 4000
)

// Edit is one change to a workspace file, built by a write method
// (FactEdit, ErrorEdit, …): Preview shows what it would do, Apply makes
// it. The change is computed again when applied, under the workspace
// lock, so a write made meanwhile is never lost.
type Edit struct {
	File   string // relative to the workspace, slash-separated: "MEMORY.md"
	op     string // names the write in errors: "workspace_save_fact"
	change func(old string, exists bool) (doc, result string, changed bool)
}

// Path is the absolute path of the file e changes.
func (w *Workspace) Path(e Edit) string { return w.path(e.File) }

// Preview returns the file as it is and as e would leave it (the same text
// twice when e would change nothing).
func (w *Workspace) Preview(e Edit) (before, after string, err error) {
	data, err := os.ReadFile(w.target(e.File))
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", "", fmt.Errorf("%s: read %s: %w", e.op, e.File, err)
	}
	doc, _, changed := e.change(string(data), exists)
	if !changed {
		return string(data), string(data), nil
	}
	return string(data), doc, nil
}

// Apply makes the edit and says what it did, as the tool reports it.
func (w *Workspace) Apply(e Edit) (string, error) {
	var result string
	err := w.update(e.File, func(old string, exists bool) (string, bool) {
		doc, r, changed := e.change(old, exists)
		result = r
		return doc, changed
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", e.op, err)
	}
	return result, nil
}

// apply builds an edit and applies it.
func (w *Workspace) apply(e Edit, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return w.Apply(e)
}

// stamped is p with its time set to now when unset.
func (w *Workspace) stamped(p Provenance) Provenance {
	if p.At.IsZero() && !p.IsZero() {
		p.At = w.now()
	}
	return p
}

// SaveFact adds a fact to MEMORY.md (see FactEdit).
func (w *Workspace) SaveFact(p Provenance, section, fact string) (string, error) {
	return w.apply(w.FactEdit(p, section, fact))
}

// FactEdit adds "- <fact> _(date)_" and p's marker under "## <section>"
// of MEMORY.md. The section is matched case-insensitively and created at
// the end when missing. A fact already in that section (ignoring case,
// spacing, trailing punctuation, the date stamp and markers) is not added
// again.
func (w *Workspace) FactEdit(p Provenance, section, fact string) (Edit, error) {
	section = quoteComments(strings.Join(strings.Fields(strings.TrimLeft(strings.TrimSpace(section), "#")), " "))
	fact = strings.TrimPrefix(stripStamp(oneLine(quoteComments(fact))), "- ")
	fact = strings.TrimSpace(fact)
	if section == "" {
		return Edit{}, errors.New("workspace_save_fact: section is empty; use Project Facts, Preferences, Data Sources or Decisions")
	}
	if fact == "" {
		return Edit{}, errors.New("workspace_save_fact: fact is empty; give one durable fact as a sentence")
	}
	where := w.path(MemoryFile)
	return Edit{File: MemoryFile, op: "workspace_save_fact", change: func(old string, exists bool) (string, string, bool) {
		if !exists {
			old = w.templateText(MemoryFile, "# MEMORY\n")
		}
		line := withMarker(fmt.Sprintf("- %s _(%s)_", fact, w.now().Format(time.DateOnly)), w.stamped(p))
		doc, heading, dup := addFact(old, section, fact, line)
		if dup {
			return "", fmt.Sprintf("already saved under ## %s in %s", heading, where), false
		}
		return doc, fmt.Sprintf("saved under ## %s in %s", heading, where), true
	}}, nil
}

// outsideFences yields the lines of a Markdown document, with their index,
// that are outside ``` code fences (the fence lines themselves neither):
// a heading or a bullet inside a fence is text, not structure.
func outsideFences(lines []string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		inFence := false
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				inFence = !inFence
				continue
			}
			if !inFence && !yield(i, l) {
				return
			}
		}
	}
}

// addFact inserts line at the end of the section's entries, or reports that
// fact is already there. heading is the section's name as written in doc.
func addFact(doc, section, fact, line string) (out, heading string, dup bool) {
	lines := strings.Split(doc, "\n")
	want := normHeading(section)
	start, end := -1, len(lines)
	for i, l := range outsideFences(lines) {
		level, name := headingOf(l)
		if level == 0 || level > 2 {
			continue
		}
		if start >= 0 {
			end = i
			break
		}
		if level == 2 && normHeading(name) == want {
			start, heading = i, name
		}
	}

	if start < 0 {
		doc = strings.TrimRight(doc, "\n")
		if doc != "" {
			doc += "\n\n"
		}
		return doc + "## " + section + "\n" + line + "\n", section, false
	}

	key := normFact(fact)
	last := start
	for i := start + 1; i < end; i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" {
			continue
		}
		last = i
		if b, ok := cutBullet(t); ok && normFact(b) == key {
			return doc, heading, true
		}
	}
	lines = append(lines[:last+1], append([]string{line}, lines[last+1:]...)...)
	out = strings.Join(lines, "\n")
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out, heading, false
}

// headingOf returns the level and text of a Markdown ATX heading, or 0.
func headingOf(l string) (int, string) {
	n := 0
	for n < len(l) && l[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(l) && l[n] != ' ' && l[n] != '\t') {
		return 0, ""
	}
	return n, strings.TrimSpace(l[n:])
}

func normHeading(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(strings.TrimRight(s, ": ")), " "))
}

func cutBullet(s string) (string, bool) {
	for _, p := range []string{"- ", "* ", "+ "} {
		if b, ok := strings.CutPrefix(s, p); ok {
			return b, true
		}
	}
	return "", false
}

// normFact is the form facts are compared in: no marker, no date stamp,
// lower case, single spaces, no trailing punctuation.
func normFact(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(stripStamp(stripMarkers(s))), " "))
	return strings.TrimRight(s, " .,;:!?")
}

// stripStamp removes a trailing " _(2026-11-25)_".
func stripStamp(s string) string {
	t := strings.TrimSpace(s)
	const n = len("_(2006-01-02)_")
	if len(t) < n || !strings.HasSuffix(t, ")_") || !strings.HasPrefix(t[len(t)-n:], "_(") {
		return s
	}
	if _, err := time.Parse(time.DateOnly, t[len(t)-n+2:len(t)-2]); err != nil {
		return s
	}
	return strings.TrimSpace(t[:len(t)-n])
}

// oneLine joins a multi-line text into one line: a fact is one bullet.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// LogError appends an error the model solved and its fix to
// .learnings/ERRORS.md (see ErrorEdit).
func (w *Workspace) LogError(p Provenance, tool, errText, fix string) (string, error) {
	return w.apply(w.ErrorEdit(p, tool, errText, fix))
}

// ErrorEdit appends an error the model solved, its fix and the error's
// signature to .learnings/ERRORS.md. tool names the tool whose call
// failed: only an entry that names one is recalled (KnownFix) when that
// tool fails the same way again. The same error with the same fix is
// logged once.
func (w *Workspace) ErrorEdit(p Provenance, tool, errText, fix string) (Edit, error) {
	errText, fix, tool = clip(quoteComments(errText)), clip(quoteComments(fix)), oneLine(quoteComments(tool))
	if errText == "" {
		return Edit{}, errors.New("workspace_log_error: error is empty; give the error message or its signature")
	}
	if fix == "" {
		return Edit{}, errors.New("workspace_log_error: fix is empty; log an error once you know what fixed it")
	}
	body := "- **Signature:** " + Signature(errText) + "\n- **Error:** " + indent(errText) + "\n- **Fix:** " + indent(fix) + "\n"
	if tool != "" {
		body = "- **Tool:** " + tool + "\n" + body
	}
	return w.errorEntry("workspace_log_error", p, Fix{Tool: tool, Error: errText, Fix: fix}, body), nil
}

// LogLearning appends an insight to .learnings/LEARNINGS.md (see
// LearningEdit).
func (w *Workspace) LogLearning(p Provenance, insight string) (string, error) {
	return w.apply(w.LearningEdit(p, insight))
}

// LearningEdit appends an insight to .learnings/LEARNINGS.md under a dated
// heading with p's marker; an insight already there is counted again
// ("seen N×", and p's marker added) instead.
func (w *Workspace) LearningEdit(p Provenance, insight string) (Edit, error) {
	insight = clip(quoteComments(insight))
	if insight == "" {
		return Edit{}, errors.New("workspace_log_learning: insight is empty")
	}
	where := w.path(LearningsFile)
	return Edit{File: LearningsFile, op: "workspace_log_learning", change: func(old string, exists bool) (string, string, bool) {
		if !exists {
			old = w.templateText(LearningsFile, "# Learnings\n")
		}
		p := w.stamped(p)
		// Learned again: count it, so the most-used insights lead the prompt.
		if doc, seen, ok := bumpSeen(old, insight, markerLine(p)); ok {
			return doc, fmt.Sprintf("already logged in %s; now seen %d times", where, seen), true
		}
		old = strings.TrimRight(old, "\n")
		if old != "" {
			old += "\n\n"
		}
		return old + "## " + w.stamp() + "\n" + markerLine(p) + insight + "\n", "written to " + where, true
	}}, nil
}

// RequestFeature appends a feature request to
// .learnings/FEATURE_REQUESTS.md (see FeatureEdit).
func (w *Workspace) RequestFeature(p Provenance, desc string) (string, error) {
	return w.apply(w.FeatureEdit(p, desc))
}

// FeatureEdit appends a feature request to .learnings/FEATURE_REQUESTS.md.
func (w *Workspace) FeatureEdit(p Provenance, desc string) (Edit, error) {
	desc = clip(quoteComments(desc))
	if desc == "" {
		return Edit{}, errors.New("workspace_request_feature: description is empty")
	}
	return w.entryEdit("workspace_request_feature", FeatureRequestsFile, "# Feature requests\n", p, desc+"\n", true), nil
}

// DailyLog appends an entry to today's log (see LogEdit).
func (w *Workspace) DailyLog(p Provenance, entry string) (string, error) {
	return w.apply(w.LogEdit(p, entry))
}

// LogEdit appends an entry to today's log, memory/YYYY-MM-DD.md (local
// time), creating it with a "# YYYY-MM-DD" header. The entry is one list
// item: its first line (with p's marker) is what the prompt shows, the
// rest is indented detail.
func (w *Workspace) LogEdit(p Provenance, entry string) (Edit, error) {
	entry = clip(quoteComments(entry))
	if entry == "" {
		return Edit{}, errors.New("workspace_daily_log: entry is empty")
	}
	now := w.now()
	if p.At.IsZero() && !p.IsZero() {
		p.At = now
	}
	return w.logEdit("workspace_daily_log", now, withMarker("- "+now.Format("15:04")+w.tag()+" note: "+indent(entry)+"\n", p)), nil
}

// tag is " [project]" for a log entry, "" when no project is set.
func (w *Workspace) tag() string {
	if w.project == "" {
		return ""
	}
	return " [" + w.project + "]"
}

// TaskEntry is what the harness logs when a task ends.
type TaskEntry struct {
	Persona   string
	Asked     string
	Outcome   string // how it ended: "completed: <the answer's first line>"
	Files     []string
	ToolCalls int
	Session   string
	// Provenance marks the entry (the session's project, and whether it
	// had read untrusted content: its answer may repeat what it read).
	Provenance Provenance
}

// Caps of the harness's daily-log entry: it says what was done, not how.
const (
	askedCap   = 120
	outcomeCap = 160
	filesShown = 5
)

// LogTaskEnd writes the harness's entry for a finished task to today's
// log: two lines, the task and its outcome, then the files, tool calls and
// session.
func (w *Workspace) LogTaskEnd(t TaskEntry) (string, error) {
	now := w.now()
	who := ""
	if t.Persona != "" {
		who = " " + oneLine(t.Persona) + ":"
	}
	line := fmt.Sprintf("- %s%s%s %s → %s", now.Format("15:04"), w.tag(), who, shorten(oneLine(quoteComments(t.Asked)), askedCap),
		shorten(oneLine(outcomeLine(quoteComments(t.Outcome))), outcomeCap))
	p := t.Provenance
	if p.At.IsZero() && !p.IsZero() {
		p.At = now
	}
	line = withMarker(line, p) + "\n"
	var detail []string
	if len(t.Files) > 0 {
		files := t.Files
		more := ""
		if len(files) > filesShown {
			files, more = files[:filesShown], fmt.Sprintf(" (+%d more)", len(t.Files)-filesShown)
		}
		detail = append(detail, "files: "+strings.Join(files, ", ")+more)
	}
	detail = append(detail, fmt.Sprintf("%d tool calls", t.ToolCalls))
	if t.Session != "" {
		detail = append(detail, "session "+oneLine(t.Session))
	}
	return w.Apply(w.logEdit("task end log", now, line+"  "+strings.Join(detail, " · ")+"\n"))
}

// outcomeLine is the first line of an outcome that says something: an
// answer starting with a Markdown heading ("## What I did") gives its
// first line of text instead, as "completed: Read hello.go …".
func outcomeLine(outcome string) string {
	reason, text, _ := strings.Cut(strings.TrimSpace(outcome), ": ")
	if text == "" {
		return firstLines(reason, 1)
	}
	for _, l := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "---") || strings.HasPrefix(t, "```") {
			continue // a heading or a rule says nothing of the outcome
		}
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), ">*-+ \t"))
		l = strings.NewReplacer("**", "", "__", "", "`", "").Replace(l)
		if l != "" {
			return reason + ": " + l
		}
	}
	return reason
}

// logEdit appends item to the daily log of now's date.
func (w *Workspace) logEdit(op string, now time.Time, item string) Edit {
	date := now.Format(time.DateOnly)
	rel := LogDir + "/" + date + ".md"
	where := w.path(rel)
	return Edit{File: rel, op: op, change: func(old string, exists bool) (string, string, bool) {
		if !exists || strings.TrimSpace(old) == "" {
			return "# " + date + "\n\n" + item, "written to " + where, true
		}
		return strings.TrimRight(old, "\n") + "\n" + item, "written to " + where, true
	}}
}

// entryEdit appends "## <now>", p's marker and body to rel, creating it
// from the template (or header) when missing. With dedupe, a body already
// in the file is not appended again.
func (w *Workspace) entryEdit(op, rel, header string, p Provenance, body string, dedupe bool) Edit {
	where := w.path(rel)
	return Edit{File: rel, op: op, change: func(old string, exists bool) (string, string, bool) {
		if !exists {
			old = w.templateText(rel, header)
		}
		if dedupe && strings.Contains("\n"+old, "\n"+body) {
			return "", "already logged in " + where, false
		}
		old = strings.TrimRight(old, "\n")
		if old != "" {
			old += "\n\n"
		}
		return old + "## " + w.stamp() + "\n" + markerLine(w.stamped(p)) + body, "written to " + where, true
	}}
}

func (w *Workspace) stamp() string { return w.now().Format(stampLayout) }

// templateText is the template's version of rel, or fallback.
func (w *Workspace) templateText(rel, fallback string) string {
	if w.template != nil {
		if data, err := fs.ReadFile(w.template, rel); err == nil {
			return string(data)
		}
	}
	return fallback
}

// clip trims s and caps it at entryCap bytes.
func clip(s string) string { return shorten(strings.TrimSpace(s), entryCap) }

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + " …[cut]"
}

// indent keeps a multi-line value inside its list item.
func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

// update rewrites rel under the workspace lock: fn gets the current content
// and returns the new one, or false to leave the file alone.
func (w *Workspace) update(rel string, fn func(old string, exists bool) (string, bool)) error {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	if err := os.MkdirAll(w.dir, 0o755); err != nil { // the user may have removed it meanwhile
		return fmt.Errorf("lock workspace: %w", err)
	}
	unlock, err := lockPath(filepath.Join(w.dir, lockFile))
	if err != nil {
		return fmt.Errorf("lock workspace: %w", err)
	}
	defer unlock()

	target := w.target(rel)
	perm := fs.FileMode(0o644)
	data, err := os.ReadFile(target)
	exists := err == nil
	switch {
	case exists:
		if fi, err := os.Stat(target); err == nil {
			perm = fi.Mode().Perm()
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read %s: %w", rel, err)
	}
	doc, changed := fn(string(data), exists)
	if !changed {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := atomicfile.Write(target, []byte(doc), perm); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}

// target is the file a write of rel changes: through a symlink (say,
// MEMORY.md kept in a dotfiles repo) rather than replacing it.
func (w *Workspace) target(rel string) string {
	target := w.path(rel)
	if fi, err := os.Lstat(target); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(target); err == nil {
			target = real
		}
	}
	return target
}
