package agent

import (
	"encoding/json"

	"polly/agent/llm"
	"polly/memory/chat"
	"polly/memory/store"
	"polly/memory/tokens"
	"polly/memory/window"
)

// requestRecord is what rebuilds req exactly (store.RequestRecord), made
// from Polly's own request as handed to the client: the system prompt and
// tool set by hash (their texts stored once per session), each stored
// message by id with what replaced it when the context policy shortened
// it, every other message whole. out is the context req was built from
// (nil for a summarizer request); resp is its response, with what the
// client found as it encoded it (llm.Encoded). nil without a store.
func (a *Agent) requestRecord(kind string, req llm.Request, out *window.Output, resp llm.Response) *store.RequestRecord {
	if a.deps.Store == nil || len(req.Messages) == 0 {
		return nil
	}
	r := &store.RequestRecord{Kind: kind, Persona: a.persona.ID, Model: req.Model, Temperature: req.Temperature, MaxTokens: req.MaxTokens}
	recordSum(r, req.Messages, resp)
	msgs, skip := req.Messages, 0
	if msgs[0].Role == chat.System {
		r.SystemText, r.System = msgs[0].Content, a.textHash(msgs[0].Content)
		msgs, skip = msgs[1:], 1
	}
	if len(req.Tools) > 0 {
		r.ToolsText, r.Tools = a.toolsText(req.Tools)
		r.ToolCount = len(req.Tools)
	}
	// A text goes to the store with the first record that names it (its
	// hash is enough after that); storeBatch forgets them all when a batch
	// does not commit.
	if a.textsSaved == nil {
		a.textsSaved = map[string]bool{}
	}
	keep := func(hash, text string) string {
		if hash == "" || a.textsSaved[hash] {
			return ""
		}
		a.textsSaved[hash] = true
		return text
	}
	saveSystem, saveTools := keep(r.System, r.SystemText), keep(r.Tools, r.ToolsText)
	// The messages a main request shares with the last one from the start
	// (the client compared them as it encoded the body) are recorded as
	// the last record recorded them: only the step's new and changed
	// messages are looked up in the history. Without that (the first
	// request, a summarizer's, one never encoded) every message is.
	enc, shared, sharedEntries := resp.Encoded, 0, 0
	if kind == "main" && enc.Seq != 0 && enc.Seq == a.recordSeq+1 && a.recordPrev != nil && enc.Kept > skip {
		shared = min(enc.Kept-skip, len(msgs))
		r.Messages = a.recordPrev.Prefix(shared, len(msgs)-shared+16)
		sharedEntries = len(r.Messages)
	} else {
		// As many entries as the last record had, and room for a step's
		// more: one allocation, not a slice grown entry by entry.
		r.Messages = make(store.RecordedMessages, 0, a.recordEntries+16)
	}
	r.Messages = a.recordMessages(r.Messages, msgs[shared:], shared > 0)
	if kind == "main" {
		// Their JSON too: the shared entries' is the last record's, but
		// for the last of them, which the step's messages may continue.
		var err error
		if r.MessagesJSON, a.recordEnds, err = store.EncodeMessagesAfter(r.Messages, max(0, sharedEntries-1), a.recordJSON, a.recordEnds); err != nil {
			r.MessagesJSON, a.recordEnds = nil, nil // the store encodes them and reports the error
		}
		a.recordPrev, a.recordSeq, a.recordJSON = r.Messages, enc.Seq, r.MessagesJSON
	}
	a.recordEntries = len(r.Messages)
	w, _ := a.contextWindow()
	r.Window, r.Budget = w, a.budget()
	scale := func(n int) int {
		if q := a.calib.Ratio(); q > 0 {
			return int(float64(n)*q + 0.5)
		}
		return n
	}
	if out != nil {
		r.Threshold, r.Fixed = out.Threshold, scale(out.Fixed)
		sys := scale(out.Parts.System)
		memory := 0
		if req.Messages[0].Content == a.memText && len(a.memText) > 0 {
			memory = sys * a.memBytes / len(a.memText)
		}
		r.Tokens = store.Breakdown{System: sys - memory, Memory: memory, Tools: scale(out.Parts.Tools),
			Summary: scale(out.Parts.Summary), History: scale(out.Parts.History), Block: scale(out.Parts.Block)}
	} else {
		for i, m := range req.Messages {
			n := tokens.Message(a.counter, m)
			if i == 0 && m.Role == chat.System {
				r.Tokens.System += n
			} else {
				r.Tokens.History += n
			}
		}
		if r.ToolsText != "" {
			r.Tokens.Tools = tokens.Message(a.counter, chat.Message{Content: r.ToolsText})
		}
	}
	r.SystemText, r.ToolsText = saveSystem, saveTools
	return r
}

