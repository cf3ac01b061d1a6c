package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"polly/tools/permission"
)

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// render lays the screen out, exactly m.h lines of at most m.w columns:
// tabs, the chat (or a panel), the info line, the input, the status bar.
func (m *Model) render() string {
	if m.tooSmall() {
		return m.tooSmallScreen()
	}
	lines := make([]string, 0, m.h)
	lines = append(lines, clip(m.tabsLine(), m.w))
	if m.panel != nil {
		lines = append(lines, m.panelLines(m.w, m.h-2)...)
	} else {
		ch := m.chatHeight()
		tr := m.current().tr
		var top []string
		if !tr.hasConversation() {
			top = fitLines(m.welcomeLines(), m.w)
		}
		// Transcript lines come from the render caches, already cut to
		// the width: measuring them again would cost more than the rest.
		body := tr.view(m.r, m.w, ch-len(top))
		if !tr.follow && tr.unseen && len(body) > 0 {
			body[len(body)-1] = m.th.accent.Render(clip("  ↓ new output below — end or pgdn to follow", m.w))
		}
		chat := padLines(append(top, body...), ch)
		if list := m.compLines(ch - 1); len(list) > 0 {
			chat = append(chat[:ch-len(list)], list...)
		}
		lines = append(lines, chat...)
		lines = append(lines, clip(m.infoLine(), m.w))
		lines = append(lines, m.inputLines()...)
	}
	lines = append(lines, clip(m.statusLine(), m.w))
	out := strings.Join(lines, "\n")
	if m.perm.open() {
		out = m.overlay(out, m.perm.View())
	} else if m.adopt != nil {
		out = m.overlay(out, m.adoptView())
	}
	return out
}

// welcomeLines open an empty conversation: who is on screen, the model,
// and the keys that matter first.
func (m *Model) welcomeLines() []string {
	th := m.th
	p := m.current().p
	who := p.Name
	if p.Description != "" {
		who += " — " + p.Description
	} else if p.Role != "" {
		who += " — " + p.Role
	}
	w := max(1, m.w-2)
	out := []string{""}
	out = append(out, prefixed(plainLines("You are talking to "+who, w), "  ", th.accent)...)
	if m.modelErr == nil {
		mi := m.startModel
		if m.app != nil {
			mi = m.app.Model
		}
		out = append(out, prefixed(plainLines("model "+mi.Name+" · "+mi.BaseURL, w), "  ", th.dim)...)
	}
	keys := fmt.Sprintf("F1 help · Tab or Alt+1…%d switch personas (%s) · / commands · Enter sends", len(m.personas), strings.Join(m.personaNames(), ", "))
	out = append(out, prefixed(plainLines(keys, w), "  ", th.dim)...)
	return append(out, "")
}

func (m *Model) tooSmall() bool { return m.termW < minW || m.termH < minH }

// tooSmallScreen fills a terminal too small for the layout with one
// readable line (wrapped if need be) saying what size is needed.
func (m *Model) tooSmallScreen() string {
	w, h := max(m.termW, 1), max(m.termH, 1)
	msg := fmt.Sprintf("terminal too small (%d×%d): Polly needs %d×%d — enlarge it, or ctrl+c quits", m.termW, m.termH, minW, minH)
	if m.perm.open() {
		msg = fmt.Sprintf("a permission question waits; terminal too small (%d×%d) to show it: enlarge it to %d×%d", m.termW, m.termH, minW, minH)
	}
	ls := plainLines(msg, w)
	if len(ls) > h {
		ls = ls[:h]
	}
	top := (h - len(ls)) / 2
	out := make([]string, 0, h)
	for range top {
		out = append(out, "")
	}
	for _, l := range ls {
		out = append(out, m.th.warn.Render(l))
	}
	return strings.Join(padLines(out, h), "\n")
}

// padLines makes exactly n lines: blank ones added below, extra ones cut.
func padLines(ls []string, n int) []string {
	if len(ls) > n {
		return ls[:n]
	}
	for len(ls) < n {
		ls = append(ls, "")
	}
	return ls
}

