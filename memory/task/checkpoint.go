package task

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	"polly/workspace/atomicfile"
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

// Render writes the state as the Markdown of active_task.md (PRODUCT §3.3),
// in the layout of prompts/checkpoint.md.
func Render(s *State, c Checkpoint) string {
	in := checkpointInput{
		AgentID: c.AgentID, Reason: c.Reason, Session: c.Session, Persona: c.Persona,
		SavedAt: c.SavedAt.UTC().Format(time.RFC3339), Goal: firstLine(s.OriginalRequest, 200), Request: quote(s.OriginalRequest),
		MaxRecent: MaxRecent, ToolCalls: s.ToolCalls, Anchors: s.Anchors, Compactions: s.Compactions,
		TokensIn: s.TokensIn, TokensOut: s.TokensOut, Context: c.Context,
		Finished: s.Finished, StartedKey: startedKey(s),
	}
	for i, f := range s.FollowUps {
		in.FollowUps = append(in.FollowUps, followUpText{N: i + 1, Text: quote(f)})
	}
	if s.Understanding != "" {
		in.Understanding = quote(s.Understanding)
	}
	if len(s.Plan) > 0 {
		in.Plan = PlanText(s.Plan)
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
		in.Recent = append(in.Recent, firstLine(line, 240))
	}
	for _, f := range s.Files {
		in.Files = append(in.Files, "- "+f+" (written)")
	}
	for _, f := range s.FilesRead {
		if !slices.Contains(s.Files, f) {
			in.Files = append(in.Files, "- "+f+" (read)")
		}
	}
	if !s.StartedAt.IsZero() {
		in.Started = s.StartedAt.UTC().Format(time.RFC3339)
	}
	var b strings.Builder
	if err := checkpointTemplate().Execute(&b, in); err != nil {
		panic(fmt.Sprintf("prompts/checkpoint.md: %v", err)) // the fields are fixed: a broken template file
	}
	return b.String()
}

//go:embed prompts/checkpoint.md
var checkpointText string

// checkpointTemplate is parsed on first use: a start that writes no
// checkpoint does not pay for it.
var checkpointTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("checkpoint").Option("missingkey=error").Parse(checkpointText))
})

// checkpointInput is what prompts/checkpoint.md is filled with.
type checkpointInput struct {
	AgentID, Reason, Session, Persona, SavedAt, Started string
	Goal, Request, Understanding, Plan                  string
	FollowUps                                           []followUpText
	Recent, Files                                       []string
	MaxRecent, ToolCalls, Anchors, Compactions          int
	TokensIn, TokensOut, Context                        int
	Finished                                            bool
	StartedKey                                          string
}

// startedKey tells tasks of one session apart in the checkpoint's marker.
func startedKey(s *State) string {
	if s.StartedAt.IsZero() {
		return "-"
	}
	return strconv.FormatInt(s.StartedAt.UnixMilli(), 10)
}

// marker is the first line of a checkpoint: whose task it is and whether
// it is finished, so a checkpoint of another unfinished task is kept.
var marker = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^<!-- polly-checkpoint session=(\S*) started=(\S+) finished=(true|false) -->`)
})

// legacyHeader finds the session of a checkpoint written before the marker.
var legacyHeader = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^_Written by Polly \([a-z]+\) at [^.]+\. Session (\S+), persona`)
})

type followUpText struct {
	N    int
	Text string
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

// AsidePath is where the checkpoint of another session's unfinished task
// is kept when a new task's checkpoint takes active_task.md: beside it,
// by session (.agent/<agent-id>/active_task.<session>.md).
func AsidePath(stateDir, agentID, session string) string {
	return filepath.Join(stateDir, safeName(agentID), "active_task."+safeName(session)+".md")
}

// Write renders and writes the checkpoint atomically (temp file + rename),
// so a reader — or a crash — never sees half a file. active_task.md is the
// current task's; when it holds the checkpoint of another task that is not
// finished (another session's: a one-word headless run must not erase the
// long task's), that one is first moved beside it (AsidePath), and its
// path is returned as aside.
func Write(stateDir string, s *State, c Checkpoint) (path, aside string, err error) {
	path = Path(stateDir, c.AgentID)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", "", fmt.Errorf("write checkpoint: %w", err)
	}
	if old, err := os.ReadFile(path); err == nil {
		if session, other := otherUnfinished(old, c.Session, startedKey(s)); other {
			aside = AsidePath(stateDir, c.AgentID, session)
			if err := os.Rename(path, aside); err != nil {
				return "", "", fmt.Errorf("keep the checkpoint of session %s's unfinished task: %w", session, err)
			}
		}
	}
	if err := atomicfile.Write(path, []byte(Render(s, c)), 0o644); err != nil {
		return "", aside, fmt.Errorf("write checkpoint: %w", err)
	}
	// This session's task is current again: the copy kept beside it while
	// another task held active_task.md is superseded.
	if own := AsidePath(stateDir, c.AgentID, c.Session); own != aside {
		os.Remove(own)
	}
	return path, aside, nil
}

// otherUnfinished reads a checkpoint's marker: whether it belongs to a task
// other than (session, started) that is not finished, and its session. A
// checkpoint from before the marker counts as unfinished when its session
// differs.
func otherUnfinished(old []byte, session, started string) (string, bool) {
	if m := marker().FindSubmatch(old); m != nil {
		s := string(m[1])
		return s, string(m[3]) == "false" && (s != session || string(m[2]) != started)
	}
	if m := legacyHeader().FindSubmatch(old); m != nil && string(m[1]) != session {
		return string(m[1]), true
	}
	return "", false
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
