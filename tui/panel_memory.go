package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"polly/workspace"
)

// memoryPanel is the memory inspector: the workspace files and this
// project's .agent/*/active_task.md on the left, the chosen one rendered
// as Markdown in a viewport on the right. e opens it in $EDITOR; the view
// follows changes on disk (the mtime is polled while the panel is open).
type memoryPanel struct {
	look
	keys   memoryKeys
	seq    int
	files  func() ([]memFile, error)
	editor string // $VISUAL / $EDITOR
	tty    terminal
	list   []memFile
	sel    int
	err    string
	note   string                            // a problem that leaves the list usable
	marked map[string]bool                   // files changed since the last opening, as found when this one began
	apply  func(file string) (string, error) // applies a pending template update (workspace.ApplyTemplateUpdate); nil: none

	path    string // shown now
	mtime   time.Time
	loadErr string
	vp      viewport.Model
	w, h    int
}

// memFile is one entry of the list; update names the workspace file a
// pending template update (a diff in workspace.UpdatesDir) is for.
type memFile struct {
	label, path, update string
	changed             bool // changed since the user last opened the inspector
}

type memoryKeys struct {
	Choose, Page, Ends, Edit, Reload, Apply, Close key.Binding
}

func newMemoryKeys() memoryKeys {
	pk := newPagerKeys()
	return memoryKeys{
		Choose: bind("↑↓", "choose", "up", "down"),
		Page:   bind("pgup/pgdn", "scroll", "pgup", "pgdown"),
		Ends:   pk.Ends,
		Edit:   bind("e", "edit in $EDITOR", "e"),
		Reload: bind("r", "reload", "r"),
		Apply:  bind("a", "apply a template update", "a"),
		Close:  bind("esc", "close", "esc"),
	}
}

func (k memoryKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Choose, k.Page, k.Edit, k.Reload, k.Apply, k.Close}
}
func (k memoryKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Choose, k.Page, k.Ends, k.Edit, k.Reload, k.Apply, k.Close}}
}

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
	memAppliedMsg struct {
		seq  int
		text string // what applying the template update did
	}
)

const memPollEvery = time.Second

// changedMark starts the row of a file changed since the last opening.
const changedMark = "●"

// memorySource lists the files the memory panel shows (in its Cmd),
// marking those that changed since the inspector was last opened.
func (m *Model) memorySource() func() ([]memFile, error) {
	ws, state, project, work, seenDir := m.app.Workspace, m.app.StateDir, m.app.ProjectDir, m.app.WorkDir, m.stateDir
	return func() ([]memFile, error) {
		out, err := listMemory(ws, state, project, work)
		if err != nil {
			return nil, err
		}
		if err := markSeen(seenDir, out); err != nil {
			return out, fmt.Errorf("the files are listed, but what changed since last time cannot be told: %w", err)
		}
		return out, nil
	}
}

// listMemory lists the project's AGENTS.md, the workspace files and the
// project's checkpoints.
func listMemory(ws *workspace.Workspace, state, project, work string) ([]memFile, error) {
	var out []memFile
	if project != "" { // the project's instruction files, read with every request
		for _, f := range workspace.InstructionFiles(project, work) {
			rel, _ := filepath.Rel(project, f)
			out = append(out, memFile{label: "project " + filepath.ToSlash(rel), path: f})
		}
	}
	if ws != nil {
		files, err := ws.Files()
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			out = append(out, memFile{label: f.Name, path: f.Path})
		}
		// Template changes waiting for the user (their file has edits).
		pending, _ := filepath.Glob(filepath.Join(ws.Dir(), workspace.UpdatesDir, "*.md"))
		for _, p := range pending {
			if f := ws.UpdateFile(p); f != "" {
				out = append(out, memFile{label: f + " — template update", path: p, update: f})
			}
		}
	}
	if state != "" {
		// active_task.md, and beside it other sessions' unfinished tasks
		// (active_task.<session>.md).
		matches, _ := filepath.Glob(filepath.Join(state, "*", "active_task*.md"))
		sort.Strings(matches)
		for _, f := range matches {
			out = append(out, memFile{label: ".agent/" + filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f), path: f})
		}
	}
	return out, nil
}

