package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"polly/agent"
	"polly/agent/app"
	"polly/memory/chat"
	"polly/memory/store"
)

// Messages that end work started in Cmds.
type (
	runDoneMsg struct {
		mark    uint64 // bridge pushes when Send returned
		sess    *agent.Session
		persona string
		out     agent.Outcome
		err     error
	}
	switchDoneMsg struct {
		mark     uint64
		sess     *agent.Session
		from, to string
		err      error
	}
	compactDoneMsg struct {
		mark    uint64
		sess    *agent.Session
		persona string
		ok      bool
		err     error
	}
	sessionLoadedMsg struct {
		sess     *agent.Session
		history  map[string][]chat.Message
		statuses map[string]agent.Status
		children []storedChild // sub-agent runs of a resumed session
		recs     map[int64]store.ToolRecord
		asks     []store.Decision // the session's permission decisions, for the answers' notes
		err      error
	}
	statusMsg struct {
		persona string
		status  agent.Status
		err     error
	}
	costMsg struct {
		totals store.UsageTotals
		err    error
	}
)

// doneMsg ends work whose events must be applied first (see bridge.mark).
type doneMsg interface{ markOf() uint64 }

func (m runDoneMsg) markOf() uint64     { return m.mark }
func (m switchDoneMsg) markOf() uint64  { return m.mark }
func (m compactDoneMsg) markOf() uint64 { return m.mark }

// finishDone handles a doneMsg whose events are all applied.
func (m *Model) finishDone(msg doneMsg) tea.Cmd {
	switch msg := msg.(type) {
	case runDoneMsg:
		return m.runDone(msg)
	case switchDoneMsg:
		return m.switchDone(msg)
	case compactDoneMsg:
		return m.compactDone(msg)
	case shellDoneMsg:
		return m.shellDone(msg)
	}
	return nil
}

// events applies a batch, then finishes the work it was holding back.
func (m *Model) events(msg eventsMsg) tea.Cmd {
	cmds := []tea.Cmd{m.applyBatch(msg.items)}
	m.applied = max(m.applied, msg.upTo)
	for len(m.deferred) > 0 && m.deferred[0].markOf() <= m.applied {
		d := m.deferred[0]
		m.deferred = m.deferred[1:]
		cmds = append(cmds, m.finishDone(d))
	}
	return tea.Batch(cmds...)
}

// done finishes msg now, or once the events before its mark are applied.
func (m *Model) done(msg doneMsg) tea.Cmd {
	if msg.markOf() > m.applied || len(m.deferred) > 0 {
		m.deferred = append(m.deferred, msg)
		return nil
	}
	return m.finishDone(msg)
}

// applyBatch applies events from the bridge in order.
func (m *Model) applyBatch(batch []any) tea.Cmd {
	var cmds []tea.Cmd
	for _, x := range batch {
		switch v := x.(type) {
		case agent.Event:
			cmds = append(cmds, m.applyEvent(v))
		case askMsg:
			cmds = append(cmds, m.perm.add(v, m.askerName(v.req)), m.announce("Polly: "+m.askerName(v.req)+" asks for your permission", m.notifyAfter))
		case askCancelMsg:
			cmds = append(cmds, m.perm.drop(v.id))
		}
	}
	return tea.Batch(cmds...)
}

