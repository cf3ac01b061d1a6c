package tui

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"polly/agent"
	"polly/memory/chat"
	"polly/memory/store"
)

// transcript is one conversation as the chat shows it: a persona's, or a
// sub-agent's. Drawing is windowed: only the items on screen are rendered
// (from their caches), so the cost of a frame does not grow with the
// length of the conversation — bubbles' viewport re-scans its whole
// content on every SetContent, which a streamed token cannot afford.
type transcript struct {
	items []*item
	calls map[string]*item // tool blocks by call id
	text  *item            // the assistant message streaming now
	think *item            // the reasoning streaming now

	// Scrolling. follow: the end is at the bottom of the window (new text
	// stays visible). Otherwise the window starts off lines into items[top].
	follow   bool
	top, off int

	sel int // index of the selected tool block; -1: none (toggles act on the last)

	unseen  bool    // something arrived while scrolled up: the "↓ new output" marker
	retries []*item // retry notes of the current request, removed once it succeeds

	subs []*subRow // a resumed transcript's sub-agent runs, for the team (team.adopt)
}

// hasConversation: anything beyond start-up notices and a handoff card
// (the first screen shows who is on screen until then).
func (t *transcript) hasConversation() bool {
	for _, it := range t.items {
		if it.kind != kNotice && it.kind != kHandoff {
			return true
		}
	}
	return false
}

func newTranscript() *transcript {
	return &transcript{calls: map[string]*item{}, follow: true, sel: -1}
}

// add appends an item, deciding the blank line above it.
func (t *transcript) add(it *item) *item {
	if n := len(t.items); n > 0 {
		prev := t.items[n-1].kind
		compact := func(k kind) bool {
			return k == kTool || k == kAnchor || k == kNotice || k == kSub || k == kReasoning
		}
		it.gap = !(compact(it.kind) && compact(prev))
	}
	t.items = append(t.items, it)
	return it
}

// view returns the h lines of the window at width w.
func (t *transcript) view(r *renderer, w, h int) []string {
	if h <= 0 {
		return nil
	}
	if t.follow {
		// Filled from the bottom, copying only the lines on screen.
		out := make([]string, h)
		n := h
		for i := len(t.items) - 1; i >= 0 && n > 0; i-- {
			ls := r.lines(t.items[i], w)
			k := min(n, len(ls))
			copy(out[n-k:n], ls[len(ls)-k:])
			n -= k
		}
		return out[n:]
	}
	out := make([]string, 0, h+t.off)
	for i := t.top; i < len(t.items) && len(out) < h+t.off; i++ {
		out = append(out, r.lines(t.items[i], w)...)
	}
	out = out[min(t.off, len(out)):]
	if len(out) > h {
		out = out[:h]
	}
	return out
}

// bottomAnchor is where the window starts when it follows the end.
func (t *transcript) bottomAnchor(r *renderer, w, h int) (top, off int, scrollable bool) {
	n := 0
	for i := len(t.items) - 1; i >= 0; i-- {
		l := len(r.lines(t.items[i], w))
		n += l
		if n >= h {
			return i, n - h, n > h || i > 0
		}
	}
	return 0, 0, false
}

func (t *transcript) scrollUp(r *renderer, w, h, n int) {
	if t.follow {
		top, off, ok := t.bottomAnchor(r, w, h)
		if !ok {
			return
		}
		t.top, t.off, t.follow = top, off, false
	}
	t.off -= n
	for t.off < 0 && t.top > 0 {
		t.top--
		t.off += len(r.lines(t.items[t.top], w))
	}
	t.off = max(t.off, 0)
}

func (t *transcript) scrollDown(r *renderer, w, h, n int) {
	if t.follow {
		return
	}
	t.off += n
	for t.top < len(t.items)-1 && t.off >= len(r.lines(t.items[t.top], w)) {
		t.off -= len(r.lines(t.items[t.top], w))
		t.top++
	}
	// Back at the end: follow it again.
	rest := -t.off
	for i := t.top; i < len(t.items) && rest <= h; i++ {
		rest += len(r.lines(t.items[i], w))
	}
	if rest <= h {
		t.follow, t.unseen = true, false
	}
}

func (t *transcript) toEnd() { t.follow, t.unseen = true, false }

// toTop shows the first line.
func (t *transcript) toTop() { t.follow, t.top, t.off = false, 0, 0 }

// frame publishes what streamed since the last frame: the only place a
// streaming item's rendered text changes, so rendering is throttled to the
// frame rate whatever the delta rate.
func (t *transcript) frame() {
	for _, it := range []*item{t.text, t.think} {
		if it != nil && it.shown != it.text {
			it.shown = it.text
			it.invalidate()
		}
	}
}

