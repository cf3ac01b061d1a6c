package tui

import (
	"context"
	_ "embed"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"polly/agent"
	"polly/agent/app"
	"polly/workspace/commands"
)

// slashCommand is one /command.
type slashCommand struct {
	name, args, help string
}

var slashCommands = []slashCommand{
	{"/help", "", "every key and command"},
	{"/persona", "NAME", "talk to another persona"},
	{"/model", "[--default] [NAME]", "pick this persona's model from a list, or switch to NAME (remembered with the session; --default also saves it to your config)"},
	{"/compact", "", "summarize this persona's conversation now"},
	{"/clear", "", "start a new session"},
	{"/sessions", "[ID]", "pick a session to resume, or resume ID (a unique prefix is enough)"},
	{"/memory", "", "workspace memory and task checkpoints"},
	{"/task", "", "plan, anchor and checkpoint of the current task"},
	{"/cost", "", "tokens and cost per persona"},
	{"/context", "", "what the model received on this persona's last call: tokens by part and every message"},
	{"/init", "", "ask the persona to write or improve the project's AGENTS.md (polly init creates the workspace memory)"},
	{"/undo", "[N]", "take back the file changes of the last turn (or N turns)"},
	{"/redo", "", "take back the last undo or rewind"},
	{"/rewind", "", "pick a turn: files (and optionally the conversation) back to before it"},
	{"/skills", "", "the Agent Skills found and how the model loads them"},
	{"/mcp", "", "MCP servers: state, tools, last error"},
	{"/export", "[FILE]", "write this session as Markdown (default: polly-session-ID.md in the project)"},
}

// initPrompt is what /init sends: prompts/init.md, a text file so that it
// can be read and reviewed as text.
//
//go:embed prompts/init.md
var initPrompt string

// commandLabel is the one line a command's internal prompt shows as.
func commandLabel(text string) string {
	if text == initPrompt {
		return "/init — write or improve this project's AGENTS.md"
	}
	return ""
}

// command runs text if it is a slash command. A first word that looks
// like a path ("/etc/hosts is…") is sent as a message instead.
func (m *Model) command(text string) (tea.Cmd, bool) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") {
		return nil, false
	}
	name, arg, _ := strings.Cut(t, " ")
	arg = strings.TrimSpace(arg)
	if strings.Contains(name[1:], "/") {
		return nil, false
	}
	switch name {
	case "/help":
		return m.openPanel(pHelp), true
	case "/persona":
		if arg == "" {
			m.flash = "usage: /persona NAME (" + strings.Join(m.personaNames(), ", ") + ")"
			return nil, true
		}
		i := m.index(arg)
		if i < 0 {
			m.flash = "no persona " + arg + " (" + strings.Join(m.personaNames(), ", ") + ")"
			return nil, true
		}
		return m.selectPersona(i), true
	case "/model":
		if rest, ok := strings.CutPrefix(arg, "--default"); ok {
			return m.saveDefaultModel(strings.TrimSpace(rest)), true
		}
		return m.setModel(arg), true
	case "/compact":
		return m.compact(), true
	case "/clear":
		return m.openSession(""), true
	case "/sessions":
		if arg != "" {
			return m.findSession(arg), true
		}
		return m.openPanel(pSessions), true
	case "/memory":
		return m.openPanel(pMemory), true
	case "/task":
		return m.openPanel(pTask), true
	case "/cost":
		return m.cost(), true
	case "/context":
		return m.contextView(), true
	case "/undo", "/redo":
		return m.undoCommand(name, arg), true
	case "/rewind":
		return m.openPanel(pRewind), true
	case "/export":
		return m.export(arg), true
	case "/mcp":
		return m.openPanel(pMCP), true
	case "/skills":
		m.current().tr.add(&item{kind: kSystem, text: skillsText(m.app.Skills)})
		return nil, true
	case "/init":
		if m.modelErr != nil {
			m.flash = "sending is disabled: no model is configured"
			return nil, true
		}
		p := m.current()
		p.tr.toEnd()
		it := p.tr.add(&item{kind: kUser, text: initPrompt, label: commandLabel(initPrompt)})
		if p.busy() {
			it.queued = true
			p.queue = append(p.queue, it)
			return nil, true
		}
		return m.startRun(p, it), true
	}
	if m.app != nil {
		if run, ok, err := m.app.Command(t); ok {
			if err != nil { // a missing argument: nothing is sent, the text stays
				m.flash = err.Error()
				m.input.SetValue(text)
				return nil, true
			}
			return m.customCommand(run, t), true
		}
	}
	m.flash = "unknown command " + name + " (type / to see the commands)"
	m.input.SetValue(text)
	return nil, true
}