// applyEvent routes one agent event: sub-agent events to the team, the
// rest to the persona that emitted it.
func (m *Model) applyEvent(e agent.Event) tea.Cmd {
	h := e.Head()
	switch ev := e.(type) {
	case agent.SubAgentStarted:
		m.subStarted(ev)
		return m.armAnim()
	case agent.SubAgentProgress:
		m.subProgress(ev)
		return nil
	case agent.SubAgentFinished:
		m.subFinished(ev)
		return nil
	}
	if h.Parent != "" {
		r, _ := m.team.row(h, m.now())
		if r.tr.apply(e) {
			return m.armFrame()
		}
		return nil
	}
	if h.Session != "" && h.Session != "memory" {
		m.sessID = h.Session
	}
	p := m.persona(h.Persona)
	if p == nil {
		p = m.current()
	}
	switch ev := e.(type) {
	case agent.StatusUpdate:
		p.status, p.hasStatus = ev.Status, true
		return nil
	case agent.ToolFinished:
		if ev.Tool == "delegate_task" {
			m.team.delegated(ev.CallID, ev.Duration)
		}
	case agent.CheckpointWritten:
		p.checkpoint, p.hasCheckpoint = ev, true
		return nil
	case agent.Done:
		p.sawDone = true
	case agent.PersonaSwitched:
		if to := m.persona(ev.To); to != nil && ev.Card != "" {
			from := ev.From
			if fp := m.persona(ev.From); fp != nil {
				from = fp.p.Name
			}
			m.receiveHandoff(to, from, ev.Card)
		}
		return nil
	}
	if p.tr.apply(e) {
		return m.armFrame()
	}
	return nil
}

func (m *Model) subStarted(ev agent.SubAgentStarted) {
	r, fresh := m.team.row(ev.Header, m.now())
	if !fresh && !r.running() {
		r, fresh = m.team.start(ev.Header, m.now()), true
	}
	r.callID, r.task, r.session, r.status, r.model = ev.CallID, ev.Task, ev.ChildSession, "running", ev.Model
	if p, ok := m.app.Personas.Find(r.persona); ok {
		r.name = p.Name
	}
	if len(r.items) > 0 {
		r.touch()
		return
	}
	parent := m.persona(parentPersona(ev.Parent))
	if parent == nil {
		parent = m.current()
	}
	r.items = append(r.items, parent.tr.add(&item{kind: kSub, sub: r}))
}

func (m *Model) subProgress(ev agent.SubAgentProgress) {
	r, _ := m.team.row(ev.Header, m.now())
	r.tool, r.brief, r.elapsed, r.seen = ev.Tool, ev.Brief, ev.Elapsed, m.now()
	r.toolCalls, r.usage, r.cost = ev.ToolCalls, ev.Usage, ev.Cost
	r.touch()
}

func (m *Model) subFinished(ev agent.SubAgentFinished) {
	r, _ := m.team.row(ev.Header, m.now())
	r.status, r.summary, r.elapsed, r.tool, r.brief = ev.Status, ev.Summary, ev.Elapsed, "", ""
	r.toolCalls, r.usage, r.cost = ev.ToolCalls, ev.Usage, ev.Cost
	if ev.ChildSession != "" {
		r.session = ev.ChildSession
	}
	if r.status == "" {
		r.status = "completed"
	}
	r.tr.endStreams()
	r.touch()
}

// submit handles Enter: a slash command, or a message for the current
// persona (queued while it is busy).
func (m *Model) submit(text string) tea.Cmd { return m.submitDraft(draft{text: text}) }

// submitDraft sends a draft: its pastes go whole, the transcript shows
// them collapsed as their tokens (ctrl+x expands).
func (m *Model) submitDraft(d draft) tea.Cmd {
	text := d.full()
	if cmd, ok := shellCommand(text); ok {
		return m.runShell(d, cmd)
	}
	if cmd, ok := m.command(text); ok {
		return cmd
	}
	if m.modelErr != nil {
		m.flash = "sending is disabled: no model is configured (the message at the top says how); sessions and memory still work"
		m.setDraft(d)
		return nil
	}
	m.remember(d)
	p := m.current()
	p.tr.toEnd()
	it := p.tr.add(&item{kind: kUser, text: text})
	if len(d.pastes) > 0 {
		it.label, it.pastes, it.pasted = d.text, d.pastes, true
	}
	if p.busy() {
		it.queued = true
		p.queue = append(p.queue, it)
		return nil
	}
	return m.startRun(p, it)
}

