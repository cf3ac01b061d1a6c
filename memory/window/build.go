package window

import (
	"encoding/json"
	"fmt"
	"strings"
	"unsafe"

	"polly/memory/chat"
	"polly/memory/task"
	"polly/memory/tokens"
)

// Input is everything Build looks at.
type Input struct {
	System       string         // the assembled system prompt
	SystemTokens int            // its token count when the caller has it cached; 0: count here
	ToolTokens   int            // tokens of the tool schemas sent with the request
	History      []chat.Message // the live conversation, oldest first (no system message)
	Task         *task.State    // may be nil
	Settings     Settings
	Budget       int            // tokens the context may fill (see Budget); 0 when unknown
	Counter      tokens.Counter // nil: characters/4
	Scale        float64        // calibration actual/estimate; 0 means 1
	Recovery     bool           // the provider just refused the context as too long
	// Reuse is an earlier Output.Messages the caller no longer uses: Build
	// writes the new context over its array instead of allocating one per
	// request (a 40k-token history is ~130 KB of message headers). nil:
	// allocate.
	Reuse []chat.Message
	// Checked remembers the tool-call arguments earlier builds found to be
	// valid JSON; nil: check them all.
	Checked *ArgsMemo
}

// Output is the context to send and what the caller must do about it.
type Output struct {
	Messages  []chat.Message // system first, ready to send
	Tokens    int            // estimated prompt tokens, calibrated
	Whole     int            // the same before the hard fallback cut anything
	Estimate  int            // the same before calibration (to calibrate against usage)
	Threshold int            // summarization threshold for this model and fixed cost
	Hard      int            // hard-fallback limit for this model
	Fixed     int            // the fixed cost: system prompt, tool schemas and task block (estimated)
	Room      int            // the history's room: the threshold less the fixed cost (calibrated)
	Parts     Parts          // the estimate by part
	Block     *chat.Message  // the live task block appended at the end (nil before the first tool call)
	Summarize bool           // over the threshold: summarize, then Build again
	Fallback  bool           // the hard fallback cut the context
	Shrunk    int            // stale outputs (and arguments) shrunk to their preview line
	Faded     int            // failed attempts collapsed
	Repaired  int            // messages added or dropped to keep tool calls paired
	Cut       int            // outputs cut by context-length recovery
}

// Parts is a context's estimated tokens by part, before calibration.
type Parts struct {
	System, Tools, Summary, History, Block int
}