// tabsLine: one tab per persona, numbered for alt+N, a dot on busy ones.
func (m *Model) tabsLine() string {
	var b strings.Builder
	for i, p := range m.personas {
		label := fmt.Sprintf(" %d %s ", i+1, p.p.Name)
		dot := "  "
		if p.busy() || len(p.queue) > 0 || m.subBusy(p.p.ID) {
			dot = m.th.busy.Render("●") + " "
		}
		if i == m.cur {
			b.WriteString(m.th.tabOn.Render(label))
		} else {
			b.WriteString(m.th.tabOff.Render(label))
		}
		b.WriteString(dot)
	}
	right := "F1 help"
	if m.sessID != "" {
		right = "session " + m.sessID + " · " + right
	}
	left := b.String()
	gap := m.w - ansi.StringWidth(left) - ansi.StringWidth(right) - 1
	if gap < 1 {
		return clip(left, m.w)
	}
	return left + strings.Repeat(" ", gap) + m.th.dim.Render(right)
}

// subBusy reports whether a persona has running sub-agents.
func (m *Model) subBusy(persona string) bool {
	for _, r := range m.team.rows {
		if r.running() && parentPersona(r.parent) == persona {
			return true
		}
	}
	return false
}

// statusLine is one line: persona • model • context bar • tool calls •
// anchor in N • checkpoint in M • compactions • tokens • $. Segments are
// dropped, least useful first, until it fits; it never wraps.
func (m *Model) statusLine() string {
	p := m.current()
	s := p.status
	md := m.mode()
	if m.app == nil { // the session still opens
		return m.styleStatus(" "+p.p.Name+" • mode "+string(md)+" • "+m.startModel.Name+" • opening the session… ", md)
	}
	model := m.app.Model.Name
	if info, err := m.app.PersonaModel(p.p.ID); err == nil {
		model = info.Name // before its first status: the persona's own model
	}
	if p.hasStatus && s.Model != "" {
		model = s.Model
	}
	threshold := m.threshold(p)
	type seg struct {
		text string
		drop int // higher goes first
	}
	segs := []seg{{p.p.Name, 0}, {"mode " + string(md), 0}, {model, 5}, {ctxBar(s.ContextTokens, threshold), 1}}
	if p.hasStatus {
		segs = append(segs, seg{plural(s.ToolCalls, "tool call"), 4},
			seg{fmt.Sprintf("anchor in %d", max(0, s.AnchorIn)), 7},
			seg{fmt.Sprintf("checkpoint in %d", max(0, s.CheckpointIn)), 8})
		if s.Compactions > 0 {
			segs = append(segs, seg{plural(s.Compactions, "compaction"), 6})
		}
		segs = append(segs, seg{fmt.Sprintf("↑%s ↓%s", fmtCount(s.Usage.PromptTokens), fmtCount(s.Usage.CompletionTokens)), 3})
		if s.HasPrices {
			segs = append(segs, seg{fmt.Sprintf("$%.4f", s.Cost), 2})
		} else {
			segs = append(segs, seg{"$—", 2}) // prices unknown for this endpoint: no guess
		}
	}
	if m.modelErr != nil {
		segs = append(segs, seg{"no model configured", 0})
	}
	if !m.app.Sandbox.Active {
		// Said once on stderr too; here for as long as it holds.
		segs = append(segs, seg{m.app.Sandbox.Short(), 0})
	}
	join := func() string {
		parts := make([]string, 0, len(segs))
		for _, x := range segs {
			parts = append(parts, x.text)
		}
		return " " + strings.Join(parts, " • ") + " "
	}
	line := join()
	for ansi.StringWidth(line) > m.w && len(segs) > 1 {
		worst := 0
		for i, x := range segs {
			if x.drop > segs[worst].drop {
				worst = i
			}
		}
		if segs[worst].drop == 0 {
			break
		}
		segs = append(segs[:worst], segs[worst+1:]...)
		line = join()
	}
	return m.styleStatus(line, md)
}

// styleStatus renders a status line, padded to the width, with its mode
// segment in the mode's colour.
func (m *Model) styleStatus(line string, md permission.Mode) string {
	line = clip(line, m.w)
	if pad := m.w - ansi.StringWidth(line); pad > 0 {
		line += strings.Repeat(" ", pad)
	}
	seg := "mode " + string(md)
	before, after, ok := strings.Cut(line, seg)
	if !ok {
		return m.th.status.Render(line)
	}
	return m.th.status.Render(before) + m.modeStyle(md).Render(seg) + m.th.status.Render(after)
}

// threshold is the context size at which p's conversation is summarized:
// from its last status (with the fixed cost the agent measured), else its
// model's formula without the fixed cost.
func (m *Model) threshold(p *personaState) int {
	if p.hasStatus && p.status.Threshold > 0 {
		return p.status.Threshold
	}
	if m.app == nil {
		return 0
	}
	if info, err := m.app.PersonaModel(p.p.ID); err == nil {
		if t := info.Threshold(0); t > 0 {
			return t
		}
	}
	return m.app.Model.Threshold(0)
}