// startRun sends a user item to a persona in a Cmd. The Cmd is the only
// goroutine that touches the persona's agent until runDoneMsg.
func (m *Model) startRun(p *personaState, it *item) tea.Cmd {
	ctx, cancel := context.WithCancel(m.ctx)
	p.op, p.cancel, p.started, p.sawDone = opRun, cancel, m.now(), false
	it.queued = false
	it.invalidate()
	if c := p.handoff; c != nil { // the card goes with this message
		c.text = strings.Replace(c.text, handoffPending, handoffSent, 1)
		c.invalidate()
		p.handoff = nil
	}
	m.lastTalked = p.p.ID
	sess, id, text, b := m.sess, p.p.ID, it.text, m.bridge
	ctx = agent.WithGrants(ctx, it.grants)
	ctx = agent.WithLabel(ctx, it.label) // a resumed transcript shows it as typed
	run := m.runs.work(func() tea.Msg {
		defer cancel()
		out, err := sess.Send(ctx, id, text)
		return runDoneMsg{mark: b.mark(), sess: sess, persona: id, out: out, err: err}
	})
	return tea.Batch(run, m.armAnim())
}

func (m *Model) runDone(msg runDoneMsg) tea.Cmd {
	p := m.persona(msg.persona)
	if p == nil || msg.sess != m.sess {
		return nil
	}
	p.op, p.cancel = "", nil
	p.tr.endStreams()
	if m.flash == "cancelling "+p.p.Name+"…" {
		m.flash = ""
	}
	if id := m.sess.ID(); id != "" {
		m.sessID = id
	}
	if msg.err != nil && !p.sawDone && !errors.Is(msg.err, context.Canceled) {
		// Send failed before the agent ran (no Done event): say so here.
		p.tr.add(&item{kind: kError, text: msg.err.Error()})
	}
	done := m.announce("Polly: "+p.p.Name+" finished", m.now().Sub(p.started))
	return tea.Batch(m.flushModels(), m.next(p), done)
}

// next starts the persona's next queued message once it is idle.
func (m *Model) next(p *personaState) tea.Cmd {
	if p.busy() || len(p.queue) == 0 || m.modelErr != nil {
		return nil
	}
	it := p.queue[0]
	p.queue = p.queue[1:]
	return m.startRun(p, it)
}

// selectPersona shows persona i. Between runs it also switches the
// session (Session.Switch): the persona the user last talked to is
// checkpointed and i gets a handoff card. While either is busy only the
// view changes, since an agent is never touched while it runs.
func (m *Model) selectPersona(i int) tea.Cmd {
	if i < 0 || i >= len(m.personas) || i == m.cur {
		return nil
	}
	m.cur = i
	m.setPlaceholder()
	to := m.personas[i]
	from := m.persona(m.lastTalked)
	if from == nil || from == to || from.busy() || to.busy() || m.sess.ID() == "" {
		return nil
	}
	from.op, to.op = opSwitch, opSwitch
	sess, fid, tid, b := m.sess, from.p.ID, to.p.ID, m.bridge
	ctx := m.ctx
	return tea.Batch(m.runs.work(func() tea.Msg {
		_, err := sess.Switch(ctx, fid, tid)
		return switchDoneMsg{mark: b.mark(), sess: sess, from: fid, to: tid, err: err}
	}), m.armAnim())
}

func (m *Model) switchDone(msg switchDoneMsg) tea.Cmd {
	var cmds []tea.Cmd
	for _, id := range []string{msg.from, msg.to} {
		if p := m.persona(id); p != nil && p.op == opSwitch {
			p.op = ""
			if msg.err != nil && id == msg.to {
				p.tr.add(&item{kind: kNotice, level: "warn", text: "switch: " + msg.err.Error()})
			}
			if id == msg.to && !p.hasStatus {
				cmds = append(cmds, m.refreshStatus(p))
				continue
			}
			cmds = append(cmds, m.next(p))
		}
	}
	return tea.Batch(cmds...)
}