// recordMessages adds the entries of msgs to dst: each stored message by
// id with what replaced it when sent, every other message whole. The
// messages come from the history in its order, so one walk finds them;
// tail says they are the request's last ones, which the walk looks for
// from the end of the history.
func (a *Agent) recordMessages(dst store.RecordedMessages, msgs []chat.Message, tail bool) store.RecordedMessages {
	j := 0
	if tail {
		j = a.historyIndex(msgs)
	}
	for _, m := range msgs {
		s := (*chat.Message)(nil)
		if m.ID != 0 {
			for k := j; k < len(a.history); k++ {
				if a.history[k].ID == m.ID {
					s, j = &a.history[k], k+1
					break
				}
			}
		}
		if s == nil || s.Role != m.Role || s.ToolCallID != m.ToolCallID || len(s.ToolCalls) != len(m.ToolCalls) {
			whole := chat.Message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, ToolName: m.ToolName, Kind: m.Kind}
			dst = dst.Add(store.RecordedMessage{Message: &whole})
			continue
		}
		rm := store.RecordedMessage{ID: m.ID}
		switch {
		case m.Content == s.Content:
		case s.Output != nil && s.Output.Stub != "" && m.Content == s.Output.Stub:
			rm.Stub = true // the store has this text already
		default:
			c := m.Content
			rm.Content = &c
		}
		for k, tc := range m.ToolCalls {
			if tc.Arguments != s.ToolCalls[k].Arguments {
				if rm.Args == nil {
					rm.Args = map[string]string{}
				}
				rm.Args[tc.ID] = tc.Arguments
			}
		}
		dst = dst.Add(rm)
	}
	return dst
}

// historyIndex is where in the history the first stored message of msgs
// is, looked for from the end (0 when it is not there).
func (a *Agent) historyIndex(msgs []chat.Message) int {
	for _, m := range msgs {
		if m.ID == 0 {
			continue
		}
		for k := len(a.history) - 1; k >= 0; k-- {
			if a.history[k].ID == m.ID {
				return k
			}
		}
		return 0
	}
	return 0
}

// recordSum puts the wire sum of the messages sent on r: the client's,
// taken as it encoded them (resumed after the messages the last request
// shared), or without one (a failure before the body was built, another
// Streamer) a walk of them all.
func recordSum(r *store.RequestRecord, sent []chat.Message, resp llm.Response) {
	if r == nil {
		return
	}
	if r.Sum = resp.Encoded.Sum; r.Sum == "" {
		r.Sum = chat.WireSum(sent)
	}
}

// textHash hashes a system prompt, once per distinct prompt.
func (a *Agent) textHash(text string) string {
	if text != a.hashedText {
		a.hashedText, a.hashed = text, store.TextHash(text)
	}
	return a.hashed
}

// toolsText is the tool set as sent, as JSON, and its hash: built once
// per tool list (specs are rebuilt only when the tools change).
func (a *Agent) toolsText(specs []llm.ToolSpec) (string, string) {
	if len(a.toolsJSON) == 0 || !sameSpecs(a.toolsFor, specs) {
		b, err := json.Marshal(toolsWire(specs))
		if err != nil {
			return "", ""
		}
		a.toolsJSON, a.toolsHash, a.toolsFor = string(b), store.TextHash(string(b)), specs
	}
	return a.toolsJSON, a.toolsHash
}

func sameSpecs(a, b []llm.ToolSpec) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// wireTool is a tool as the chat-completions API takes it.
type wireTool struct {
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

// wireFunction is a tool's function definition on the wire.
type wireFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
}

// toolsWire is the tools array of a chat-completions request (a function
// without a parameters schema gets an empty object one, as llm sends it).
func toolsWire(specs []llm.ToolSpec) []wireTool {
	out := make([]wireTool, len(specs))
	for i, t := range specs {
		params := t.Parameters
		if params == nil {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		out[i] = wireTool{Type: "function", Function: wireFunction{Name: t.Name, Description: t.Description, Parameters: params}}
	}
	return out
}
