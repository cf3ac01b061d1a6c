// Package tui is Polly's full-screen terminal interface (Bubble Tea v2):
// persona tabs, the chat, a multi-line input and a status bar, plus panels
// for memory, the task, the team, tool outputs, sessions and help.
//
// One root model holds the conversations and routes messages; only the
// Bubble Tea loop touches it. Each panel and the permission dialog is a
// component of its own (panel.go) with its key map, holding only what it
// reads (through funcs it runs in Cmds) and answering with messages.
// Agents run in Cmds and report through a bridge (bridge.go) that turns
// their events into messages; permission questions come the same way.
package tui

import (
	"context"
	"io"
	"os"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"polly/agent"
	"polly/agent/app"
	"polly/agent/config"
	"polly/agent/termsafe"
	"polly/personas"
	"polly/tools/permission"
)

// Operations a persona can be busy with. Input sent meanwhile is queued.
const (
	opRun     = "run"
	opSwitch  = "switch"
	opCompact = "compact"
	opLoad    = "load"
)

// personaState is one tab: the persona's conversation as shown, and what
// it is doing.
type personaState struct {
	p       personas.Persona
	tr      *transcript
	op      string             // "" when idle
	cancel  context.CancelFunc // of the running turn
	started time.Time
	queue   []*item // user items waiting for the persona to be idle
	sawDone bool    // the running turn's Done event arrived
	handoff *item   // the handoff card waiting to go with the next message
	shell   string  // the ! command running (op is opRun)

	status        agent.Status // from the last StatusUpdate
	hasStatus     bool
	checkpoint    agent.CheckpointWritten
	hasCheckpoint bool
}

func (p *personaState) busy() bool { return p.op != "" }

// terminal is the terminal Polly runs in, as files: what $EDITOR gets
// (nil fields: Bubble Tea's own input and output).
type terminal struct {
	in  *os.File
	out *os.File
}

// terminalOf keeps in and out when they are files.
func terminalOf(in io.Reader, out io.Writer) terminal {
	var t terminal
	t.in, _ = in.(*os.File)
	t.out, _ = out.(*os.File)
	return t
}

// options build a Model. Run fills them from the command line; tests fill
// them directly.
type options struct {
	ctx      context.Context
	app      *app.App
	sess     *agent.Session
	bridge   *bridge
	runs     *runGroup // Cmds using the session; Run waits for them before closing the store
	persona  string
	modelErr error
	noColor  bool
	editor   string
	stateDir string // Polly's user state directory: what the memory inspector showed last; "" keeps nothing
	now      func() time.Time
	notices  []string          // start-up warnings to show in the chat
	foreign  *app.Description  // a session refused at start as not made here: ask whether to adopt it
	prompt   string            // sent once the program runs (polly "PROMPT")
	emit     func(agent.Event) // the sessions' event callback; nil: the bridge's

	// While the session opens (app nil): the tabs and the model line
	// come from these instead.
	personas *personas.Set
	model    config.ModelInfo
	mode     string // the configured permission mode
	tty      terminal
	theme    string        // tui.theme: "dark" or "light" fixes the look; "auto" or "": the terminal's background decides
	notify   string        // tui.notify: "bell", "osc9" or "off"; "" is off
	after    time.Duration // notify_after_seconds
	// saveDefault writes the default model into the user's config file
	// and returns the file's path (nil: none is known).
	saveDefault func(model string) (string, error)
}