// Build turns a conversation into the context for the next request.
func Build(in Input) Output {
	s := in.Settings.WithDefaults()
	c := in.Counter
	if c == nil {
		c = tokens.Approx{}
	}

	// One copy of the history, with the system prompt in front: every
	// rewrite below works on this copy, never on the caller's messages.
	buf := in.Reuse[:0]
	if need := len(in.History) + 2; cap(buf) < need {
		// Room to grow: the history gains a few messages per step.
		buf = make([]chat.Message, 0, need+need/4)
	}
	buf = append(buf, chat.Message{})
	var live liveFacts
	buf, live = appendLive(buf, in.History)
	h := buf[1:]
	var out Output
	var block chat.Message
	if in.Task != nil && blockDue(in.Task) {
		block = TaskBlock(in.Task, s)
		// Counted at ~4 characters per token: the block changes with
		// every tool call, the real tokenizer would cost milliseconds per
		// request, and the calibration corrects the whole estimate anyway.
		block.Tokens = tokens.Message(tokens.Approx{}, block)
		out.Block = &block
	}
	sys := chat.Message{Role: chat.System, Content: in.System}
	sys.Tokens = in.SystemTokens
	if sys.Tokens <= 0 {
		sys.Tokens = tokens.Message(c, sys)
	}
	scale := func(n int) int {
		if in.Scale <= 0 {
			return n
		}
		return int(float64(n)*in.Scale + 0.5)
	}
	// The system prompt, the tool schemas and the block are sent whole
	// with every request: no summary can shrink them.
	out.Fixed = sys.Tokens + in.ToolTokens + block.Tokens
	out.Threshold, out.Hard = s.Threshold(in.Budget, scale(out.Fixed)), s.Hard(in.Budget)
	if in.Budget <= 0 {
		out.Threshold, out.Hard = s.SummarizeAt, s.HardLimit
	}
	out.Room = max(0, out.Threshold-scale(out.Fixed))

	// Each pass walks the whole history; one with nothing to do is
	// skipped on what the copy above saw.
	if live.failed {
		h, out.Faded = fadeFailures(h)
	}
	if live.plan {
		h = supersedePlans(h)
	}
	// A skill loaded by the current task stays whole: its instructions
	// are what the model works by (issue 28).
	hold := heldFrom(h, in.Task)
	h, out.Shrunk = shrinkStale(h, s.StaleAfter, hold)
	if live.longestArgs > min(s.OffloadChars, s.HugeArgs) {
		var args int
		h, args = shrinkArgs(h, s.StaleAfter, s.OffloadChars, s.HugeArgs)
		out.Shrunk += args
	}
	if in.Budget > 0 {
		// On a small window the recent outputs alone can fill what the
		// budget has beside the fixed cost: they shrink, oldest first,
		// before any summary is asked for.
		var n int
		h, n = shrinkForRoom(h, int(float64(max(0, in.Budget-scale(out.Fixed)))*s.OutputShare), s.OffloadChars, hold, c)
		out.Shrunk += n
	}
	if in.Recovery {
		h, out.Cut = recoveryCut(h, s.RecoveryKeep, s.RecoveryCut, hold, c)
	}
	h, out.Repaired = Repair(h)
	in.Checked.begin()
	h = sanitizeArguments(h, in.Checked)
	for i := range h {
		if h[i].Tokens <= 0 { // rewritten above: counted once here
			h[i].Tokens = tokens.Message(c, h[i])
		}
	}

	out.Estimate = out.Fixed + tokens.Messages(c, h)
	out.Tokens = scale(out.Estimate)
	out.Whole = out.Tokens
	// Over the threshold a summary is due, also when the hard fallback
	// must cut this context: the summary keeps what the cut would drop.
	out.Summarize = out.Tokens > out.Threshold

	if out.Tokens > out.Hard {
		h = hardFallback(h, s.HardKeep, func(ms []chat.Message) int { return scale(out.Fixed + tokens.Messages(c, ms)) }, out.Hard, c)
		out.Fallback = true
		out.Estimate = out.Fixed + tokens.Messages(c, h)
		out.Tokens = scale(out.Estimate)
	}
	out.Parts = Parts{System: sys.Tokens, Tools: in.ToolTokens, Block: block.Tokens}
	for i := range h {
		if h[i].Tokens <= 0 { // clipped by the hard fallback
			h[i].Tokens = tokens.Message(c, h[i])
		}
		if h[i].Kind == chat.KindSummary {
			out.Parts.Summary += h[i].Tokens
		} else {
			out.Parts.History += h[i].Tokens
		}
	}

	// h usually still lives in buf after the system slot, where it is
	// already in place; after a repair or fallback it is copied in.
	buf[0] = sys
	if len(h) > 0 && len(buf) > 1 && &h[0] == &buf[1] {
		out.Messages = buf[:1+len(h)]
	} else {
		out.Messages = append(buf[:1], h...)
	}
	if out.Block != nil {
		out.Messages = append(out.Messages, block)
	}
	// A reused array may hold older, longer contexts past the end: drop
	// them, so they do not keep cut or summarized messages alive.
	clear(out.Messages[len(out.Messages):cap(out.Messages)])
	return out
}

// blockDue: the task block is sent once the task has made a tool call.
func blockDue(st *task.State) bool {
	return st.Active() && st.ToolCalls > 0
}

// liveFacts is what appendLive saw that decides whether a pass has work.
type liveFacts struct {
	failed      bool // a failed tool result (fadeFailures)
	plan        bool // a task_plan call (supersedePlans)
	longestArgs int  // the longest tool-call arguments (shrinkArgs)
}

// appendLive appends h to dst without the task-state copies older
// versions stored in the history (anchors, [ACTIVE TASK] blocks): the live
// block replaces them all.
func appendLive(dst, h []chat.Message) ([]chat.Message, liveFacts) {
	var f liveFacts
	for i := range h {
		m := &h[i]
		switch m.Kind {
		case chat.KindAnchor, chat.KindActiveTask, chat.KindTaskBlock:
			continue
		}
		if m.Output != nil && m.Output.Failed {
			f.failed = true
		}
		for k := range m.ToolCalls {
			f.plan = f.plan || m.ToolCalls[k].Name == PlanTool
			f.longestArgs = max(f.longestArgs, len(m.ToolCalls[k].Arguments))
		}
		dst = append(dst, *m)
	}
	return dst, f
}