func (m *Model) compact() tea.Cmd {
	p := m.current()
	if p.busy() {
		m.flash = p.p.Name + " is busy; /compact works between turns (esc cancels the turn)"
		return nil
	}
	if m.sess.ID() == "" {
		m.flash = "nothing to compact yet"
		return nil
	}
	p.op = opCompact
	sess, id, ctx, b := m.sess, p.p.ID, m.ctx, m.bridge
	return tea.Batch(m.runs.work(func() tea.Msg {
		ok, err := sess.Compact(ctx, id)
		return compactDoneMsg{mark: b.mark(), sess: sess, persona: id, ok: ok, err: err}
	}), m.armAnim())
}

func (m *Model) compactDone(msg compactDoneMsg) tea.Cmd {
	p := m.persona(msg.persona)
	if p == nil || p.op != opCompact {
		return nil
	}
	p.op = ""
	switch {
	case msg.err != nil:
		p.tr.add(&item{kind: kError, text: "compact: " + msg.err.Error()})
	case !msg.ok:
		p.tr.add(&item{kind: kNotice, text: "nothing to compact: the conversation is already short (or the summary would not make it smaller)"})
	}
	return m.refreshStatus(p)
}

// loadSession reads a resumed session's conversations for display, and
// each persona's status. Every persona is marked busy meanwhile, so no run
// starts while the Cmd reads the agents.
func (m *Model) loadSession() tea.Cmd {
	sess, st, id, ctx, cur := m.sess, m.app.Store, m.sessID, m.ctx, m.current().p.ID
	var ids []string
	for _, p := range m.personas {
		if !p.busy() {
			p.op = opLoad
			ids = append(ids, p.p.ID)
		}
	}
	return m.runs.work(func() tea.Msg {
		out := sessionLoadedMsg{sess: sess, history: map[string][]chat.Message{}, statuses: map[string]agent.Status{}}
		if st == nil {
			return out
		}
		for _, p := range ids {
			h, err := st.AllMessages(ctx, id, p)
			if err != nil {
				out.err = err
				return out
			}
			if len(h) == 0 && p != cur {
				continue
			}
			out.history[p] = h
			if a, err := sess.Agent(ctx, p); err == nil {
				out.statuses[p] = a.Status()
			}
		}
		var ids []int64
		for _, h := range out.history {
			ids = append(ids, execIDs(h)...)
		}
		if out.recs, out.err = st.ToolRecords(ctx, ids); out.err != nil {
			return out
		}
		if id != "" {
			if out.asks, out.err = st.Decisions(ctx, id); out.err != nil {
				return out
			}
		}
		if id != "" {
			out.children, out.err = loadChildren(ctx, st, id)
		}
		return out
	})
}

// storedChild is a finished sub-agent run read back from the store.
type storedChild struct {
	sum     store.SessionSummary
	history []chat.Message
	recs    map[int64]store.ToolRecord
}

// loadChildren reads the sub-agent runs of a session, so the team panel of
// a resumed session shows them with their transcripts.
func loadChildren(ctx context.Context, st *store.Store, id string) ([]storedChild, error) {
	kids, err := st.ChildSessions(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]storedChild, 0, len(kids))
	for _, k := range kids {
		h, err := st.AllMessages(ctx, k.ID, k.Persona)
		if err != nil {
			return nil, err
		}
		recs, err := st.ToolRecords(ctx, execIDs(h))
		if err != nil {
			return nil, err
		}
		out = append(out, storedChild{sum: k, history: h, recs: recs})
	}
	return out, nil
}

func (m *Model) sessionLoaded(msg sessionLoadedMsg) tea.Cmd {
	var cmds []tea.Cmd
	for _, p := range m.personas {
		if p.op != opLoad {
			continue
		}
		p.op = ""
		if msg.sess == m.sess {
			if h, ok := msg.history[p.p.ID]; ok {
				old := p.tr
				p.tr = fromHistory(h, msg.recs, &msg.asks)
				for _, it := range old.items { // start-up notices, queued input
					p.tr.add(it)
				}
			}
			if s, ok := msg.statuses[p.p.ID]; ok {
				p.status, p.hasStatus = s, true
			}
		}
		cmds = append(cmds, m.next(p))
	}
	if msg.sess == m.sess {
		for _, p := range m.personas {
			m.team.adopt(p.tr.subs, m.namesByID())
		}
		m.team.restore(msg.children, m.namesByID())
	}
	if msg.err != nil {
		m.current().tr.add(&item{kind: kError, text: "could not load the session: " + msg.err.Error()})
	}
	return tea.Batch(cmds...)
}