// apply adds one agent event to the transcript. It reports whether a frame
// is needed to show streamed text.
func (t *transcript) apply(e agent.Event) (needFrame bool) {
	if !t.follow {
		switch e.(type) {
		case agent.Usage, agent.StatusUpdate, agent.CheckpointWritten, agent.OutputOffloaded:
		default:
			t.unseen = true
		}
	}
	switch e.(type) {
	case agent.TextDelta, agent.ReasoningDelta, agent.MessageDone, agent.ToolStarted:
		// The provider answered: the retry notes have served their purpose.
		for _, it := range t.retries {
			t.remove(it)
		}
		t.retries = nil
	case agent.ErrorEvent, agent.Done:
		t.retries = nil // the notes stay: they explain the failure
	}
	switch ev := e.(type) {
	case agent.TextDelta:
		if t.text == nil {
			t.endThink()
			t.text = t.add(&item{kind: kAssistant, streaming: true, stream: &strings.Builder{}})
		}
		t.text.stream.WriteString(ev.Text)
		t.text.text = t.text.stream.String()
		return true
	case agent.ReasoningDelta:
		if t.think == nil {
			t.think = t.add(&item{kind: kReasoning, streaming: true, stream: &strings.Builder{}})
		}
		t.think.stream.WriteString(ev.Text)
		t.think.text = t.think.stream.String()
		return true
	case agent.MessageDone:
		t.endThink()
		content := ev.Message.Content
		if t.text != nil {
			t.text.text = content
			t.endText()
		} else if strings.TrimSpace(content) != "" {
			t.add(&item{kind: kAssistant, text: content})
		}
	case agent.ToolStarted:
		t.endStreams()
		ti := &toolInfo{callID: ev.CallID, name: ev.Tool, brief: ev.Brief, command: commandOf(ev.Tool, ev.Args)}
		if ev.ByUser { // a ! command: its output shows
			ti.name, ti.expanded = "!", true
		}
		it := t.add(&item{kind: kTool, tool: ti})
		if ev.CallID != "" {
			t.calls[ev.CallID] = it
		}
	case agent.ToolOutput:
		if it := t.calls[ev.CallID]; it != nil && !it.tool.done {
			it.tool.addLive(ev.Text, ev.Skipped)
			it.invalidate()
		}
	case agent.ToolFinished:
		it := t.calls[ev.CallID]
		if it == nil {
			it = t.add(&item{kind: kTool, tool: &toolInfo{callID: ev.CallID, name: ev.Tool, brief: ev.Brief}})
		}
		ti := it.tool
		ti.done, ti.failed, ti.dur = true, ev.IsError, ev.Duration
		ti.chars, ti.lines, ti.execID, ti.offloaded = ev.OutputChars, ev.OutputLines, ev.ExecID, ev.Offloaded
		ti.exit, ti.diff, ti.preview = ev.ExitCode, ev.Diff, ev.Preview
		ti.cancelled, ti.live = ev.Status == "interrupted", ""
		if ev.Tool == "task_plan" && !ev.IsError {
			ti.plan = parsePlan(ev.Preview)
		}
		it.invalidate()
	case agent.Retrying:
		if ev.Discard { // the reply starts over: what streamed is void
			for _, it := range []*item{t.text, t.think} {
				if it != nil {
					t.remove(it)
				}
			}
			t.text, t.think = nil, nil
		}
		t.retries = append(t.retries, t.add(&item{kind: kNotice, level: "warn", text: retryText(ev)}))
	case agent.Notice:
		t.add(&item{kind: kNotice, level: ev.Level, text: ev.Text})
	case agent.HookRan:
		// Failed and timed-out hooks arrive as warnings (Notice) too.
		if ev.Outcome == "ok" || ev.Outcome == "blocked" {
			t.add(&item{kind: kNotice, level: "info", text: hookLine(ev)})
		}
	case agent.ErrorEvent:
		t.endStreams()
		msg := ev.Message
		if ev.Kind != "" && ev.Kind != "unknown" {
			msg = ev.Kind + ": " + msg
		}
		t.add(&item{kind: kError, text: msg, hint: ev.Hint})
	case agent.Done:
		if ev.Reason == "cancelled" && t.text != nil {
			t.text.cut = true // kept, as the store keeps it (agent.PartialMark)
		}
		t.endStreams()
		switch ev.Reason {
		case "cancelled":
			t.add(&item{kind: kNotice, level: "warn", text: cancelledNote})
		case "max_turns":
			t.add(&item{kind: kNotice, level: "warn", text: "stopped after " + plural(ev.Turns, "turn") + " without a final answer (max_turns); send a message to go on"})
		}
	case agent.AnchorInjected:
		t.add(&item{kind: kAnchor, text: fmt.Sprintf("anchor #%d after %s: %s", ev.Number, plural(ev.ToolCalls, "tool call"), anchorGist(ev.Text))})
	case agent.SummaryStarted:
		t.add(&item{kind: kSummary, sum: &summaryInfo{started: ev}})
	case agent.SummaryFinished:
		// The receipt gives the reason: a notice that said it just before
		// goes (one line per reason).
		for i := len(t.items) - 1; i >= max(0, len(t.items)-8) && ev.Why != ""; i-- {
			if it := t.items[i]; it.kind == kNotice && strings.HasPrefix(it.text, strings.TrimPrefix(ev.Why, "rejected: ")) {
				t.remove(it)
				break
			}
		}
		for i := len(t.items) - 1; i >= 0; i-- {
			if it := t.items[i]; it.kind == kSummary && it.sum.finished == nil {
				it.sum.finished = &ev
				it.invalidate()
				return false
			}
		}
		t.add(&item{kind: kSummary, sum: &summaryInfo{finished: &ev}})
	case agent.FallbackUsed:
		t.add(&item{kind: kNotice, level: "warn", text: fmt.Sprintf("context over the hard limit (%s of %s tokens): %s", fmtCount(ev.Tokens), fmtCount(ev.Hard), ev.Detail)})
	}
	return false
}