func callsByID(h []chat.Message) map[string]chat.ToolCall {
	calls := make(map[string]chat.ToolCall)
	for i := range h {
		for _, tc := range h[i].ToolCalls {
			calls[tc.ID] = tc
		}
	}
	return calls
}

// fadeFailures collapses a failed tool result to one line once a later call
// of the same tool succeeded, so the model stops repeating the mistake
// (PRODUCT §3.9). Long arguments of the failed call are compacted too.
func fadeFailures(h []chat.Message) ([]chat.Message, int) {
	faded := 0
	fadedIDs := map[string]bool{}
	for i := range h {
		m := &h[i] // a pointer: a Message is 144 bytes, and this runs over the whole history
		if m.Role != chat.Tool || m.Output == nil || !m.Output.Failed || m.Kind != chat.KindNormal {
			continue
		}
		for j := i + 1; j < len(h); j++ {
			n := &h[j]
			if n.Role != chat.Tool || n.ToolName != m.ToolName || n.Output == nil {
				continue
			}
			if !n.Output.Failed {
				line := fmt.Sprintf("[faded: this %s call failed (%s); a later %s call succeeded — do not repeat it]",
					m.ToolName, firstLineOf(m.Content, 160), m.ToolName)
				if len(line) < len(m.Content) {
					h[i].Content = line
					h[i].Tokens = tokens.Approx{}.Count(line) + 6
					fadedIDs[m.ToolCallID] = true
					faded++
				}
			}
			break
		}
	}
	if len(fadedIDs) == 0 {
		return h, 0
	}
	for i := range h {
		if len(h[i].ToolCalls) == 0 {
			continue
		}
		changed := false
		tcs := make([]chat.ToolCall, len(h[i].ToolCalls))
		copy(tcs, h[i].ToolCalls)
		for k, tc := range tcs {
			if fadedIDs[tc.ID] && len(tc.Arguments) > 300 {
				tcs[k].Arguments = compactArgs(tc.Arguments, 120)
				changed = true
			}
		}
		if changed {
			h[i].ToolCalls = tcs
			h[i].Tokens = 0
		}
	}
	return h, faded
}

// shrinkStale replaces tool outputs more than keep messages from the end
// with their one-line stub (PRODUCT §3.5). The loop stores each output's
// stub with it, so this costs no allocation per message.
func shrinkStale(h []chat.Message, keep, hold int) ([]chat.Message, int) {
	n := 0
	var calls map[string]chat.ToolCall // only for messages stored without a stub
	for i := 0; i < len(h)-keep; i++ {
		m := &h[i]
		if m.Role != chat.Tool || m.Output == nil || m.Output.ExecID == 0 || m.Kind != chat.KindNormal || held(h, i, hold) {
			continue
		}
		if toStub(h, i, &calls) {
			n++
		}
	}
	return h, n
}

// toStub shrinks the tool output h[i] to its one-line stub (made when it
// was stored, or here with the calls of h, looked up once into *calls); it
// reports whether the stub is shorter and replaced the output.
func toStub(h []chat.Message, i int, calls *map[string]chat.ToolCall) bool {
	m := &h[i]
	stub := m.Output.Stub
	if stub == "" {
		if *calls == nil {
			*calls = callsByID(h)
		}
		stub = Stub(*m, (*calls)[m.ToolCallID])
	}
	if len(stub) >= len(m.Content) {
		return false
	}
	h[i].Content = stub
	h[i].Tokens = len(stub)/4 + 6
	return true
}

