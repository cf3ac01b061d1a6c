package tui

import (
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"

	"polly/agent"
	"polly/agent/app"
)

// The first frame does not wait for the store, the workspace, the skills
// and the session: startModel draws the same screen from the config alone
// and keeps what the user types. Nor does it share the CPU with them: they
// open in a goroutine that begins once the first frame is written (see
// frameWatch), and once they are open startModel hands over to the real
// Model, with the input, the terminal's size and background, and every
// message sent meanwhile (in order, after the command line's prompt).

// opening is the work that opens the session; done is closed when its
// fields are set.
type opening struct {
	done    chan struct{}
	app     *app.App
	sess    *agent.Session
	notices []string
	foreign *app.Description // the session asked for, refused as not made here
	err     error

	start func() // begins the work in a goroutine that closes done
	once  sync.Once
}

// begin starts the work, once; after cancel it does nothing.
func (o *opening) begin() { o.once.Do(o.start) }

// cancel: the program ended before the work began, so it never will (done
// is closed with nothing set); after begin it does nothing.
func (o *opening) cancel() { o.once.Do(func() { close(o.done) }) }

// frameWatch is the program's output: it passes every write through to
// the terminal and calls drawn once, after the first write that shows any
// text. Bubble Tea writes its terminal queries first (escape sequences
// only), then the first frame.
type frameWatch struct {
	w     io.Writer
	drawn func()
	seen  atomic.Bool
}

// watchFrames wraps w in a frameWatch that is still a terminal when w is
// one: Bubble Tea asks the output's file for its size and raw mode, and
// draws nothing on a plain writer without a size.
func watchFrames(w io.Writer, drawn func()) io.Writer {
	fw := &frameWatch{w: w, drawn: drawn}
	if f, ok := w.(term.File); ok {
		return &frameWatchFile{File: f, watch: fw}
	}
	return fw
}

// frameWatchFile is a frameWatch on a terminal's file.
type frameWatchFile struct {
	term.File
	watch *frameWatch
}

func (f *frameWatchFile) Write(p []byte) (int, error) { return f.watch.Write(p) }

func (f *frameWatch) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if !f.seen.Load() && ansi.Strip(string(p[:n])) != "" {
		f.seen.Store(true)
		f.drawn()
	}
	return n, err
}

// openedMsg says opening is done.
type openedMsg struct{}

func (o *opening) wait() tea.Msg {
	<-o.done
	return openedMsg{}
}

// startModel is the program's model: the start screen until the session
// is open, then the real Model.
type startModel struct {
	pre     *Model   // draws the start screen and edits the input
	o       options  // the real Model's, without app, sess and notices
	open    *opening //
	pending []draft  // sent before the session was open
	size    *tea.WindowSizeMsg
	bg      *tea.BackgroundColorMsg
	real    *Model // nil until the session is open
	settled bool   // the real Model has loaded its session: start-up is over
	failed  error  // opening failed: shown on screen, returned by Run
}

// returnStartupMemory collects what start-up left behind (the package
// inits' garbage, the start screen's model, the session's loading) and
// hands the free pages back to the system, once: an idle TUI then keeps
// resident what it uses, not its start-up's peak.
func returnStartupMemory() tea.Msg {
	debug.FreeOSMemory()
	return nil
}

func newStartModel(o options, open *opening) *startModel {
	return &startModel{pre: newModel(o), o: o, open: open}
}

func (s *startModel) Init() tea.Cmd {
	return tea.Batch(tea.RequestBackgroundColor, s.open.wait)
}

func (s *startModel) View() tea.View {
	if s.real != nil {
		return s.real.View()
	}
	return s.pre.View()
}

func (s *startModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if s.real != nil {
		_, cmd := s.real.Update(msg)
		if _, loaded := msg.(sessionLoadedMsg); loaded && !s.settled {
			s.settled = true
			cmd = tea.Batch(cmd, returnStartupMemory)
		}
		return s, cmd
	}
	switch msg := msg.(type) {
	case openedMsg:
		return s, s.opened()
	case tea.WindowSizeMsg:
		s.size = &msg
		s.pre.Update(msg)
	case tea.BackgroundColorMsg:
		s.bg = &msg
		s.pre.Update(msg)
	case tea.PasteMsg:
		s.pre.pasteText(msg.Content)
	case tea.KeyPressMsg:
		return s, s.key(msg)
	}
	return s, nil
}

// key edits the input; Enter queues it until the session is open.
// Panels and commands wait for the real Model.
func (s *startModel) key(msg tea.KeyPressMsg) tea.Cmd {
	m := s.pre
	m.flash = ""
	switch msg.String() {
	case "ctrl+c", "ctrl+d":
		if msg.String() == "ctrl+c" && s.failed == nil && m.clearOnCtrlC() {
			return nil
		}
		return tea.Quit
	case "enter":
		d := m.draft()
		if d.empty() || s.failed != nil {
			return nil
		}
		d.text = strings.TrimRight(d.text, "\n")
		m.clearDraft()
		s.pending = append(s.pending, d)
		it := m.current().tr.add(&item{kind: kUser, text: d.full(), queued: true})
		if len(d.pastes) > 0 {
			it.label, it.pastes, it.pasted = d.text, d.pastes, true
		}
		m.flash = "queued: sent when the session is open"
		return nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return cmd
}

// opened hands over to the real Model, or shows why it cannot.
func (s *startModel) opened() tea.Cmd {
	o := s.open
	if o.err != nil {
		s.failed = o.err
		m := s.pre
		m.current().tr.add(&item{kind: kError, text: "Polly could not open its session: " + o.err.Error() +
			"\nNothing was sent; your unsent text is kept in the input. Press ctrl+c to quit."})
		if len(s.pending) > 0 {
			all := draft{}
			for _, d := range append(s.pending, m.draft()) {
				if !d.empty() {
					all.text = strings.TrimPrefix(all.text+"\n"+d.text, "\n")
					all.pastes = append(all.pastes, d.pastes...)
				}
			}
			m.setDraft(all)
			s.pending = nil
		}
		m.flash = ""
		return nil
	}
	ro := s.o
	ro.app, ro.sess, ro.notices, ro.foreign = o.app, o.sess, o.notices, o.foreign
	ro.prompt = ""
	r := newModel(ro)
	if s.size != nil {
		r.Update(*s.size)
	}
	var cmds []tea.Cmd
	if s.bg != nil {
		_, c := r.Update(*s.bg)
		cmds = append(cmds, c)
	}
	r.setDraft(s.pre.draft())
	r.history, r.histPos, r.pasteSeq = s.pre.history, s.pre.histPos, s.pre.pasteSeq
	s.real = r
	s.pre = nil // the real Model draws from now on
	cmds = append(cmds, r.Init())
	// In order, through the Model's own queue: the first starts a turn
	// (or waits for the session's load), the rest wait for it.
	for _, d := range append([]draft{{text: s.o.prompt}}, s.pending...) {
		if d.text != "" {
			cmds = append(cmds, r.submitDraft(d))
		}
	}
	s.pending = nil
	return tea.Batch(cmds...)
}