// namesByID maps persona ids to display names.
func (m *Model) namesByID() map[string]string {
	names := map[string]string{}
	for _, p := range m.personas {
		names[p.p.ID] = p.p.Name
	}
	return names
}

// openSession replaces the session (/clear, or a pick in the sessions
// panel). Refused while anything runs: the old session's agents would go
// on emitting into the new view. The session opens in a Cmd (a resumed one
// is read from the store); input is queued meanwhile. notes are shown in
// it once it is open.
func (m *Model) openSession(id string, notes ...*item) tea.Cmd {
	return m.switchSession(func(a *app.App, ctx context.Context, emit func(agent.Event)) sessionOpenedMsg {
		sess, err := a.Session(ctx, emit, id)
		return sessionOpenedMsg{sess: sess, err: err, notes: notes, foreign: foreignOf(ctx, a, id, err)}
	})
}

// switchSession runs open, which replaces the session, in a Cmd once no
// work runs; every persona waits meanwhile.
func (m *Model) switchSession(open func(a *app.App, ctx context.Context, emit func(agent.Event)) sessionOpenedMsg) tea.Cmd {
	if m.anyOp() || m.team.running() > 0 {
		m.flash = "wait for the running work to end (esc cancels it) before changing sessions"
		return nil
	}
	m.closePanel()
	m.loading()
	a, ctx, emit := m.app, m.ctx, m.emit
	return m.runs.work(func() tea.Msg { return open(a, ctx, emit) })
}

// sessionOpenedMsg is a session opened by openSession.
type sessionOpenedMsg struct {
	sess    *agent.Session
	err     error
	notes   []*item
	foreign *app.Description // err refused a session not made here: ask
}

func addNotes(tr *transcript, notes []*item) {
	for _, it := range notes {
		if it != nil {
			tr.add(it)
		}
	}
}

// loading marks every persona busy while the session is replaced.
func (m *Model) loading() {
	for _, p := range m.personas {
		p.op = opLoad
	}
}

// loaded ends loading; queued input starts.
func (m *Model) loaded() []tea.Cmd {
	var cmds []tea.Cmd
	for _, p := range m.personas {
		if p.op == opLoad {
			p.op = ""
			cmds = append(cmds, m.next(p))
		}
	}
	return cmds
}

func (m *Model) sessionOpened(msg sessionOpenedMsg) tea.Cmd {
	if msg.foreign != nil {
		m.adopt = msg.foreign
		return tea.Batch(m.loaded()...)
	}
	if msg.err != nil {
		m.flash = msg.err.Error()
		return tea.Batch(m.loaded()...)
	}
	for _, p := range m.personas {
		if p.op == opLoad {
			p.op = ""
		}
	}
	m.sess, m.sessID = msg.sess, msg.sess.ID()
	m.team = newTeam()
	m.pendingModels = map[string]string{} // they belonged to the session left
	for _, p := range m.personas {
		p.tr, p.queue, p.hasStatus, p.hasCheckpoint, p.handoff = newTranscript(), nil, false, false, nil
		p.status = agent.Status{}
	}
	m.lastTalked = m.current().p.ID
	m.closePanel()
	tr := m.current().tr
	if m.sessID == "" {
		tr.add(&item{kind: kSystem, text: "new session"})
		addNotes(tr, msg.notes)
		return m.refreshStatus(m.current())
	}
	tr.add(&item{kind: kSystem, text: "resumed session " + m.sessID})
	addNotes(tr, msg.notes)
	return m.loadSession()
}