// shrinkArgs shrinks tool-call arguments the way outputs shrink: those
// longer than limit in a call more than keep messages from the end, and
// those longer than huge anywhere (a 10 MB write_file would otherwise ride
// along with every request). The stored history keeps them whole.
func shrinkArgs(h []chat.Message, keep, limit, huge int) ([]chat.Message, int) {
	n := 0
	for i := range h {
		if len(h[i].ToolCalls) == 0 {
			continue
		}
		stale := i < len(h)-keep
		var tcs []chat.ToolCall
		for k, tc := range h[i].ToolCalls {
			if len(tc.Arguments) <= huge && (!stale || len(tc.Arguments) <= limit) {
				continue
			}
			if tcs == nil {
				tcs = make([]chat.ToolCall, len(h[i].ToolCalls))
				copy(tcs, h[i].ToolCalls)
			}
			tcs[k].Arguments = compactArgs(tc.Arguments, 200)
			n++
		}
		if tcs != nil {
			h[i].ToolCalls = tcs
			h[i].Tokens = 0
		}
	}
	return h, n
}

// shrinkForRoom keeps tool outputs, and call arguments longer than
// argLimit, whole from the newest back while together they hold at most
// limit tokens; older ones shrink to their stub (outputs) or their start
// (arguments), as stale ones do. The results of the newest call and the
// newest arguments are always kept: the model must see what it just got.
func shrinkForRoom(h []chat.Message, limit, argLimit, hold int, c tokens.Counter) ([]chat.Message, int) {
	newest := -1
	for i := len(h) - 1; i >= 0; i-- {
		if len(h[i].ToolCalls) > 0 {
			newest = i
			break
		}
	}
	if newest < 0 {
		return h, 0
	}
	used, n := 0, 0
	var calls map[string]chat.ToolCall
	for i := len(h) - 1; i >= 0; i-- {
		m := &h[i]
		switch {
		case m.Role == chat.Tool && m.Output != nil && m.Output.ExecID != 0 && m.Kind == chat.KindNormal:
			if m.Tokens <= 0 {
				h[i].Tokens = tokens.Message(c, *m)
			}
			if i > newest || used+m.Tokens <= limit || held(h, i, hold) {
				used += m.Tokens // a held skill takes its room: the others shrink first
				continue
			}
			if toStub(h, i, &calls) {
				n++
			}
		case len(m.ToolCalls) > 0:
			long := 0
			for _, tc := range m.ToolCalls {
				if len(tc.Arguments) > argLimit {
					long += len(tc.Arguments) / 4
				}
			}
			if long == 0 {
				continue
			}
			if i == newest || used+long <= limit {
				used += long
				continue
			}
			tcs := make([]chat.ToolCall, len(m.ToolCalls))
			copy(tcs, m.ToolCalls)
			for k, tc := range tcs {
				if len(tc.Arguments) > argLimit {
					tcs[k].Arguments = compactArgs(tc.Arguments, 200)
					n++
				}
			}
			h[i].ToolCalls = tcs
			h[i].Tokens = 0
		}
	}
	return h, n
}

// PlanTool is the tool that sets the plan.
const PlanTool = "task_plan"

// SupersededPlan is what an older task_plan result becomes in the context.
const SupersededPlan = "[plan superseded by a later task_plan call — the task block at the end shows the live plan]"

// supersedePlans shrinks every task_plan call but the newest, and its
// result, to a line: an older plan's statuses are stale by definition
// (a step it shows in progress may be done), and the task block carries
// the live plan. The stored history keeps them whole.
func supersedePlans(h []chat.Message) []chat.Message {
	last := ""
	for i := len(h) - 1; i >= 0 && last == ""; i-- {
		for _, tc := range h[i].ToolCalls {
			if tc.Name == PlanTool {
				last = tc.ID
			}
		}
	}
	if last == "" {
		return h
	}
	for i := range h {
		m := &h[i]
		if m.Role == chat.Tool && m.ToolName == PlanTool && m.ToolCallID != last && m.Content != SupersededPlan {
			h[i].Content = SupersededPlan
			h[i].Tokens = len(SupersededPlan)/4 + 6
			continue
		}
		var tcs []chat.ToolCall
		for k, tc := range m.ToolCalls {
			if tc.Name != PlanTool || tc.ID == last || tc.Arguments == supersededArgs {
				continue
			}
			if tcs == nil {
				tcs = make([]chat.ToolCall, len(m.ToolCalls))
				copy(tcs, m.ToolCalls)
			}
			tcs[k].Arguments = supersededArgs
		}
		if tcs != nil {
			h[i].ToolCalls = tcs
			h[i].Tokens = 0
		}
	}
	return h
}