// ctxBar is the context size against the summarization threshold.
func ctxBar(tokens, threshold int) string {
	const cells = 5
	filled := 0
	if threshold > 0 {
		filled = min(cells, (tokens*cells+threshold/2)/threshold)
	}
	return strings.Repeat("▰", filled) + strings.Repeat("▱", cells-filled) + " " + fmtCount(tokens) + "/" + fmtCount(threshold)
}

// infoLine sits between the chat and the input: the quit question,
// command completions, a one-off message, work in progress or key hints.
func (m *Model) infoLine() string {
	th := m.th
	switch {
	case m.quitAsk:
		return th.warn.Render("quit? running work will be cancelled — y or ctrl+c quits, any other key stays")
	case m.yoloAsk:
		return th.bad.Render(clip("switch to yolo? every command and edit runs without asking (protected paths still ask) — y switches, any other key stays", m.w))
	case m.flash != "":
		return th.warn.Render(clip(m.flash, m.w))
	}
	if c := m.completion(); c.open() || c.reading && (c.kind == compFile || c.kind == compPath) {
		return th.dim.Render(clip(m.compHint(), m.w))
	}
	p := m.current()
	if h := m.shellHint(); h != "" && !p.busy() {
		return th.warn.Render(clip(h, m.w))
	}
	var parts []string
	if p.busy() {
		what := map[string]string{opRun: "working", opSwitch: "switching", opCompact: "compacting", opLoad: "loading"}[p.op]
		s := th.busy.Render(spinnerFrames[m.anim%len(spinnerFrames)]) + " " + p.p.Name + " is " + what
		if p.shell != "" {
			s = th.busy.Render(spinnerFrames[m.anim%len(spinnerFrames)]) + " running ! " + clip(oneLine(p.shell), 40)
		}
		if p.op == opRun {
			s += " · " + fmtDur(m.now().Sub(p.started).Truncate(1e9)) + " · esc cancels"
		}
		parts = append(parts, s)
	}
	if n := len(p.queue); n > 0 {
		parts = append(parts, th.warn.Render(fmt.Sprintf("%d queued", n)))
	}
	if n := m.team.running(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d sub-agents running (ctrl+g)", n))
	}
	right := ""
	if note := m.inputScrollNote(); note != "" {
		right = th.dim.Render(note)
	}
	room := m.w - widthOf(right) - 2
	if right == "" {
		room = m.w
	}
	left := ""
	if len(parts) == 0 {
		// Whole hints only, as many as fit beside the note.
		keys := m.keys.ShortHelp()
		if !m.draft().empty() { // as the key does (input.go): tab completes in a draft
			keys[2] = brief(m.keys.NextPersona, "tab", "complete")
		}
		for n := len(keys); n > 0; n-- {
			if left = shortHelp(th, keys[:n], room); widthOf(left) <= room {
				break
			}
		}
	} else {
		left = clip(strings.Join(parts, th.dim.Render(" · ")), room)
	}
	if right == "" {
		return left
	}
	return left + strings.Repeat(" ", max(1, m.w-widthOf(left)-widthOf(right))) + right
}

// overlay draws box centred over base.
func (m *Model) overlay(base, box string) string {
	bw, bh := lipgloss.Size(box)
	x := max(0, (m.w-bw)/2)
	y := max(1, (m.h-bh)/2)
	c := lipgloss.NewCompositor(lipgloss.NewLayer(base), lipgloss.NewLayer(box).X(x).Y(y).Z(1))
	return c.Render()
}

func widthOf(s string) int { return ansi.StringWidth(s) }

// inputLines is the input box, cached: the textarea's View costs more than
// the whole transcript window, and it only changes with what it shows (the
// cursor is the terminal's, so blinking needs no redraw).
func (m *Model) inputLines() []string {
	in := &m.input
	key := fmt.Sprintf("%d|%d|%d|%d|%d|%t|%d|%s|%s", in.Width(), in.Height(), in.Line(), in.Column(), in.ScrollYOffset(), in.Focused(), m.gen, in.Placeholder, in.Value())
	if key != m.inKey || in.HasSelection() {
		m.inKey = key
		m.inLines = fitLines(padLines(strings.Split(in.View(), "\n"), in.Height()), m.w)
	}
	return m.inLines
}