// Model is the root model.
type Model struct {
	ctx      context.Context
	app      *app.App
	adopt    *app.Description // a session not made here, waiting for the user's answer; nil: none
	sess     *agent.Session
	sessID   string
	bridge   *bridge
	runs     *runGroup
	modelErr error
	noColor  bool
	editor   string
	stateDir string
	now      func() time.Time
	keys     keyMap
	emit     func(agent.Event) // what sessions opened here report to (the bridge, maybe logged)

	w, h         int // the layout's size, at least minW×minH
	termW, termH int // the terminal's
	th           theme
	r            *renderer
	gen          int

	personas   []*personaState
	cur        int
	lastTalked string // the persona last sent a message: the "from" of a switch

	input    textarea.Model
	inKey    string   // what inLines shows
	inLines  []string // the input's rendered lines
	pastes   []paste  // the long pastes of the draft in the input
	pasteSeq int      // numbers the paste tokens
	history  []draft  // drafts sent or cleared, oldest first
	histPos  int      // len(history) when not browsing

	comp completer // the completion list over the input

	team  *team
	panel panel     // the open panel, nil: the chat
	kind  panelKind // which one it is
	perm  *permissionDialog

	applied  uint64    // bridge pushes applied (see bridge.mark)
	deferred []doneMsg // work ended before its last events were applied

	prompt   string // the command line's prompt, sent by Init
	mouseOff bool   // mouse capture off (F7): the terminal selects text
	quitAsk  bool
	yoloAsk  bool // shift+tab asked to switch to yolo: y confirms
	// pendingModels are /model choices (persona → model) made before the
	// session had an id, remembered with it after its first turn.
	pendingModels map[string]string
	saveDefault   func(model string) (string, error)
	themeSetting  string        // tui.theme (see options.theme)
	tty           terminal      // where $EDITOR runs
	notify        string        // see options.notify
	notifyAfter   time.Duration // a turn at least this long is announced
	blurred       bool          // the terminal reported it lost focus
	startMode     string        // the permission mode while the session opens (app nil)
	flash         string        // a one-off message on the info line, cleared by the next key
	frameArmed    bool
	animArmed     bool
	anim          int
	seq           int // panel generations

	// While app is nil (the session still opens): the model line and the
	// personas the tabs show.
	startModel    config.ModelInfo
	startPersonas *personas.Set
}

func newModel(o options) *Model {
	if o.now == nil {
		o.now = time.Now
	}
	if o.ctx == nil {
		o.ctx = context.Background()
	}
	if o.runs == nil {
		o.runs = &runGroup{}
	}
	m := &Model{
		ctx: o.ctx, app: o.app, sess: o.sess, bridge: o.bridge, runs: o.runs,
		modelErr: o.modelErr, noColor: o.noColor, editor: o.editor, stateDir: o.stateDir, now: o.now,
		keys: newKeyMap(), team: newTeam(), w: 80, h: 24, prompt: o.prompt,
		pendingModels: map[string]string{}, saveDefault: o.saveDefault, themeSetting: o.theme, tty: o.tty,
		notify: o.notify, notifyAfter: o.after,
	}
	if m.sess != nil {
		m.sessID = m.sess.ID()
	}
	m.emit = o.emit
	if m.emit == nil {
		m.emit = o.bridge.Emit
	}
	m.perm = newPermissionDialog(look{}, func() time.Time { return m.now() })
	m.perm.mode = m.mode
	if o.app != nil {
		m.perm.root = o.app.Deps.ProjectDir
	}
	m.setTheme(o.theme != "light") // dark until the terminal reports its background, unless tui.theme says
	set := o.personas
	if o.app != nil {
		set = o.app.Personas
	}
	m.startModel, m.startPersonas, m.startMode = o.model, o.personas, o.mode
	for _, p := range set.All() {
		m.personas = append(m.personas, &personaState{p: p, tr: newTranscript()})
	}
	if i := m.index(o.persona); i >= 0 {
		m.cur = i
	}
	m.lastTalked = m.personas[m.cur].p.ID
	m.input = newInput()
	m.input.SetStyles(inputStyles(m.th.dark, m.noColor)) // as setTheme set them
	m.setPlaceholder()
	m.resize(m.w, m.h)
	first := m.personas[m.cur].tr
	if m.modelErr != nil {
		// The no-key screen: a headline, what still works, then how to
		// configure a model, shown from its top so the headline stays
		// visible on a small terminal.
		first.add(&item{kind: kError, text: "No model configured — sending is disabled; sessions (ctrl+s) and memory (ctrl+y) still work.\n" + m.modelErr.Error()})
		first.follow, first.top, first.off = false, 0, 0
	}
	for _, n := range o.notices {
		first.add(&item{kind: kNotice, level: "warn", text: n})
	}
	m.adopt = o.foreign
	return m
}