// customCommand sends a custom command's prompt (shown as what was typed)
// to its persona, or the current one, with its allowed-tools granted for
// that turn.
func (m *Model) customCommand(run app.CommandRun, typed string) tea.Cmd {
	if m.modelErr != nil {
		m.flash = "sending is disabled: no model is configured"
		m.input.SetValue(typed)
		return nil
	}
	if run.Fetch != nil { // an MCP server's prompt: asked for off the loop
		fetch := run.Fetch
		run.Fetch = nil
		m.flash = "asking the MCP server for /" + run.Name + "…"
		return func() tea.Msg {
			text, err := fetch(context.Background())
			run.Prompt = text
			return promptFetchedMsg{run: run, typed: typed, err: err}
		}
	}
	var cmds []tea.Cmd
	if i := m.index(run.Persona); i >= 0 && i != m.cur {
		cmds = append(cmds, m.selectPersona(i))
	}
	p := m.current()
	for _, n := range run.Notes {
		p.tr.add(&item{kind: kNotice, level: "info", text: n})
	}
	p.tr.toEnd()
	it := p.tr.add(&item{kind: kUser, text: run.Prompt, label: typed, grants: run.Grants})
	if p.busy() {
		it.queued = true
		p.queue = append(p.queue, it)
		return tea.Batch(cmds...)
	}
	return tea.Batch(append(cmds, m.startRun(p, it))...)
}

// promptFetchedMsg brings an MCP prompt's text back to the loop.
type promptFetchedMsg struct {
	run   app.CommandRun
	typed string
	err   error
}

// customCommands are the custom slash commands found at start-up and the
// prompts of the MCP servers that are ready.
func (m *Model) customCommands() []commands.Command {
	if m.app == nil {
		return nil
	}
	return m.app.SlashCommands()
}

// setModel is /model NAME (and the picker's Enter): the current persona
// gets the model (on Polly's tab, the default model). Agents cache numbers
// made for their model, so the session is reopened by id (in a Cmd: it
// reads the store): fresh agents, same stored history. /model alone opens
// the picker.
func (m *Model) setModel(name string) tea.Cmd {
	if name == "" {
		return m.openPanel(pModels)
	}
	if m.anyOp() || m.team.running() > 0 {
		m.flash = "wait for the running work to end before switching models"
		return nil
	}
	persona := m.current().p.ID
	if err := m.app.SetPersonaModel(persona, name); err != nil {
		m.flash = err.Error()
		return nil
	}
	m.loading()
	a, ctx, emit, id := m.app, m.ctx, m.emit, m.sess.ID()
	if id == "" { // remembered once the session has its id (flushModels)
		m.pendingModels[persona] = name
	}
	return m.runs.work(func() tea.Msg {
		// Remembered first: reopening the session restores its choices.
		if err := a.RememberModel(ctx, id, persona, name); err != nil {
			return modelSetMsg{err: err}
		}
		sess, err := a.Session(ctx, emit, id)
		return modelSetMsg{sess: sess, err: err}
	})
}