// SupersedePlans is supersedePlans on a copy of ms, for what is shown to
// the summarizer: it must not read an older plan's statuses either.
func SupersedePlans(ms []chat.Message) []chat.Message {
	return supersedePlans(append([]chat.Message(nil), ms...))
}

// supersededArgs replaces the arguments of an older task_plan call.
const supersededArgs = `{"steps":"(superseded by a later task_plan call)"}`

// recoveryCut keeps the newest keep tool outputs whole and cuts the others
// to cut characters, and the arguments of all but the newest calls too
// (PRODUCT §3.8).
func recoveryCut(h []chat.Message, keep, cut, hold int, c tokens.Counter) ([]chat.Message, int) {
	n, seen, calls := 0, 0, 0
	for i := len(h) - 1; i >= 0; i-- {
		if len(h[i].ToolCalls) > 0 {
			calls++
			if calls > keep {
				var cutOne bool
				if h[i], cutOne = cutArgs(h[i], cut); cutOne {
					n++
				}
			}
		}
		if h[i].Role != chat.Tool {
			continue
		}
		seen++
		if seen <= keep || len(h[i].Content) <= cut || held(h, i, hold) {
			continue
		}
		note := "\n[cut to save context after the provider refused it as too long"
		if h[i].Output != nil && h[i].Output.ExecID != 0 {
			note += fmt.Sprintf("; read_tool_output(id=%d) shows the whole output", h[i].Output.ExecID)
		}
		h[i].Content = clipRunes(h[i].Content, cut) + note + "]"
		h[i].Tokens = tokens.Message(c, h[i])
		n++
	}
	return h, n
}

// hardFallback keeps the summary messages and only the last keep messages
// (then 10), and finally clips the largest contents, so the context fits
// under limit whatever happened (PRODUCT §3.7). The task block is added
// after it by Build, so it is never cut.
func hardFallback(h []chat.Message, keep int, count func([]chat.Message) int, limit int, c tokens.Counter) []chat.Message {
	var pinned []chat.Message
	for _, m := range h {
		if m.Kind == chat.KindSummary {
			pinned = append(pinned, m)
		}
	}
	build := func(k int) []chat.Message {
		start := SplitPoint(h, k)
		var out []chat.Message
		out = append(out, pinned...)
		for _, m := range h[start:] {
			if m.Kind == chat.KindSummary {
				continue
			}
			out = append(out, m)
		}
		out, _ = Repair(out)
		return out
	}
	out := build(keep)
	if count(out) > limit && keep > 10 {
		out = build(10)
	}
	for limit > 0 && count(out) > limit {
		// Clip the biggest message (content or call arguments) by half
		// until it fits.
		big := 0
		for i := range out {
			if size(out[i]) > size(out[big]) {
				big = i
			}
		}
		if size(out[big]) < 200 {
			break
		}
		if len(out[big].Content) >= size(out[big])/2 {
			out[big].Content = clipRunes(out[big].Content, len(out[big].Content)/2) + "\n[cut by the hard context limit]"
		} else {
			out[big], _ = cutArgs(out[big], 0)
		}
		out[big].Tokens = tokens.Message(c, out[big])
	}
	return out
}

// size is a message's characters, content and call arguments.
func size(m chat.Message) int {
	n := len(m.Content)
	for _, tc := range m.ToolCalls {
		n += len(tc.Arguments)
	}
	return n
}

// cutArgs compacts the arguments of m's calls longer than over (0: the
// longest one, by half at least); it reports whether anything changed.
func cutArgs(m chat.Message, over int) (chat.Message, bool) {
	changed := false
	tcs := make([]chat.ToolCall, len(m.ToolCalls))
	copy(tcs, m.ToolCalls)
	for k, tc := range tcs {
		if len(tc.Arguments) > max(over, 300) {
			if c := compactArgs(tc.Arguments, min(200, max(over, 100))); len(c) < len(tc.Arguments) {
				tcs[k].Arguments = c
				changed = true
			}
		}
	}
	if changed {
		m.ToolCalls = tcs
		m.Tokens = 0
	}
	return m, changed
}