func newInput() textarea.Model {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Prompt = "› "
	ta.CharLimit = 0
	// The input grows with its content up to inputMaxHeight (set with
	// the size), then scrolls; MaxContentHeight lifts the textarea's
	// default limit of MaxHeight lines.
	ta.DynamicHeight = true
	ta.MinHeight = 1
	ta.MaxHeight = inputMaxHeight(24)
	ta.MaxContentHeight = 10000
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("shift+enter", "ctrl+j"))
	// These keys belong to the panels (ctrl+t task, ctrl+g team).
	ta.KeyMap.TransposeCharacterBackward.SetEnabled(false)
	ta.KeyMap.SelectAll.SetEnabled(false)
	ta.SetVirtualCursor(false) // the terminal's cursor: see Model.View
	ta.Focus()
	return ta
}

// setPlaceholder names the persona on screen in the empty input.
func (m *Model) setPlaceholder() {
	m.input.Placeholder = "Message " + m.current().p.Name + "…  (/ for commands, F1 for help)"
}

// setTheme rebuilds styles and drops every render cache; the open panel
// and the dialog get the new look (the memory panel re-renders its file:
// the returned Cmd).
func (m *Model) setTheme(dark bool) tea.Cmd {
	m.th = newTheme(dark, m.noColor)
	m.gen++
	m.r = newRenderer(m.th, m.gen, m.now)
	m.input.SetStyles(inputStyles(dark, m.noColor))
	lk := lookMsg{look: m.look()}
	m.perm, _ = m.perm.Update(lk)
	if m.panel != nil {
		return m.updatePanel(lk)
	}
	return nil
}

// The smallest terminal the layout works in; below it the screen only
// says so (see Model.render).
const minW, minH = 30, 10

func (m *Model) resize(w, h int) {
	m.termW, m.termH = w, h
	m.w, m.h = max(w, minW), max(h, minH)
	m.input.MaxHeight = inputMaxHeight(m.h)
	m.input.SetWidth(m.w) // also fits the height to the content
	m.perm.SetSize(m.w, m.h)
	if m.panel != nil {
		m.panel.SetSize(m.w, m.h-2)
	}
}

// chatHeight is the transcript window: the rest after the tabs, the info
// line, the input and the status bar.
func (m *Model) chatHeight() int { return max(1, m.h-3-m.input.Height()) }

func (m *Model) index(persona string) int {
	if persona == "" {
		return -1
	}
	set := m.startPersonas
	if m.app != nil {
		set = m.app.Personas
	}
	if p, ok := set.Find(persona); ok {
		for i, ps := range m.personas {
			if ps.p.ID == p.ID {
				return i
			}
		}
	}
	return -1
}

func (m *Model) persona(id string) *personaState {
	if i := m.index(id); i >= 0 {
		return m.personas[i]
	}
	return nil
}

func (m *Model) current() *personaState { return m.personas[m.cur] }

func (m *Model) anyBusy() bool {
	for _, p := range m.personas {
		if p.op == opRun || p.op == opCompact {
			return true
		}
	}
	return m.team.running() > 0
}

func (m *Model) anyOp() bool {
	for _, p := range m.personas {
		if p.busy() {
			return true
		}
	}
	return false
}

// Init asks for the background colour and starts listening to the agents.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.bridge.wait(), tea.RequestBackgroundColor}
	if m.sessID != "" {
		cmds = append(cmds, m.loadSession())
	} else if m.modelErr == nil {
		cmds = append(cmds, m.fetchStatus(m.current())) // the context meter before the first turn
	}
	if p := m.prompt; p != "" {
		m.prompt = ""
		cmds = append(cmds, func() tea.Msg { return promptMsg{text: p} })
	}
	return tea.Batch(cmds...)
}

// promptMsg sends the command line's prompt as the first message.
type promptMsg struct{ text string }

// frameMsg publishes streamed text; animMsg moves the busy indicators.
type (
	frameMsg struct{}
	animMsg  struct{}
)

const (
	frameEvery = 50 * time.Millisecond
	animEvery  = 150 * time.Millisecond
)

func (m *Model) armFrame() tea.Cmd {
	if m.frameArmed {
		return nil
	}
	m.frameArmed = true
	return tea.Tick(frameEvery, func(time.Time) tea.Msg { return frameMsg{} })
}

func (m *Model) armAnim() tea.Cmd {
	if m.animArmed {
		return nil
	}
	m.animArmed = true
	return tea.Tick(animEvery, func(time.Time) tea.Msg { return animMsg{} })
}