func (t *transcript) endText() {
	if t.text != nil {
		t.text.streaming = false
		t.text.shown, t.text.stream = "", nil // its rendered chunks stay: the finished text renders only the rest
		t.text.invalidate()
		if strings.TrimSpace(t.text.text) == "" {
			t.remove(t.text)
		}
		t.text = nil
	}
}

func (t *transcript) endThink() {
	if t.think != nil {
		t.think.streaming, t.think.stream = false, nil
		t.think.invalidate()
		t.think = nil
	}
}

func (t *transcript) endStreams() {
	t.endThink()
	t.endText()
}

func (t *transcript) remove(it *item) {
	for i := len(t.items) - 1; i >= 0; i-- {
		if t.items[i] == it {
			t.items = append(t.items[:i], t.items[i+1:]...)
			if t.top >= len(t.items) {
				t.top, t.off = max(0, len(t.items)-1), 0
			}
			return
		}
	}
}

// toggle expands or collapses the selected block, or the last one: a
// tool call, or a message with pasted text.
func (t *transcript) toggle() bool {
	i := t.sel
	if i < 0 || i >= len(t.items) || !t.items[i].expandable() {
		i = t.lastExpandable(len(t.items))
	}
	if i < 0 {
		return false
	}
	it := t.items[i]
	if it.tool != nil {
		it.tool.expanded = !it.tool.expanded
	} else {
		it.open = !it.open
	}
	it.invalidate()
	return true
}

// selectTool moves the selection to the previous (dir < 0) or next
// expandable block.
func (t *transcript) selectTool(dir int) {
	cur := t.sel
	if cur >= 0 && cur < len(t.items) && t.items[cur].expandable() {
		t.items[cur].setSelected(false)
	} else {
		cur = len(t.items)
	}
	next := -1
	if dir < 0 {
		next = t.lastExpandable(cur)
	} else {
		for i := cur + 1; i < len(t.items); i++ {
			if t.items[i].expandable() {
				next = i
				break
			}
		}
	}
	t.sel = next
	if next >= 0 {
		t.items[next].setSelected(true)
	}
}

func (t *transcript) lastExpandable(before int) int {
	for i := min(before, len(t.items)) - 1; i >= 0; i-- {
		if t.items[i].expandable() {
			return i
		}
	}
	return -1
}

// expandable: a tool block, or a message whose pasted text is collapsed.
func (it *item) expandable() bool {
	return it.kind == kTool && it.tool != nil || it.kind == kUser && it.pasted
}

func (it *item) setSelected(on bool) {
	if it.tool != nil {
		it.tool.selected = on
	} else {
		it.selected = on
	}
	it.invalidate()
}

