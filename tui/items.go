package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"polly/agent"
	"polly/memory/chat"
)

// kind is what a transcript item shows.
type kind int

const (
	kUser      kind = iota
	kAssistant      // Markdown, streamed or finished
	kReasoning      // provider reasoning, dimmed
	kTool           // one tool call
	kSub            // a sub-agent's live line
	kSummary        // a compaction receipt
	kAnchor         // a task anchor, one dim line
	kHandoff        // a handoff card received on a persona switch
	kNotice         // harness notices, retries, cancellations
	kError          // an error with what to do about it
	kSystem         // Polly's own messages: configuration, /cost, help hints
)

// item is one entry of a transcript with its rendered lines cached per
// width and theme: a finished message is rendered once, a streaming one at
// most once per frame (see transcript.frame).
type item struct {
	kind  kind
	text  string // source text: Markdown, plain text
	shown string // streaming items: the text as of the last frame
	level string // notices: "info" or "warn"
	hint  string // errors: what the user can do
	label string // user items: what is shown instead of text (/init's prompt, a custom command as typed, a draft's paste tokens)
	// grants: a user item from a custom command: its allowed-tools,
	// granted for that turn.
	grants []string
	// pastes: a user item's long pastes, shown as their tokens (label)
	// until open.
	pastes   []paste
	pasted   bool // label holds paste tokens: ctrl+x shows the text
	open     bool
	cut      bool // an assistant reply cancelled while it streamed
	selected bool // a user item with pastes, selected for ctrl+x
	gap      bool // a blank line above

	streaming bool
	queued    bool // a user message waiting for the running turn to end
	tool      *toolInfo
	sub       *subRow
	sum       *summaryInfo

	// render cache
	cacheW, cacheGen int
	cache            []string
	valid            bool
	md               mdRendering      // an assistant message's settled chunks, rendered once
	stream           *strings.Builder // text of a streaming item: appends without copying what came before
}

func (it *item) invalidate() { it.valid = false }

// toolInfo is a tool call's block.
type toolInfo struct {
	callID, name, brief string
	done, failed        bool
	dur                 time.Duration
	chars, lines        int
	execID              int64
	offloaded           bool
	exit                *int
	diff, preview       string
	expanded, selected  bool
	cancelled           bool
	live                string     // the end of what a running command printed so far
	command             string     // a run_command's command when it spans lines
	plan                []planStep // task_plan: the plan it stored
}

// planStep is one line of a task_plan checklist.
type planStep struct{ status, title string }

// expandedMax is the most lines an expanded block shows.
const expandedMax = 400

// liveMax is how much of a running command's output a block keeps: enough
// for its last lines.
const liveMax = 4 << 10

func (t *toolInfo) addLive(text string, skipped int) {
	if skipped > 0 && t.live != "" && !strings.HasSuffix(t.live, "\n") {
		t.live += "\n"
	}
	t.live += text
	if n := len(t.live); n > liveMax {
		cut := n - liveMax
		if i := strings.IndexByte(t.live[cut:], '\n'); i >= 0 {
			cut += i + 1
		}
		t.live = t.live[cut:]
	}
}

// liveLines are the last n lines of a running command's output, as a
// terminal would show them (a carriage return starts the line over).
func liveLines(s string, n int) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	for i, l := range ls {
		ls[i] = cleanText(lastState(l))
	}
	return ls
}

// lastState is a line as a terminal leaves it: a carriage return starts
// it over (progress bars, spinners), so only what followed the last one
// shows. A line ending in \r\n keeps its text.
func lastState(l string) string {
	l = strings.TrimRight(l, "\r")
	if j := strings.LastIndexByte(l, '\r'); j >= 0 {
		return l[j+1:]
	}
	return l
}

// collapseCR is text with each line at its last state (see lastState).
func collapseCR(s string) string {
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ls[i] = lastState(l)
	}
	return strings.Join(ls, "\n")
}

// commandOf is the command of a run_command call when it spans lines
// (shown as lines under its block), else "".
func commandOf(tool, args string) string {
	if tool != "run_command" {
		return ""
	}
	var a struct {
		Command string `json:"command"`
	}
	if json.Unmarshal([]byte(args), &a) != nil || !strings.Contains(strings.TrimSpace(a.Command), "\n") {
		return ""
	}
	return strings.TrimSpace(a.Command)
}

// parsePlan reads task_plan's result ("1. [IN PROGRESS] title" lines).
func parsePlan(out string) []planStep {
	var steps []planStep
	for _, l := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(l, ". [")
		if !ok {
			continue
		}
		status, title, ok := strings.Cut(rest, "] ")
		if !ok {
			continue
		}
		steps = append(steps, planStep{status: status, title: strings.TrimSpace(title)})
	}
	return steps
}