// SplitPoint returns the index where the last keep messages start, moved
// earlier so the kept part never begins with a tool result (a cut never
// splits an assistant message from its tool results).
func SplitPoint(h []chat.Message, keep int) int {
	start := len(h) - keep
	if start <= 0 {
		return 0
	}
	for start > 0 && h[start].Role == chat.Tool {
		start--
	}
	return start
}

// sanitizeArguments makes every tool-call argument string valid JSON on the
// wire: some servers (llama.cpp, vLLM templates) parse them and fail on the
// model's own malformed JSON. The stored history keeps the original.
func sanitizeArguments(h []chat.Message, checked *ArgsMemo) []chat.Message {
	for i := range h {
		if len(h[i].ToolCalls) == 0 {
			continue
		}
		var tcs []chat.ToolCall
		for k, tc := range h[i].ToolCalls {
			if tc.Arguments == "" || checked.validJSON(tc.Arguments) {
				continue
			}
			if tcs == nil {
				tcs = make([]chat.ToolCall, len(h[i].ToolCalls))
				copy(tcs, h[i].ToolCalls)
			}
			b, _ := json.Marshal(map[string]string{"_invalid_json": clipRunes(tc.Arguments, 200)})
			tcs[k].Arguments = string(b)
		}
		if tcs != nil {
			h[i].ToolCalls = tcs
			h[i].Tokens = 0
		}
	}
	return h
}

// ArgsMemo remembers tool-call argument strings found to be valid JSON,
// so Build does not re-validate a long history's arguments on every
// request: a map hit hashes the string, far cheaper than parsing it. One
// per conversation; the zero value is ready; not for concurrent use.
type ArgsMemo struct {
	valid map[string]struct{}
	used  int // entries the current build asked for
	// The strings found valid by the last build and by this one, in the
	// order asked: the history's arguments come again in the same order
	// as the same strings, which pointer and length recognise without
	// hashing them (sound because last holds them: no other string can
	// have their bytes' address while they live).
	last, this []string
}

// begin starts a build: when most remembered strings are no longer asked
// for (a summary dropped their messages), it forgets them all.
func (m *ArgsMemo) begin() {
	if m == nil {
		return
	}
	if len(m.valid) > 2*m.used+256 {
		m.valid = nil
	}
	m.used = 0
	clear(m.last) // keep no dropped message's arguments alive
	m.last, m.this = m.this, m.last[:0]
}

func (m *ArgsMemo) validJSON(s string) bool {
	if m == nil {
		return json.Valid([]byte(s))
	}
	if k := len(m.this); k < len(m.last) && len(m.last[k]) == len(s) && unsafe.StringData(m.last[k]) == unsafe.StringData(s) {
		m.this = append(m.this, s)
		m.used++
		return true
	}
	if _, ok := m.valid[s]; !ok {
		if !json.Valid([]byte(s)) {
			return false
		}
		if m.valid == nil {
			m.valid = map[string]struct{}{}
		}
		m.valid[s] = struct{}{}
	}
	m.this = append(m.this, s)
	m.used++
	return true
}

// compactArgs shortens long string values inside a JSON object.
func compactArgs(args string, max int) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		b, _ := json.Marshal(map[string]string{"_invalid_json": clipRunes(args, max)})
		return string(b)
	}
	for k, v := range m {
		if s, ok := v.(string); ok && len(s) > max {
			m[k] = clipRunes(s, max) + fmt.Sprintf("…[%s chars in all; cut from the context — the call ran with the whole value]", commas(len(s)))
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return string(b)
}

func firstLineOf(s string, max int) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			s = s[:i]
			break
		}
	}
	return clipRunes(s, max)
}

// heldFrom is the index of h from which loaded skills (Output.Keep) are held
// whole: from the current task's request on, or from the start when a
// summary has replaced the request; len(h) when there is no task.
func heldFrom(h []chat.Message, t *task.State) int {
	if t == nil || !t.Active() {
		return len(h)
	}
	req := strings.TrimSpace(t.OriginalRequest)
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == chat.User && h[i].Kind == chat.KindNormal && strings.TrimSpace(h[i].Content) == req {
			return i
		}
	}
	return 0
}

// held reports whether h[i] is a loaded skill the current task holds whole.
func held(h []chat.Message, i, from int) bool {
	return i >= from && h[i].Output != nil && h[i].Output.Keep
}
