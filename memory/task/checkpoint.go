package task

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Checkpoint is what active_task.md records besides the state itself.
type Checkpoint struct {
	AgentID string
	Persona string
	Session string
	Reason  string // periodic, summary, switch, end, resume
	Context int    // tokens in the context when written
	SavedAt time.Time
}

// Render writes the state as the Markdown of active_task.md (PRODUCT §3.3).
func Render(s *State, c Checkpoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Active task — %s\n\n", c.AgentID)
	fmt.Fprintf(&b, "_Written by Polly (%s) at %s. Session %s, persona %s._\n\n",
		c.Reason, c.SavedAt.UTC().Format(time.RFC3339), c.Session, c.Persona)

	b.WriteString("## Original Goal\n\n")
	b.WriteString(firstLine(s.OriginalRequest, 200) + "\n\n")

	b.WriteString("## Full Original Request\n\n")
	b.WriteString(quote(s.OriginalRequest) + "\n\n")
	if len(s.FollowUps) > 0 {
		b.WriteString("### Follow-ups from the user\n\n")
		for i, f := range s.FollowUps {
			fmt.Fprintf(&b, "%d.\n%s\n\n", i+1, quote(f))
		}
	}

	b.WriteString("## Initial Plan / Understanding\n\n")
	if s.Understanding == "" {
		b.WriteString("_(not stated yet)_\n\n")
	} else {
		b.WriteString(quote(s.Understanding) + "\n\n")
	}

	b.WriteString("## Plan\n\n")
	if len(s.Plan) == 0 {
		b.WriteString("_(no plan set with task_plan)_\n\n")
	} else {
		b.WriteString(PlanText(s.Plan) + "\n")
	}

	fmt.Fprintf(&b, "## Recent Tool Activity (last %d)\n\n", MaxRecent)
	if len(s.Recent) == 0 {
		b.WriteString("_(none)_\n")
	}
	for _, a := range s.Recent {
		mark := "✓"
		if !a.OK {
			mark = "✗"
		}
		line := fmt.Sprintf("- %s %s %s %s", a.At.UTC().Format("15:04:05"), mark, a.Tool, a.Brief)
		if a.Note != "" {
			line += " — " + a.Note
		}
		b.WriteString(firstLine(line, 240) + "\n")
	}
	b.WriteString("\n## Files Touched\n\n")
	if len(s.Files)+len(s.FilesRead) == 0 {
		b.WriteString("_(none)_\n")
	}
	for _, f := range s.Files {
		b.WriteString("- " + f + " (written)\n")
	}
	for _, f := range s.FilesRead {
		if !slices.Contains(s.Files, f) {
			b.WriteString("- " + f + " (read)\n")
		}
	}
	b.WriteString("\n## Stats\n\n")
	fmt.Fprintf(&b, "- Tool calls: %d\n- Anchor: #%d\n- Compactions: %d\n", s.ToolCalls, s.Anchors, s.Compactions)
	fmt.Fprintf(&b, "- Tokens: %d in, %d out\n- Context: %d tokens\n", s.TokensIn, s.TokensOut, c.Context)
	if !s.StartedAt.IsZero() {
		fmt.Fprintf(&b, "- Started: %s\n", s.StartedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "- Saved at: %s\n", c.SavedAt.UTC().Format(time.RFC3339))
	return b.String()
}

// PlanText renders plan steps as "1. [DONE] title" lines.
func PlanText(steps []Step) string {
	var b strings.Builder
	for i, st := range steps {
		fmt.Fprintf(&b, "%d. [%s] %s\n", i+1, st.Status.Label(), st.Title)
	}
	return b.String()
}

// Path is where an agent's checkpoint lives under the state dir (.agent).
func Path(stateDir, agentID string) string {
	return filepath.Join(stateDir, safeName(agentID), "active_task.md")
}

// Write renders and writes the checkpoint atomically (temp file + rename),
// so a reader — or a crash — never sees half a file.
func Write(stateDir string, s *State, c Checkpoint) (string, error) {
	path := Path(stateDir, c.AgentID)
	if err := WriteFileAtomic(path, []byte(Render(s, c))); err != nil {
		return "", fmt.Errorf("write checkpoint: %w", err)
	}
	return path, nil
}

// WriteFileAtomic writes data to path through a temp file in the same
// directory and a rename.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// safeName keeps an agent id usable as a directory name.
func safeName(id string) string {
	id = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, id)
	if id == "" || id == "." || id == ".." {
		return "_"
	}
	return id
}

func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return Clip(s, max)
}

// Clip cuts s to at most max bytes on a rune boundary, marking the cut.
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func quote(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "> _(empty)_"
	}
	return "> " + strings.ReplaceAll(s, "\n", "\n> ")
}