// firstErrorLine is what a failed call's block shows: the first line that
// names an error, else the first line of output, skipping the harness's
// "exit code: N" header.
func firstErrorLine(s string) string {
	var first string
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		low := strings.ToLower(t)
		if t == "" || strings.HasPrefix(low, "exit code:") {
			continue
		}
		if first == "" {
			first = t
		}
		for _, k := range []string{"error", "fail", "panic", "fatal", "denied", "not found", "no such", "cannot", "undefined", "timed out"} {
			if strings.Contains(low, k) {
				return t
			}
		}
	}
	if first == "" {
		return firstLine(s)
	}
	return first
}

// summaryInfo is a compaction, pending until SummaryFinished arrives.
type summaryInfo struct {
	started  agent.SummaryStarted
	finished *agent.SummaryFinished
}

// renderer draws items. It lives on the Bubble Tea loop (it owns the
// item caches) and gen changes with the theme so caches notice.
type renderer struct {
	th  theme
	md  *markdown
	gen int
	now func() time.Time
}

func newRenderer(th theme, gen int, now func() time.Time) *renderer {
	return &renderer{th: th, md: newMarkdown(th.mdStyle), gen: gen, now: now}
}

// lines returns an item's lines at width w, from the cache when valid.
// Every line is already cut to w: the screen never measures them again.
func (r *renderer) lines(it *item, w int) []string {
	if it.valid && it.cacheW == w && it.cacheGen == r.gen {
		return it.cache
	}
	var body []string
	if it.kind == kAssistant {
		// Chunk by chunk, each rendered once (markdown.go): while it
		// streams, a frame renders only the open chunk, and the finished
		// message only what had not settled.
		body = it.md.render(r.md, it.shownText(), w, it.gap, !it.streaming)
		if it.cut { // a reply cancelled while it streamed (kept, marked)
			body = append(slices.Clip(body), r.th.warn.Render(clip("  ✂ cut short: the reply stopped here when it was cancelled", w)))
		}
	} else {
		body = r.render(it, w)
		if it.gap {
			body = append([]string{""}, body...)
		}
		body = fitLines(body, w)
	}
	it.cache, it.cacheW, it.cacheGen, it.valid = body, w, r.gen, true
	return it.cache
}

func (r *renderer) render(it *item, w int) []string {
	th := r.th
	switch it.kind {
	case kUser:
		text := it.text
		if it.label != "" && !it.open {
			text = it.label
		}
		head, cut := headOf(text, expandedMax, expandedMax*w)
		ls := plainLines(head, max(1, w-2))
		if len(ls) > expandedMax {
			ls, cut = ls[:expandedMax], true
		}
		if cut {
			ls = append(ls, th.dim.Render("… "+plural(chat.CountLines(text), "line")+" in all, sent whole"))
		}
		out := prefixed(ls, th.user.Render("┃ "))
		if it.selected && len(out) > 0 {
			out[0] = th.selected.Render("▶ ") + strings.TrimPrefix(out[0], th.user.Render("┃ "))
		}
		if it.pasted {
			hint := "  pasted text collapsed: ctrl+x expands (alt+↑ selects)"
			if it.open {
				hint = "  ctrl+x collapses the pasted text"
			}
			out = append(out, th.dim.Render(clip(hint, w)))
		}
		if it.queued {
			out = append(out, th.dim.Render("  queued: sent when the running turn ends"))
		}
		return out
	case kAssistant:
		return r.md.lines(it.text, w)
	case kReasoning:
		ls := plainLines(strings.TrimSpace(it.shownText()), max(1, w-4))
		if !it.streaming {
			return []string{th.dim.Render("  · thought: " + clip(oneLine(it.text), max(10, w-14)))}
		}
		if len(ls) > 3 {
			ls = ls[len(ls)-3:]
		}
		return marked(ls, th.dim.Render("  · "), th.dim)
	case kTool:
		return r.toolLines(it.tool, w)
	case kSub:
		return r.subLines(it.sub, w)
	case kSummary:
		return r.summaryLines(it.sum, w)
	case kAnchor:
		return []string{th.dim.Render(clip("  ↪ "+oneLine(it.text), w))}
	case kHandoff:
		return marked(plainLines(it.text, max(1, w-4)), th.dim.Render("  ⇄ "), th.dim)
	case kNotice:
		st, mark := th.dim, "  · "
		if it.level == "warn" {
			st, mark = th.warn, "  ! "
		}
		return marked(plainLines(it.text, max(1, w-4)), st.Render(mark), st)
	case kError:
		out := marked(plainLines(it.text, max(1, w-4)), th.bad.Render("  ✗ "), th.bad)
		if it.hint != "" {
			out = append(out, prefixed(plainLines("what to do: "+it.hint, max(1, w-4)), "    ", th.warn)...)
		}
		return out
	case kSystem:
		return prefixed(plainLines(it.text, max(1, w-2)), "  ")
	}
	return nil
}