func retryText(ev agent.Retrying) string {
	what := "provider error"
	low := strings.ToLower(ev.Reason)
	switch {
	case strings.Contains(low, "rate") || strings.Contains(low, "429"):
		what = "rate limited"
	case strings.Contains(low, "timeout") || strings.Contains(low, "idle"):
		what = "the provider went quiet"
	case strings.Contains(low, "connect") || strings.Contains(low, "network") || strings.Contains(low, "refused"):
		what = "network error"
	}
	return fmt.Sprintf("%s, retrying in %s (attempt %d): %s", what, fmtDur(ev.Wait), ev.Attempt+1, clip(oneLine(ev.Reason), 120))
}

// firstContentLine is the first line with text, skipping a "[HEADER]" line.
func firstContentLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]") {
			continue
		}
		if l = strings.TrimSpace(strings.Trim(l, "#*")); l != "" {
			return l
		}
	}
	return ""
}

// anchorGist is what an anchor's one-liner shows: the current plan step,
// else the original request.
func anchorGist(s string) string {
	lines := strings.Split(s, "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "Current step:") {
			return strings.TrimSpace(l)
		}
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "Original request:") && i+1 < len(lines) {
			return "request: " + strings.TrimSpace(lines[i+1])
		}
	}
	return firstContentLine(s)
}

// fromHistory rebuilds a transcript from stored messages (a resumed
// session) as it looked live: user messages as typed (their labels),
// notes as notes, a cancelled reply's partial text marked, and each tool
// call with its status, exit code, duration and diff from recs (the
// store's records of the calls; nil shows none), followed by the answer
// the user gave if it asked (asks: the session's permission decisions,
// each taken once; nil: none).
func fromHistory(msgs []chat.Message, recs map[int64]store.ToolRecord, asks *[]store.Decision) *transcript {
	t := newTranscript()
	var shell *item                       // the ! command waiting for its output message
	args := map[string]string{}           // tool call arguments by call id
	pending := map[string]chat.ToolCall{} // calls whose result has not come yet
	cancelled := func() { t.add(&item{kind: kNotice, level: "warn", text: cancelledNote}) }
	for i, m := range msgs {
		switch {
		case m.Kind == chat.KindShell && strings.HasPrefix(m.Content, agent.ShellPrefix):
			cmd := strings.TrimPrefix(m.Content, agent.ShellPrefix)
			args, _ := json.Marshal(map[string]string{"command": cmd})
			shell = t.add(&item{kind: kTool, tool: &toolInfo{name: "!", brief: cmd, expanded: true, command: commandOf("run_command", string(args))}})
		case m.Kind == chat.KindShell:
			if shell == nil {
				shell = t.add(&item{kind: kTool, tool: &toolInfo{name: "!", expanded: true}})
			}
			_, preview, _ := strings.Cut(m.Content, "\n")
			finishTool(shell.tool, m, preview, recs)
			shell = nil
		case m.Kind == chat.KindAnchor:
			t.add(&item{kind: kAnchor, text: "anchor: " + anchorGist(m.Content)})
		case m.Kind == chat.KindHandoff:
			t.add(&item{kind: kHandoff, text: handoffText(handoffFrom(m.Content), m.Content, handoffSent)})
		case m.Kind == chat.KindSummary:
			t.add(&item{kind: kNotice, text: fmt.Sprintf("earlier messages were compacted into a summary (%s chars)", fmtCount(len(m.Content)))})
		case m.Kind == chat.KindActiveTask || m.Kind == chat.KindResume:
			// harness context for the model; the anchor line says enough
		case m.Kind == chat.KindPartial:
			t.add(&item{kind: kAssistant, text: strings.TrimSuffix(m.Content, agent.PartialMark), cut: true})
			cancelled()
		case m.Role == chat.User && m.Kind == chat.KindNote:
			t.add(&item{kind: kNotice, text: noteText(m.Content)})
		case m.Role == chat.User:
			it := t.add(&item{kind: kUser, text: m.Content, label: m.Label})
			if it.label == "" {
				it.label = commandLabel(m.Content)
			}
			it.pasted = pasteToken.MatchString(it.label)
		case m.Role == chat.Assistant:
			if strings.TrimSpace(m.Content) != "" {
				t.add(&item{kind: kAssistant, text: m.Content})
			}
			// A call's block appears when it runs (its result), as live:
			// after the blocks and answers of the calls before it.
			for _, tc := range m.ToolCalls {
				pending[tc.ID] = tc
				args[tc.ID] = tc.Arguments
			}
		case m.Role == chat.Tool:
			it := t.calls[m.ToolCallID]
			if it == nil {
				ti := &toolInfo{callID: m.ToolCallID, name: m.ToolName}
				if tc, ok := pending[m.ToolCallID]; ok {
					ti.brief, ti.command = tc.Brief(), commandOf(tc.Name, tc.Arguments)
				}
				it = t.add(&item{kind: kTool, tool: ti})
				t.calls[m.ToolCallID] = it
			}
			finishTool(it.tool, m, m.Content, recs)
			if note := takeAnswer(asks, it.tool); note != "" {
				t.add(&item{kind: kNotice, text: note})
			}
			if r := storedSub(m, args[m.ToolCallID], it.tool.dur); r != nil {
				r.items = []*item{t.add(&item{kind: kSub, sub: r})}
				t.subs = append(t.subs, r)
			}
			// Live, a cancel ends with a note after the reply's calls.
			if it.tool.cancelled && (i+1 == len(msgs) || msgs[i+1].Role != chat.Tool) {
				cancelled()
			}
		}
	}
	return t
}

