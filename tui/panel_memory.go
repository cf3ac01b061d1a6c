package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
)

// memoryPanel is the memory inspector: the workspace files and this
// project's .agent/*/active_task.md on the left, the chosen one rendered
// as Markdown in a viewport on the right. e opens it in $EDITOR; the view
// follows changes on disk (the mtime is polled while the panel is open).
type memoryPanel struct {
	seq   int
	files []memFile
	sel   int
	err   string

	path    string // shown now
	mtime   time.Time
	loadErr string
	vp      viewport.Model
}

type memFile struct{ label, path string }

type (
	memListMsg struct {
		seq   int
		files []memFile
		err   error
	}
	memLoadMsg struct {
		seq      int
		path     string
		mtime    time.Time
		rendered string
		err      error
	}
	memTickMsg struct{ seq int }
	memStatMsg struct {
		seq   int
		path  string
		mtime time.Time
	}
	memEditedMsg struct {
		seq int
		err error
	}
)

const memPollEvery = time.Second

func (p *memoryPanel) listWidth(w int) int { return min(34, max(18, w/3)) }

// list gathers the files in a Cmd.
func (p *memoryPanel) list(m *Model) tea.Cmd {
	seq, ws, state, project := p.seq, m.app.Workspace, m.app.StateDir, m.app.ProjectDir
	return func() tea.Msg {
		var out []memFile
		if project != "" { // the repository's own AGENTS.md, read with every request
			if f := filepath.Join(project, "AGENTS.md"); fileExists(f) {
				out = append(out, memFile{label: "project AGENTS.md", path: f})
			}
		}
		if ws != nil {
			files, err := ws.Files()
			if err != nil {
				return memListMsg{seq: seq, err: err}
			}
			for _, f := range files {
				out = append(out, memFile{label: f.Name, path: f.Path})
			}
		}
		if state != "" {
			matches, _ := filepath.Glob(filepath.Join(state, "*", "active_task.md"))
			sort.Strings(matches)
			for _, f := range matches {
				out = append(out, memFile{label: ".agent/" + filepath.Base(filepath.Dir(f)) + "/active_task.md", path: f})
			}
		}
		return memListMsg{seq: seq, files: out}
	}
}

// load reads and renders a file in a Cmd (with its own Markdown renderer).
func (p *memoryPanel) load(m *Model, path string) tea.Cmd {
	seq, style, w := p.seq, m.th.mdStyle, max(10, p.vp.Width()-1)
	return func() tea.Msg {
		fi, err := os.Stat(path)
		if err != nil {
			return memLoadMsg{seq: seq, path: path, err: err}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return memLoadMsg{seq: seq, path: path, err: err}
		}
		src := string(b)
		if strings.TrimSpace(src) == "" {
			src = "*(empty file)*"
		}
		return memLoadMsg{seq: seq, path: path, mtime: fi.ModTime(), rendered: renderMarkdown(src, style, w)}
	}
}

func (p *memoryPanel) tick() tea.Cmd {
	seq := p.seq
	return tea.Tick(memPollEvery, func(time.Time) tea.Msg { return memTickMsg{seq: seq} })
}

func (p *memoryPanel) update(m *Model, msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case memListMsg:
		if msg.seq != p.seq {
			return nil
		}
		if msg.err != nil {
			p.err = msg.err.Error()
			return nil
		}
		p.files = msg.files
		if len(p.files) == 0 {
			p.err = "no workspace files (the workspace is unavailable: see the warnings at start-up)"
			return nil
		}
		p.sel = min(p.sel, len(p.files)-1)
		return p.load(m, p.files[p.sel].path)
	case memLoadMsg:
		if msg.seq != p.seq || (p.sel < len(p.files) && msg.path != p.files[p.sel].path) {
			return nil
		}
		p.path, p.mtime = msg.path, msg.mtime
		p.loadErr = ""
		if msg.err != nil {
			p.loadErr = msg.err.Error()
			p.vp.SetContent("")
			return nil
		}
		off := p.vp.YOffset()
		p.vp.SetContent(msg.rendered)
		p.vp.SetYOffset(off) // a refresh keeps the reading position
	case memTickMsg:
		if msg.seq != p.seq {
			return nil // the panel was closed or reopened: stop polling
		}
		path, seq := p.path, p.seq
		var stat tea.Cmd
		if path != "" {
			stat = func() tea.Msg {
				fi, err := os.Stat(path)
				if err != nil {
					return memStatMsg{seq: seq, path: path}
				}
				return memStatMsg{seq: seq, path: path, mtime: fi.ModTime()}
			}
		}
		return tea.Batch(stat, p.tick())
	case memStatMsg:
		if msg.seq == p.seq && msg.path == p.path && !msg.mtime.Equal(p.mtime) {
			return p.load(m, p.path)
		}
	case memEditedMsg:
		if msg.seq != p.seq {
			return nil
		}
		if msg.err != nil {
			m.flash = "editor: " + msg.err.Error()
		}
		return tea.Batch(p.list(m), p.load(m, p.path))
	}
	return nil
}

func (p *memoryPanel) key(m *Model, msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc", "q":
		m.closePanel()
	case "up", "k":
		if p.sel > 0 {
			p.sel--
			return p.load(m, p.files[p.sel].path)
		}
	case "down", "j":
		if p.sel < len(p.files)-1 {
			p.sel++
			return p.load(m, p.files[p.sel].path)
		}
	case "pgup", "pgdown", "space", "home", "g", "end", "G":
		pageViewport(&p.vp, msg.String())
	case "r":
		return p.load(m, p.path)
	case "e":
		if p.path == "" {
			return nil
		}
		args := strings.Fields(m.editor)
		if len(args) == 0 {
			args = []string{"vi"}
		}
		cmd := exec.Command(args[0], append(args[1:], p.path)...)
		seq := p.seq
		return tea.ExecProcess(cmd, func(err error) tea.Msg { return memEditedMsg{seq: seq, err: err} })
	}
	return nil
}

func (p *memoryPanel) view(m *Model, w, h int) []string {
	out := []string{m.panelTitle("Memory", "↑↓ choose · pgup/pgdn scroll · e edit in $EDITOR · r reload · esc close", w)}
	if p.err != "" {
		return append(out, m.th.warn.Render(clip(p.err, w)))
	}
	lw := p.listWidth(w)
	rows := make([]string, len(p.files))
	for i, f := range p.files {
		rows[i] = " " + f.label
	}
	left := padLines(m.list(rows, p.sel, lw, h-1), h-1)
	var right []string
	if p.loadErr != "" {
		right = []string{m.th.bad.Render(p.loadErr)}
	} else {
		right = strings.Split(p.vp.View(), "\n")
	}
	right = padLines(right, h-1)
	sep := m.th.dim.Render("│")
	for i := range h - 1 {
		l := left[i]
		if pad := lw - widthOf(l); pad > 0 {
			l += strings.Repeat(" ", pad)
		}
		out = append(out, l+sep+right[i])
	}
	if p.path != "" && h > 2 {
		info := fmt.Sprintf(" %s · %s", p.path, p.mtime.Local().Format("2006-01-02 15:04:05"))
		out[len(out)-1] = m.th.dim.Render(clip(info, w))
	}
	return out
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