func (it *item) shownText() string {
	if it.streaming {
		return it.shown
	}
	return it.text
}

func (r *renderer) toolLines(t *toolInfo, w int) []string {
	th := r.th
	mark := "▸ "
	if t.expanded {
		mark = "▾ "
	}
	var meta []string
	switch {
	case !t.done:
		meta = append(meta, th.warn.Render("running…"))
	case t.cancelled:
		meta = append(meta, th.warn.Render("cancelled"))
	case t.failed:
		s := "✗"
		if t.exit != nil {
			s += fmt.Sprintf(" exit %d", *t.exit)
		}
		meta = append(meta, th.bad.Render(s))
	default:
		s := "✓"
		if t.exit != nil && *t.exit != 0 {
			s += fmt.Sprintf(" exit %d", *t.exit)
		}
		meta = append(meta, th.ok.Render(s))
	}
	if t.done {
		if t.dur > 0 {
			meta = append(meta, fmtDur(t.dur))
		}
		meta = append(meta, plural(t.lines, "line")+", "+fmtCount(t.chars)+" chars")
		if t.offloaded {
			meta = append(meta, th.warn.Render(fmt.Sprintf("#%d offloaded", t.execID)))
		}
	}
	// The brief gives way first: the status and sizes must stay visible.
	tail := th.dim.Render(" · ") + strings.Join(meta, th.dim.Render(" · "))
	room := w - 2 - widthOf(mark+t.name) - 1 - widthOf(tail)
	brief := t.brief
	if first, _, multi := strings.Cut(brief, "\n"); multi {
		brief = first + " …"
	}
	if first, _, _ := strings.Cut(t.command, "\n"); t.command != "" && t.name != "!" {
		brief = "command=" + first + " …" // the lines follow
	}
	head := th.accent.Render(mark+t.name) + " " + clip(cleanText(brief), max(room, 0))
	line := "  " + head + tail
	if t.selected {
		// One solid bar with a pointer: inner colours would break the
		// background into patches.
		plain := "▶ " + strings.TrimPrefix(ansi.Strip(ansi.Truncate(line, w, "…")), "  ")
		if pad := w - widthOf(plain); pad > 0 {
			plain += strings.Repeat(" ", pad)
		}
		line = th.selected.Render(plain)
	}
	out := []string{ansi.Truncate(line, w, "…")}
	if !t.done {
		for _, l := range liveLines(t.live, 4) {
			out = append(out, th.dim.Render("    │ ")+clip(l, max(1, w-6)))
		}
	}
	if t.command != "" { // a command of several lines, as lines
		ls := strings.Split(cleanText(t.command), "\n")
		if len(ls) > 8 {
			ls = append(ls[:7], "… "+plural(len(ls)-7, "more line"))
		}
		for i, l := range ls {
			mark := "    $ "
			if i > 0 {
				mark = "      "
			}
			out = append(out, th.dim.Render(clip(mark+l, w)))
		}
	}
	if t.failed && !t.cancelled && !t.expanded && t.preview != "" {
		out = append(out, th.bad.Render(clip("    "+cleanText(firstErrorLine(collapseCR(t.preview))), w)))
	}
	for _, st := range t.plan {
		mark, style := "○ ", th.dim
		switch st.status {
		case "DONE":
			mark, style = "✓ ", th.ok
		case "IN PROGRESS":
			mark, style = "▸ ", th.warn
		}
		out = append(out, "    "+style.Render(mark)+clip(cleanText(st.title), max(1, w-6)))
	}
	if t.diff != "" {
		d := r.diffLines(t.diff, w-4)
		if !t.expanded && len(d) > 12 {
			n := len(d) - 12
			d = append(d[:12], th.dim.Render("… "+plural(n, "more line")+" (ctrl+x expands)"))
		}
		out = append(out, prefixed(d, "    ")...)
	}
	if t.expanded && t.preview != "" {
		ls := plainLines(strings.TrimRight(collapseCR(t.preview), "\n"), max(1, w-6))
		if len(ls) > expandedMax {
			ls = append(ls[:expandedMax], "… "+plural(len(ls)-expandedMax, "more line")+" (ctrl+o browses whole outputs)")
		}
		out = append(out, prefixed(ls, th.dim.Render("    │ "), th.dim)...)
	}
	return out
}