// cancelledNote follows a turn the user cancelled.
const cancelledNote = "cancelled; the session is saved"

// pasteToken is a long paste's token in a label.
var pasteToken = regexp.MustCompile(`\[pasted [^\]]+ #\d+\]`)

// finishTool fills a stored call's block as ToolFinished did live.
func finishTool(ti *toolInfo, m chat.Message, preview string, recs map[int64]store.ToolRecord) {
	ti.done, ti.preview = true, preview
	if m.ToolName == "task_plan" {
		ti.plan = parsePlan(m.Content)
	}
	o := m.Output
	if o == nil {
		ti.chars, ti.lines = len([]rune(m.Content)), chat.CountLines(m.Content)
		return
	}
	ti.failed, ti.chars, ti.lines, ti.execID, ti.offloaded = o.Failed, o.Chars, o.Lines, o.ExecID, o.Offloaded
	if r, ok := recs[o.ExecID]; ok && o.ExecID != 0 {
		// Stored in whole milliseconds: a call that took less shows
		// "<1ms", as it did live.
		ti.dur, ti.exit, ti.diff = max(r.Duration, time.Nanosecond), r.ExitCode, r.Diff
		ti.cancelled = r.Status == store.ExecInterrupted
	}
}

// takeAnswer is the note of the user's answer to a stored call's
// question (see answerNote), taken from asks: the first decision the
// user made about this tool and target. "" when the call did not ask.
func takeAnswer(asks *[]store.Decision, ti *toolInfo) string {
	if asks == nil {
		return ""
	}
	_, target, _ := strings.Cut(ti.brief, "=")
	for i, d := range *asks {
		if d.Tool != ti.name || target == "" || !strings.Contains(d.Target, target) && !strings.Contains(target, d.Target) {
			continue
		}
		var what string
		switch {
		case strings.HasPrefix(d.Reason, "approved once"):
			what = "allowed once"
		case strings.HasPrefix(d.Reason, "approved for this session") && !strings.Contains(d.Reason, "earlier"):
			what = "allowed for this session"
		case strings.HasPrefix(d.Reason, "the user denied"):
			what = "denied"
			if _, r, ok := strings.Cut(d.Reason, "): "); ok {
				what += ": " + r
			}
		default:
			continue
		}
		if strings.Contains(d.Reason, " with network") && !strings.HasPrefix(what, "denied") {
			what += " with network"
		}
		*asks = append((*asks)[:i], (*asks)[i+1:]...)
		return ti.name + " " + what
	}
	return ""
}

// storedSub is the sub-agent run a stored delegate_task result reports,
// as its block showed it live (nil for another tool, or a result that is
// not one: a denied or cancelled call).
func storedSub(m chat.Message, callArgs string, dur time.Duration) *subRow {
	if m.ToolName != "delegate_task" {
		return nil
	}
	var res agent.DelegateResult
	if json.Unmarshal([]byte(m.Content), &res) != nil || res.Transcript == "" {
		return nil
	}
	var a struct {
		Task string `json:"task"`
	}
	_ = json.Unmarshal([]byte(callArgs), &a)
	return &subRow{key: "stored/" + res.Transcript, agentID: res.Agent, persona: res.Persona, task: a.Task,
		status: res.Status, elapsed: dur, toolCalls: res.ToolCalls, usage: res.Usage, cost: res.Cost,
		summary: res.Summary, session: res.Transcript}
}

// noteText is a harness note to the model as the transcript shows it.
func noteText(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "[NOTE from Polly, not the user: ")
	return strings.TrimSuffix(s, "]")
}

// execIDs are the tool executions msgs name.
func execIDs(msgs []chat.Message) []int64 {
	var ids []int64
	for _, m := range msgs {
		if m.Output != nil && m.Output.ExecID != 0 {
			ids = append(ids, m.Output.ExecID)
		}
	}
	return ids
}