// flushModels remembers the /model choices made before the session had
// an id, once it has one.
func (m *Model) flushModels() tea.Cmd {
	id := m.sess.ID()
	if len(m.pendingModels) == 0 || id == "" {
		return nil
	}
	chosen := m.pendingModels
	m.pendingModels = map[string]string{}
	a, ctx := m.app, m.ctx
	return func() tea.Msg {
		for p, name := range chosen {
			if err := a.RememberModel(ctx, id, p, name); err != nil {
				return flashMsg{text: "could not remember the model with the session: " + err.Error()}
			}
		}
		return nil
	}
}

// saveDefaultModel is /model --default [NAME]: NAME (or the model this
// persona talks to now) becomes the default model in the user's config
// file, and this persona switches to it.
func (m *Model) saveDefaultModel(name string) tea.Cmd {
	if m.saveDefault == nil {
		m.flash = "no user config file is known here (set $XDG_CONFIG_HOME or $HOME)"
		return nil
	}
	var cmd tea.Cmd
	if name == "" {
		info, err := m.app.PersonaModel(m.current().p.ID)
		if err != nil {
			m.flash = err.Error()
			return nil
		}
		name = info.Provider + "/" + info.Name
	} else if cmd = m.setModel(name); cmd == nil {
		return nil // the flash says why
	}
	path, err := m.saveDefault(name)
	if err != nil {
		m.flash = "could not save the default model: " + err.Error()
		return cmd
	}
	m.current().tr.add(&item{kind: kSystem, text: "default model saved: " + name + " (in " + path + "; new sessions and other projects start with it)"})
	return cmd
}

// modelSetMsg is the session reopened after a model switch.
type modelSetMsg struct {
	sess *agent.Session
	err  error
}

func (m *Model) modelSet(msg modelSetMsg) tea.Cmd {
	if msg.err != nil {
		m.flash = "model switched, but reopening the session failed: " + msg.err.Error()
		return tea.Batch(m.loaded()...)
	}
	m.sess = msg.sess
	for _, p := range m.personas {
		p.status, p.hasStatus = agent.Status{}, false
	}
	if info, err := m.app.PersonaModel(m.current().p.ID); err == nil {
		m.current().tr.add(&item{kind: kSystem, text: "model: " + info.Provider + "/" + info.Name + " (" + info.BaseURL + ")"})
	}
	var cmds []tea.Cmd
	for _, p := range m.personas {
		if p.op == opLoad {
			p.op = ""
			if p != m.current() {
				cmds = append(cmds, m.next(p))
			}
		}
	}
	// the threshold and the context count change with the model
	return tea.Batch(append(cmds, m.refreshStatus(m.current()))...)
}

func (m *Model) personaNames() []string {
	var out []string
	for _, p := range m.personas {
		out = append(out, strings.ToLower(p.p.Name))
	}
	return out
}

// commandTable is every /command the list offers: the built-in ones,
// then the custom ones (Markdown files, MCP prompts) a built-in name does
// not shadow.
func (m *Model) commandTable() []slashCommand {
	out := append([]slashCommand(nil), slashCommands...)
	for _, c := range m.customCommands() {
		name := "/" + c.Name
		if slices.ContainsFunc(slashCommands, func(b slashCommand) bool { return b.name == name }) {
			continue
		}
		desc := c.Description
		if c.Source != "" {
			desc = strings.TrimSpace(desc + " (" + c.Source + ")")
		}
		out = append(out, slashCommand{name: name, args: c.ArgumentHint, help: desc})
	}
	return out
}

// foundSessionMsg is a session id resolved from what the user typed.
type foundSessionMsg struct {
	id  string
	err error
}

// findSession resolves an id or a prefix in a Cmd (it reads the store),
// then opens the session.
func (m *Model) findSession(typed string) tea.Cmd {
	a, ctx := m.app, m.ctx
	return func() tea.Msg {
		id, err := a.FindSession(ctx, typed)
		return foundSessionMsg{id: id, err: err}
	}
}