func (r *renderer) subLines(s *subRow, w int) []string {
	th := r.th
	parts := []string{th.accent.Render("↳ " + s.personaName())}
	if s.running() {
		parts = append(parts, clip(oneLine(s.task), 40))
		if s.tool != "" {
			parts = append(parts, th.warn.Render(clip(strings.TrimSpace(s.tool+" "+s.brief), 40)))
		} else {
			parts = append(parts, th.dim.Render("thinking"))
		}
	} else {
		st := th.ok
		if s.status != "completed" {
			st = th.bad
		}
		parts = append(parts, st.Render(s.status))
	}
	parts = append(parts, fmtDur(s.elapsedAt(r.now())), plural(s.toolCalls, "tool call"),
		fmtCount(s.usage.PromptTokens+s.usage.CompletionTokens)+" tok")
	if s.cost > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f", s.cost))
	}
	out := []string{clip("  "+strings.Join(parts, th.dim.Render(" · ")), w)}
	if !s.running() && s.summary != "" {
		out = append(out, th.dim.Render(clip("    "+oneLine(s.summary), w)))
	}
	return out
}

func (r *renderer) summaryLines(s *summaryInfo, w int) []string {
	th := r.th
	if s.finished == nil {
		return []string{th.warn.Render(clip(fmt.Sprintf("  ⟲ compacting %s tokens (%s, %s)…",
			fmtCount(s.started.TokensBefore), s.started.Reason, plural(s.started.Messages, "message")), w))}
	}
	f := s.finished
	if !f.Accepted {
		why := strings.TrimPrefix(f.Why, "rejected: ")
		if why == "" {
			why = "the summary would not have made the context smaller"
		}
		return marked(plainLines("compaction skipped: "+why, max(1, w-4)), th.warn.Render("  ⟲ "), th.warn)
	}
	how := "model summary"
	if f.Heuristic {
		how = "heuristic summary (the model's summary failed)"
	}
	text := fmt.Sprintf("compacted: %s → %s tokens · %s replaced, %d kept · %s",
		fmtCount(f.TokensBefore), fmtCount(f.TokensAfter), plural(f.Replaced, "message"), f.Kept, how)
	if len(f.Added) > 0 {
		text += " · the check added: " + strings.Join(f.Added, ", ")
	}
	if f.Why != "" {
		text += " · " + f.Why
	}
	out := marked(plainLines(text, max(1, w-4)), th.accent.Render("  ⟲ "))
	if f.ArchivePath != "" {
		out = append(out, th.dim.Render(clip("    archive: "+f.ArchivePath, w)))
	}
	return out
}

// diffLines colours a unified diff: + green, - red, hunk headers cyan;
// lines longer than w are cut.
func (r *renderer) diffLines(d string, w int) []string { return r.diff(d, w, false) }

// diffLinesWrapped is diffLines with long lines wrapped (the rest under
// the first, after its +/-/space column), nothing cut: the permission
// dialog shows every character of an edit it asks about.
func (r *renderer) diffLinesWrapped(d string, w int) []string { return r.diff(d, w, true) }

func (r *renderer) diff(d string, w int, wrap bool) []string {
	th := r.th
	var out []string
	for _, l := range strings.Split(strings.TrimRight(d, "\n"), "\n") {
		l = strings.ReplaceAll(l, "\t", "    ")
		st := lipgloss.NewStyle()
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			st = th.dim
		case strings.HasPrefix(l, "@@"):
			st = th.diffHunk
		case strings.HasPrefix(l, "+"):
			st = th.diffAdd
		case strings.HasPrefix(l, "-"):
			st = th.diffDel
		}
		parts := []string{ansi.Truncate(l, max(1, w), "…")}
		if wrap && widthOf(l) > w && w > 2 {
			parts = strings.Split(ansi.Hardwrap(l, w-1, true), "\n")
			for i := 1; i < len(parts); i++ {
				parts[i] = " " + parts[i] // under the text, past the +/- column
			}
		}
		for _, p := range parts {
			out = append(out, st.Render(p))
		}
	}
	return out
}

// marked puts mark in front of the first line and as many spaces in front
// of the others, styling the lines with the optional style.
func marked(ls []string, mark string, style ...lipgloss.Style) []string {
	out := prefixed(ls, strings.Repeat(" ", widthOf(ansi.Strip(mark))), style...)
	if len(out) > 0 {
		out[0] = mark + strings.TrimPrefix(out[0], strings.Repeat(" ", widthOf(ansi.Strip(mark))))
	}
	return out
}

// prefixed puts prefix in front of every line, styling the lines with the
// optional style.
func prefixed(ls []string, prefix string, style ...lipgloss.Style) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		if len(style) > 0 {
			l = style[0].Render(l)
		}
		out[i] = prefix + l
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// firstLine is the first line that says something (not a lone "{").
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.IndexFunc(l, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(s)
}

// clip cuts s to w display columns with an ellipsis.
func clip(s string, w int) string {
	if w < 1 {
		return ""
	}
	return ansi.Truncate(s, w, "…")
}

func fmtCount(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func fmtDur(d time.Duration) string {
	d = d.Truncate(time.Millisecond) // as the store keeps it: live and resumed read alike
	switch {
	case d < time.Millisecond:
		return "<1ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// plural is "1 tool", "2 tools".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