// Update is the one place the model changes.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resize(msg.Width, msg.Height)
		if m.panel != nil {
			return m, m.updatePanel(msg)
		}
		return m, nil
	case tea.FocusMsg:
		m.blurred = false
		return m, nil
	case tea.BlurMsg:
		m.blurred = true
		return m, nil
	case tea.BackgroundColorMsg:
		if m.themeSetting == "dark" || m.themeSetting == "light" {
			return m, nil // tui.theme chose
		}
		return m, m.setTheme(msg.IsDark())
	case eventsMsg:
		return m, tea.Batch(m.events(msg), m.bridge.wait())
	case doneMsg:
		return m, m.done(msg)
	case sessionLoadedMsg:
		return m, m.sessionLoaded(msg)
	case statusMsg:
		if p := m.persona(msg.persona); p != nil && msg.err == nil && !p.hasStatus {
			p.status, p.hasStatus = msg.status, true
		}
		return m, nil
	case promptMsg:
		return m, m.submit(msg.text)
	case promptFetchedMsg:
		if msg.err != nil { // nothing is sent; the typed line comes back
			m.flash = msg.err.Error()
			m.input.SetValue(msg.typed)
			return m, nil
		}
		m.flash = ""
		return m, m.customCommand(msg.run, msg.typed)
	case foundSessionMsg:
		if msg.err != nil {
			m.flash = msg.err.Error()
			return m, nil
		}
		return m, m.openSession(msg.id)
	case costMsg:
		m.showCost(msg)
		return m, nil
	case contextMsg:
		m.showContext(msg)
		return m, nil
	case sessionOpenedMsg:
		return m, m.sessionOpened(msg)
	case modelSetMsg:
		return m, m.modelSet(msg)
	case undoDoneMsg:
		return m, m.undoDone(msg)
	case resumeSessionMsg:
		return m, m.openSession(msg.id)
	case rewindMsg:
		return m, m.rewind(msg)
	case setModelMsg:
		return m, m.setModel(msg.ref)
	case flashMsg:
		m.flash = msg.text
		return m, nil
	case filesMsg:
		m.filesRead(msg)
		return m, nil
	case exportedMsg:
		m.exported(msg)
		return m, nil
	case allEditsMsg:
		if m.mode() == permission.Ask {
			m.setMode(permission.AutoEdit)
		}
		return m, nil
	case answeredMsg:
		m.current().tr.add(&item{kind: kNotice, text: answerNote(msg, m.current().p.ID)})
		return m, nil
	case frameMsg:
		m.frameArmed = false
		for _, p := range m.personas {
			p.tr.frame()
		}
		for _, r := range m.team.rows {
			r.tr.frame()
		}
		return m, nil
	case animMsg:
		m.animArmed = false
		m.anim++
		for _, r := range m.team.rows {
			if r.running() {
				r.touch()
			}
		}
		if m.anyOp() || m.team.running() > 0 {
			return m, m.armAnim()
		}
		return m, nil
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.MouseWheelMsg:
		return m, m.wheel(msg)
	case tea.PasteMsg:
		if m.perm.open() {
			var cmd tea.Cmd
			m.perm, cmd = m.perm.Update(msg)
			return m, cmd
		}
		if m.panel == nil {
			m.pasteText(msg.Content)
			return m, m.needFiles()
		}
	}
	if m.panel != nil { // the results of its Cmds, a paste
		return m, m.updatePanel(msg)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

// View draws the screen; see view.go.
func (m *Model) View() tea.View {
	// Model, command and tool text reaches the frame in many places; the
	// frame as a whole keeps SGR only (no OSC 52, links, DCS, APC…).
	v := tea.NewView(termsafe.Text(m.render()))
	v.AltScreen = true
	v.ReportFocus = true // a long turn is announced when the terminal is not focused
	v.MouseMode = tea.MouseModeCellMotion
	if m.mouseOff {
		v.MouseMode = tea.MouseModeNone
	}
	v.WindowTitle = "polly · " + cleanText(m.current().p.Name)
	if m.panel == nil && !m.perm.open() && !m.tooSmall() {
		if c := m.input.Cursor(); c != nil {
			c.Y += 1 + m.chatHeight() + 1 // below the tabs, the chat and the info line
			v.Cursor = c
		}
	}
	return v
}
