// Package permission is the one place that decides whether a tool call may
// run: the mode (ask, auto-edit, yolo), the project boundary, and — when a
// person is there to answer — the question asked through an Asker. In a
// headless run, what would ask is denied with a message the model can act on.
package permission

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"polly/tools"
)

// Mode is how much runs without asking.
type Mode string

const (
	Ask      Mode = "ask"       // reads are free; writes and commands ask
	AutoEdit Mode = "auto-edit" // file edits inside the project are free; commands ask
	Yolo     Mode = "yolo"      // nothing asks
)

// Answer is a person's decision on one request.
type Answer int

const (
	Deny         Answer = iota
	AllowOnce           // this call only
	AllowSession        // this kind of call for the rest of the session
)

// Request is what a person is asked to decide.
type Request struct {
	Tool   string
	Access tools.Access
	Reason string // why it asks (outside the project, command not read-only…)
}

// Reply is a person's answer, with a reason for a denial.
type Reply struct {
	Answer Answer
	Reason string
}

// Asker asks a person (the TUI's permission dialog). Nil in headless runs.
type Asker interface {
	Ask(ctx context.Context, r Request) (Reply, error)
}

// Policy decides tool calls. It is safe for concurrent use: sub-agents
// share their parent's policy and its session approvals.
type Policy struct {
	Mode  Mode
	Root  string // project root, absolute
	Asker Asker  // nil: headless, asking means denying

	mu       sync.Mutex
	approved map[string]bool // session approvals by key
}

// Allow implements tools.Gate.
func (p *Policy) Allow(ctx context.Context, tool string, a tools.Access) error {
	reason, ask := p.judge(a)
	if !ask {
		return nil
	}
	key := approvalKey(tool, a)
	p.mu.Lock()
	ok := p.approved[key]
	p.mu.Unlock()
	if ok {
		return nil
	}
	if p.Asker == nil {
		return &tools.Denied{Reason: fmt.Sprintf("%s %s. This run cannot ask for approval (headless, mode %s). "+
			"Tell the user what you wanted to do and why; they can re-run with --mode auto-edit (file edits) or --yolo, "+
			"or allow it in the config (permissions.allow).", tool, reason, p.mode())}
	}
	rep, err := p.Asker.Ask(ctx, Request{Tool: tool, Access: a, Reason: reason})
	if err != nil {
		return &tools.Denied{Reason: fmt.Sprintf("%s was not approved: %v", tool, err)}
	}
	switch rep.Answer {
	case AllowSession:
		p.mu.Lock()
		if p.approved == nil {
			p.approved = map[string]bool{}
		}
		p.approved[key] = true
		p.mu.Unlock()
		return nil
	case AllowOnce:
		return nil
	}
	why := "the user denied it"
	if rep.Reason != "" {
		why += ": " + rep.Reason
	}
	return &tools.Denied{Reason: why}
}

func (p *Policy) mode() Mode {
	if p.Mode == "" {
		return Ask
	}
	return p.Mode
}

// judge says whether a call needs a person's approval, and why.
func (p *Policy) judge(a tools.Access) (reason string, ask bool) {
	switch a.Kind {
	case tools.AccessRead, tools.AccessMemory:
		return "", false
	}
	if p.mode() == Yolo {
		return "", false
	}
	switch a.Kind {
	case tools.AccessWrite:
		for _, path := range a.Paths {
			if !p.inside(path) {
				return "writes outside the project (" + path + ")", true
			}
		}
		if p.mode() == AutoEdit {
			return "", false
		}
		return "writes files, which needs approval in ask mode", true
	case tools.AccessExecute:
		return "runs a shell command, which needs approval in mode " + string(p.mode()), true
	case tools.AccessNetwork:
		return "fetches " + a.URL + ", which needs approval in mode " + string(p.mode()), true
	}
	return "has an unknown effect", true
}

// inside reports whether path is within the project root after cleaning.
func (p *Policy) inside(path string) bool {
	if p.Root == "" {
		return false
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(p.Root, abs)
	}
	rel, err := filepath.Rel(p.Root, filepath.Clean(abs))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// approvalKey groups calls that one "allow for this session" covers: the
// same tool on the same command or path.
func approvalKey(tool string, a tools.Access) string {
	switch a.Kind {
	case tools.AccessExecute:
		return tool + "\x00" + a.Command
	case tools.AccessNetwork:
		return tool + "\x00" + hostOf(a.URL)
	}
	return tool + "\x00" + strings.Join(a.Paths, "\x00")
}

func hostOf(u string) string {
	s := u
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	return s
}
