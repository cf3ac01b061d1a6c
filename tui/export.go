package tui

import (
	"fmt"
	"path/filepath"

	tea "charm.land/bubbletea/v2"

	"polly/agent"
	"polly/workspace/atomicfile"
)

// exportedMsg ends /export.
type exportedMsg struct {
	path  string
	bytes int
	err   error
}

// export is /export [FILE]: the session as Markdown (agent.ExportMarkdown)
// in FILE, relative to the project, or polly-session-ID.md there. The
// file is written in a Cmd, whole or not at all (atomicfile).
func (m *Model) export(file string) tea.Cmd {
	id := m.sessID
	switch {
	case m.app == nil || m.app.Store == nil:
		m.flash = "no session store: nothing to export"
		return nil
	case id == "":
		m.flash = "nothing to export yet: the session starts with its first message"
		return nil
	}
	root := m.app.Deps.ProjectDir
	if file == "" {
		file = "polly-session-" + id + ".md"
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(root, file)
	}
	st, ctx, names, now := m.app.Store, m.ctx, m.namesByID(), m.now()
	return func() tea.Msg {
		md, err := agent.ExportMarkdown(ctx, st, id, func(p string) string { return nameOf(names, p) }, now)
		if err != nil {
			return exportedMsg{err: err}
		}
		if err := atomicfile.Write(file, []byte(md), 0o644); err != nil {
			return exportedMsg{path: file, err: fmt.Errorf("write %s: %w", file, err)}
		}
		return exportedMsg{path: file, bytes: len(md)}
	}
}

func (m *Model) exported(msg exportedMsg) {
	tr := m.current().tr
	tr.toEnd()
	if msg.err != nil {
		tr.add(&item{kind: kError, text: "export: " + msg.err.Error()})
		return
	}
	tr.add(&item{kind: kSystem, text: fmt.Sprintf("exported this session as Markdown to %s (%s)", msg.path, fmtBytes(msg.bytes))})
}

func fmtBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
