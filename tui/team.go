package tui

import (
	"strings"
	"time"

	"polly/agent"
	"polly/memory/chat"
	"polly/memory/store"
)

// subRow is one sub-agent run (delegate_task): its live figures, and its
// own transcript built from the events it emits (Header.Parent set).
type subRow struct {
	key       string // child session + agent id
	agentID   string
	persona   string // persona id of the sub-agent
	name      string // its display name
	parent    string // parent agent id
	callID    string // the parent's delegate_task call
	task      string
	model     string // the model it talks to
	tool      string // current tool, "" while the model thinks
	brief     string
	status    string // "running", then completed, failed, cancelled, max_turns
	started   time.Time
	seen      time.Time // when elapsed was last reported
	elapsed   time.Duration
	toolCalls int
	usage     chat.Usage
	cost      float64
	summary   string
	session   string // the child session (its full transcript)

	tr    *transcript
	items []*item // the nested blocks showing this row in parent transcripts
}

func (s *subRow) running() bool { return s.status == "running" }

func (s *subRow) personaName() string {
	if s.name != "" {
		return s.name
	}
	if s.persona != "" {
		return s.persona
	}
	return s.agentID
}

// elapsedAt is the run time, ticking between progress reports.
func (s *subRow) elapsedAt(now time.Time) time.Duration {
	if !s.running() || s.seen.IsZero() {
		return s.elapsed
	}
	return s.elapsed + now.Sub(s.seen)
}

func (s *subRow) touch() {
	for _, it := range s.items {
		it.invalidate()
	}
}

// team holds every sub-agent run of the session, in start order.
type team struct {
	rows  []*subRow
	byKey map[string]*subRow
}

func newTeam() *team { return &team{byKey: map[string]*subRow{}} }

// rowKey identifies a sub-agent run by its parent and its agent id
// ("coder", "coder#2"): the start and finish events carry the parent's
// session, the child's own events its child session, but all carry these
// two. A start event for a key whose run has ended begins a new row (a
// persona delegated to again).
func rowKey(h agent.Header) string { return h.Parent + "/" + h.Agent }

func (t *team) row(h agent.Header, now time.Time) (*subRow, bool) {
	k := rowKey(h)
	if r, ok := t.byKey[k]; ok {
		return r, false
	}
	return t.start(h, now), true
}

// start adds a row for a run that begins now.
func (t *team) start(h agent.Header, now time.Time) *subRow {
	r := &subRow{key: rowKey(h), agentID: h.Agent, persona: h.Persona, parent: h.Parent, status: "running", started: now, seen: now, tr: newTranscript()}
	t.rows = append(t.rows, r)
	t.byKey[r.key] = r
	return r
}

func (t *team) running() int {
	n := 0
	for _, r := range t.rows {
		if r.running() {
			n++
		}
	}
	return n
}

// parentPersona maps a parent agent id ("default", "coder#2") to its persona.
func parentPersona(agentID string) string {
	if i := strings.IndexByte(agentID, '#'); i >= 0 {
		return agentID[:i]
	}
	return agentID
}

// restore adds rows for sub-agent runs stored in a resumed session (rows
// already known, from this process, are kept as they are).
func (t *team) restore(kids []storedChild, names map[string]string) {
	for _, k := range kids {
		key := "stored/" + k.sum.ID
		if r, ok := t.byKey[key]; ok && r.tr == nil { // a row a transcript made (adopt)
			r.tr = fromHistory(k.history, k.recs, nil)
			continue
		}
		if _, ok := t.byKey[key]; ok || t.hasSession(k.sum.ID) {
			continue
		}
		status := string(k.sum.Status)
		switch k.sum.Status {
		case store.StatusDone:
			status = "completed"
		case store.StatusActive:
			status = "interrupted" // it was running when Polly stopped
		}
		calls := 0
		for _, m := range k.history {
			if m.Role == chat.Tool {
				calls++
			}
		}
		r := &subRow{key: key, agentID: k.sum.Persona, persona: k.sum.Persona, name: names[k.sum.Persona], task: k.sum.Title,
			status: status, started: k.sum.CreatedAt, elapsed: k.sum.UpdatedAt.Sub(k.sum.CreatedAt), toolCalls: calls,
			usage: chat.Usage{PromptTokens: k.sum.PromptTokens, CompletionTokens: k.sum.CompletionTokens}, session: k.sum.ID,
			tr: fromHistory(k.history, k.recs, nil)}
		t.rows = append(t.rows, r)
		t.byKey[key] = r
	}
}

// delegated gives a finished run the duration of the delegate_task call
// that ran it: what its block shows, live as when resumed (the store
// keeps the call's duration).
func (t *team) delegated(callID string, d time.Duration) {
	for _, r := range t.rows {
		if r.callID == callID && callID != "" && !r.running() {
			r.elapsed = d
			r.touch()
		}
	}
}

// adopt takes the rows a resumed transcript made from its delegate_task
// results (the blocks it shows); restore then gives them their
// transcripts.
func (t *team) adopt(rows []*subRow, names map[string]string) {
	for _, r := range rows {
		if _, ok := t.byKey[r.key]; ok || t.hasSession(r.session) {
			continue
		}
		r.name = names[r.persona]
		t.rows = append(t.rows, r)
		t.byKey[r.key] = r
	}
}

func (t *team) hasSession(id string) bool {
	for _, r := range t.rows {
		if r.session == id {
			return true
		}
	}
	return false
}