// refreshStatus re-reads an idle persona's numbers after something changed
// them between turns (/compact, /clear, /model, a new session), so the
// context meter is right at once; a queued message waits for it.
func (m *Model) refreshStatus(p *personaState) tea.Cmd {
	p.status, p.hasStatus = agent.Status{}, false
	if cmd := m.fetchStatus(p); cmd != nil {
		return cmd
	}
	return m.next(p)
}

// fetchStatus reads an idle persona's status for the task panel and the
// status bar.
func (m *Model) fetchStatus(p *personaState) tea.Cmd {
	if p.busy() || p.hasStatus || m.sess == nil {
		return nil
	}
	p.op = opLoad
	sess, id, ctx := m.sess, p.p.ID, m.ctx
	return m.runs.work(func() tea.Msg {
		a, err := sess.Agent(ctx, id)
		if err != nil {
			return sessionLoadedMsg{sess: sess, err: err}
		}
		return sessionLoadedMsg{sess: sess, statuses: map[string]agent.Status{id: a.Status()}}
	})
}

func (m *Model) cost() tea.Cmd {
	st, id, ctx := m.app.Store, m.sessID, m.ctx
	if st == nil {
		m.flash = "no session store: usage is not recorded"
		return nil
	}
	if id == "" {
		m.current().tr.add(&item{kind: kSystem, text: "no usage yet in this session"})
		return nil
	}
	return func() tea.Msg {
		t, err := st.Usage(ctx, id, true)
		return costMsg{totals: t, err: err}
	}
}

func (m *Model) showCost(msg costMsg) {
	tr := m.current().tr
	tr.toEnd()
	if msg.err != nil {
		tr.add(&item{kind: kError, text: "cost: " + msg.err.Error()})
		return
	}
	t := msg.totals
	text := fmt.Sprintf("usage of session %s (sub-agents included):\n", m.sessID)
	row := func(name string, u store.UsageStats) string {
		c := "price unknown"
		if u.Cost > 0 {
			c = fmt.Sprintf("$%.4f", u.Cost)
		}
		return fmt.Sprintf("  %-12s %4d calls   in %8s   out %8s   cached %8s   %s\n", name, u.Calls,
			fmtCount(u.PromptTokens), fmtCount(u.CompletionTokens), fmtCount(u.CachedTokens), c)
	}
	for _, p := range t.ByPersona {
		name := p.Persona
		if ps := m.persona(p.Persona); ps != nil {
			name = ps.p.Name
		}
		text += row(name, p.UsageStats)
	}
	text += row("total", t.Total)
	tr.add(&item{kind: kSystem, text: text})
}

// cancelRun is Esc: cancel the current persona's running turn.
func (m *Model) cancelRun() bool {
	p := m.current()
	if p.op == opRun && p.cancel != nil {
		p.cancel()
		m.flash = "cancelling " + p.p.Name + "…"
		m.unqueue(p)
		return true
	}
	return false
}

// unqueue takes a persona's queued messages back into the input, unsent:
// after Esc the user decides what to send.
func (m *Model) unqueue(p *personaState) {
	if len(p.queue) == 0 {
		return
	}
	var texts []string
	var pastes []paste
	for _, it := range p.queue {
		switch {
		case it.text == initPrompt:
			texts = append(texts, "/init")
		case len(it.pastes) > 0:
			texts = append(texts, it.label)
			pastes = append(pastes, it.pastes...)
		default:
			texts = append(texts, it.text)
		}
		p.tr.remove(it)
	}
	p.queue = nil
	if d := m.draft(); !d.empty() {
		texts = append(texts, d.text)
		pastes = append(pastes, d.pastes...)
	}
	m.setDraft(draft{text: strings.Join(texts, "\n"), pastes: pastes})
	m.flash = "cancelling " + p.p.Name + "… — the queued input is back in the input box, not sent"
}

// quit cancels every run; Run waits for them before closing the store.
func (m *Model) quit() tea.Cmd {
	for _, p := range m.personas {
		if p.cancel != nil {
			p.cancel()
		}
	}
	m.perm.denyAll(denyOnQuit)
	return tea.Quit
}