func newMemoryPanel(lk look, seq int, files func() ([]memFile, error), editor string, tty terminal) *memoryPanel {
	return &memoryPanel{look: lk, keys: newMemoryKeys(), seq: seq, files: files, editor: editor, tty: tty}
}

func (p *memoryPanel) ShortHelp() []key.Binding  { return p.keys.ShortHelp() }
func (p *memoryPanel) FullHelp() [][]key.Binding { return p.keys.FullHelp() }

func listWidth(w int) int { return min(34, max(18, w/3)) }

func (p *memoryPanel) SetSize(w, h int) {
	p.w, p.h = w, h
	p.vp.SetWidth(max(1, w-listWidth(w)-1))
	p.vp.SetHeight(max(1, h-1))
}

func (p *memoryPanel) Init() tea.Cmd { return tea.Batch(p.listFiles(), p.tick()) }

// listFiles gathers the files in a Cmd.
func (p *memoryPanel) listFiles() tea.Cmd {
	seq, files := p.seq, p.files
	return func() tea.Msg {
		list, err := files()
		return memListMsg{seq: seq, files: list, err: err}
	}
}

// load reads and renders a file in a Cmd (with its own Markdown renderer).
func (p *memoryPanel) load(path string) tea.Cmd {
	seq, style, w := p.seq, p.th.mdStyle, max(10, p.vp.Width()-1)
	return func() tea.Msg {
		fi, err := os.Stat(path)
		if err != nil {
			return memLoadMsg{seq: seq, path: path, err: err}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return memLoadMsg{seq: seq, path: path, err: err}
		}
		// Provenance markers read as a note of who wrote each entry.
		src := workspace.Readable(string(b))
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

func (p *memoryPanel) Update(msg tea.Msg) (panel, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg, lookMsg: // re-render at the new width or in the new colours
		if lm, ok := msg.(lookMsg); ok {
			p.look = lm.look
		}
		if p.path != "" {
			return p, p.load(p.path)
		}
	case memListMsg:
		if msg.seq != p.seq {
			return p, nil
		}
		if msg.err != nil && len(msg.files) == 0 {
			p.err = msg.err.Error()
			return p, nil
		}
		if msg.err != nil {
			p.note = msg.err.Error()
		}
		// The marks are those of this opening; a later listing (after an
		// edit in $EDITOR) keeps them rather than mark the user's own edit.
		if p.marked == nil {
			p.marked = map[string]bool{}
			for _, f := range msg.files {
				if f.changed {
					p.marked[f.path] = true
				}
			}
		}
		for i := range msg.files {
			msg.files[i].changed = p.marked[msg.files[i].path]
		}
		p.list = msg.files
		if len(p.list) == 0 {
			p.err = "no workspace files (the workspace is unavailable: see the warnings at start-up)"
			return p, nil
		}
		p.sel = min(p.sel, len(p.list)-1)
		return p, p.load(p.list[p.sel].path)
	case memLoadMsg:
		if msg.seq != p.seq || (p.sel < len(p.list) && msg.path != p.list[p.sel].path) {
			return p, nil
		}
		p.path, p.mtime = msg.path, msg.mtime
		p.loadErr = ""
		if msg.err != nil {
			p.loadErr = msg.err.Error()
			p.vp.SetContent("")
			return p, nil
		}
		off := p.vp.YOffset()
		p.vp.SetContent(msg.rendered)
		p.vp.SetYOffset(off) // a refresh keeps the reading position
	case memTickMsg:
		if msg.seq != p.seq {
			return p, nil // an older opening: stop its polling
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
		return p, tea.Batch(stat, p.tick())
	case memStatMsg:
		if msg.seq == p.seq && msg.path == p.path && !msg.mtime.Equal(p.mtime) {
			return p, p.load(p.path)
		}
	case memAppliedMsg:
		if msg.seq != p.seq {
			return p, nil
		}
		return p, tea.Batch(msgCmd(flashMsg{text: msg.text}), p.listFiles())
	case memEditedMsg:
		if msg.seq != p.seq {
			return p, nil
		}
		var flash tea.Cmd
		if msg.err != nil {
			flash = msgCmd(flashMsg{text: "editor: " + msg.err.Error()})
		}
		return p, tea.Batch(flash, p.listFiles(), p.load(p.path))
	case tea.MouseWheelMsg:
		if k, ok := wheelKey(msg); ok {
			if k == "up" {
				p.vp.ScrollUp(3)
			} else {
				p.vp.ScrollDown(3)
			}
		}
	case tea.KeyPressMsg:
		return p.key(msg)
	}
	return p, nil
}

func (p *memoryPanel) key(msg tea.KeyPressMsg) (panel, tea.Cmd) {
	k := msg.String()
	switch {
	case key.Matches(msg, p.keys.Close):
		return nil, nil
	case key.Matches(msg, p.keys.Choose):
		if sel := max(0, moveSelection(p.sel, len(p.list), k)); sel != p.sel {
			p.sel = sel
			return p, p.load(p.list[p.sel].path)
		}
	case key.Matches(msg, p.keys.Page, p.keys.Ends):
		pageViewport(&p.vp, k)
	case key.Matches(msg, p.keys.Reload):
		if p.path != "" {
			return p, p.load(p.path)
		}
	case key.Matches(msg, p.keys.Apply):
		if p.sel >= len(p.list) || p.list[p.sel].update == "" || p.apply == nil {
			return p, msgCmd(flashMsg{text: "a applies a template update: choose one in the list"})
		}
		apply, file, seq := p.apply, p.list[p.sel].update, p.seq
		return p, func() tea.Msg {
			text, err := apply(file)
			if err != nil {
				text = "template update: " + err.Error()
			}
			return memAppliedMsg{seq: seq, text: text}
		}
	case key.Matches(msg, p.keys.Edit):
		if p.path == "" {
			return p, nil
		}
		args := strings.Fields(p.editor)
		if len(args) == 0 {
			args = []string{"vi"}
		}
		cmd := exec.Command(args[0], append(args[1:], p.path)...)
		// The terminal itself, not the program's wrapped output: given a
		// writer that is not a file, exec would hand the editor a pipe.
		if p.tty.in != nil && p.tty.out != nil {
			cmd.Stdin, cmd.Stdout = p.tty.in, p.tty.out
		}
		seq := p.seq
		return p, tea.ExecProcess(cmd, func(err error) tea.Msg { return memEditedMsg{seq: seq, err: err} })
	}
	return p, nil
}

func (p *memoryPanel) View() string {
	th, w, h := p.th, p.w, p.h
	out := []string{panelTitle(th, "Memory", p, w)}
	if p.err != "" {
		return joinLines(append(out, th.warn.Render(clip(p.err, w))))
	}
	lw := listWidth(w)
	rows := make([]string, len(p.list))
	for i, f := range p.list {
		rows[i] = " " + f.label
		if f.changed {
			rows[i] = changedMark + f.label
		}
	}
	left := padLines(listRows(th, rows, p.sel, lw, h-1), h-1)
	var right []string
	if p.loadErr != "" {
		right = []string{th.bad.Render(p.loadErr)}
	} else {
		right = strings.Split(p.vp.View(), "\n")
	}
	right = padLines(right, h-1)
	sep := th.dim.Render("│")
	for i := range h - 1 {
		l := left[i]
		if pad := lw - widthOf(l); pad > 0 {
			l += strings.Repeat(" ", pad)
		}
		out = append(out, l+sep+right[i])
	}
	if p.path != "" && h > 2 {
		info := fmt.Sprintf(" %s · %s", p.path, p.mtime.Local().Format("2006-01-02 15:04:05"))
		if p.sel < len(p.list) && p.list[p.sel].changed {
			info += " · " + changedMark + "changed since you last opened the memory inspector"
		}
		if p.note != "" {
			info += " · " + p.note
		}
		out[len(out)-1] = th.dim.Render(clip(info, w))
	}
	return joinLines(out)
}
