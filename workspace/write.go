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

// SaveFact adds "- <fact> _(date)_" under "## <section>" of MEMORY.md. The
// section is matched case-insensitively and created at the end when missing.
// A fact already in that section (ignoring case, spacing, trailing
// punctuation and the date stamp) is not added again.
func (w *Workspace) SaveFact(section, fact string) (string, error) {
	section = strings.Join(strings.Fields(strings.TrimLeft(strings.TrimSpace(section), "#")), " ")
	fact = strings.TrimPrefix(stripStamp(oneLine(fact)), "- ")
	fact = strings.TrimSpace(fact)
	if section == "" {
		return "", errors.New("workspace_save_fact: section is empty; use Project Facts, Preferences, Data Sources or Decisions")
	}
	if fact == "" {
		return "", errors.New("workspace_save_fact: fact is empty; give one durable fact as a sentence")
	}
	line := fmt.Sprintf("- %s _(%s)_", fact, w.now().Format(time.DateOnly))
	where := w.path(MemoryFile)
	var result string
	err := w.update(MemoryFile, func(old string, exists bool) (string, bool) {
		if !exists {
			old = w.templateText(MemoryFile, "# MEMORY\n")
		}
		doc, heading, dup := addFact(old, section, fact, line)
		if dup {
			result = fmt.Sprintf("already saved under ## %s in %s", heading, where)
			return "", false
		}
		result = fmt.Sprintf("saved under ## %s in %s", heading, where)
		return doc, true
	})
	if err != nil {
		return "", fmt.Errorf("workspace_save_fact: %w", err)
	}
	return result, nil
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

// normFact is the form facts are compared in: no date stamp, lower case,
// single spaces, no trailing punctuation.
func normFact(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(stripStamp(s)), " "))
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
// .learnings/ERRORS.md, with the error's signature (see KnownFix). The same
// error with the same fix is logged once.
func (w *Workspace) LogError(errText, fix string) (string, error) {
	errText, fix = clip(errText), clip(fix)
	if errText == "" {
		return "", errors.New("workspace_log_error: error is empty; give the error message or its signature")
	}
	if fix == "" {
		return "", errors.New("workspace_log_error: fix is empty; log an error once you know what fixed it")
	}
	sig := Signature(errText)
	body := "- **Signature:** " + sig + "\n- **Error:** " + indent(errText) + "\n- **Fix:** " + indent(fix) + "\n"
	return w.appendErrorEntry("workspace_log_error", Fix{Error: errText, Fix: fix}, body)
}

// LogLearning appends an insight to .learnings/LEARNINGS.md; an insight
// already there is counted again ("seen N×") instead.
func (w *Workspace) LogLearning(insight string) (string, error) {
	insight = clip(insight)
	if insight == "" {
		return "", errors.New("workspace_log_learning: insight is empty")
	}
	where := w.path(LearningsFile)
	result := "written to " + where
	err := w.update(LearningsFile, func(old string, exists bool) (string, bool) {
		if !exists {
			old = w.templateText(LearningsFile, "# Learnings\n")
		}
		// Learned again: count it, so the most-used insights lead the prompt.
		if doc, seen, ok := bumpSeen(old, insight); ok {
			result = fmt.Sprintf("already logged in %s; now seen %d times", where, seen)
			return doc, true
		}
		old = strings.TrimRight(old, "\n")
		if old != "" {
			old += "\n\n"
		}
		return old + "## " + w.stamp() + "\n" + insight + "\n", true
	})
	if err != nil {
		return "", fmt.Errorf("workspace_log_learning: %w", err)
	}
	return result, nil
}

// RequestFeature appends a feature request to .learnings/FEATURE_REQUESTS.md.
func (w *Workspace) RequestFeature(desc string) (string, error) {
	desc = clip(desc)
	if desc == "" {
		return "", errors.New("workspace_request_feature: description is empty")
	}
	return w.appendEntry("workspace_request_feature", FeatureRequestsFile, "# Feature requests\n", w.stamp(), desc+"\n", true)
}

// DailyLog appends an entry to today's log, memory/YYYY-MM-DD.md (local
// time), creating it with a "# YYYY-MM-DD" header. The entry is one list
// item: its first line is what the prompt shows, the rest is indented
// detail.
func (w *Workspace) DailyLog(entry string) (string, error) {
	entry = clip(entry)
	if entry == "" {
		return "", errors.New("workspace_daily_log: entry is empty")
	}
	now := w.now()
	return w.appendLog("workspace_daily_log", now, "- "+now.Format("15:04")+w.tag()+" note: "+indent(entry)+"\n")
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
	line := fmt.Sprintf("- %s%s%s %s → %s\n", now.Format("15:04"), w.tag(), who, shorten(oneLine(t.Asked), askedCap),
		shorten(oneLine(outcomeLine(t.Outcome)), outcomeCap))
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
	return w.appendLog("task end log", now, line+"  "+strings.Join(detail, " · ")+"\n")
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

func (w *Workspace) appendLog(op string, now time.Time, item string) (string, error) {
	date := now.Format(time.DateOnly)
	rel := LogDir + "/" + date + ".md"
	where := w.path(rel)
	err := w.update(rel, func(old string, exists bool) (string, bool) {
		if !exists || strings.TrimSpace(old) == "" {
			return "# " + date + "\n\n" + item, true
		}
		return strings.TrimRight(old, "\n") + "\n" + item, true
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	return "written to " + where, nil
}

// appendEntry appends "## title\nbody" to rel, creating it from the template
// (or header) when missing. With dedupe, a body already in the file is not
// appended again.
func (w *Workspace) appendEntry(op, rel, header, title, body string, dedupe bool) (string, error) {
	where := w.path(rel)
	result := "written to " + where
	err := w.update(rel, func(old string, exists bool) (string, bool) {
		if !exists {
			old = w.templateText(rel, header)
		}
		if dedupe && strings.Contains("\n"+old, "\n"+body) {
			result = "already logged in " + where
			return "", false
		}
		old = strings.TrimRight(old, "\n")
		if old != "" {
			old += "\n\n"
		}
		return old + "## " + title + "\n" + body, true
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	return result, nil
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

	target := w.path(rel)
	// Write through a symlink (say, MEMORY.md kept in a dotfiles repo) rather than replace it.
	if fi, err := os.Lstat(target); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(target); err == nil {
			target = real
		}
	}
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
