package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"polly/agent"
	"polly/agent/app"
	"polly/agent/cli"
	"polly/agent/config"
	"polly/personas"
)

// openAtLatest is when the session starts opening if no first frame was
// written by then (a terminal too small to show text).
const openAtLatest = 250 * time.Millisecond

// runsGrace bounds the wait for cancelled runs at exit; they only need to
// store what they have.
const runsGrace = 5 * time.Second

// Run opens Polly's TUI on the caller's terminal (s.Stdin, s.Stdout) and
// environment (s.Getenv, s.Environ): it wires the app with the TUI's
// permission dialog, opens or resumes the session, and runs the program
// until the user quits. Running turns are cancelled and waited for before
// the store closes.
func Run(ctx context.Context, s cli.TUIStart) error { return run(ctx, s) }

// run is Run with more program options (tests give a window size: a pipe
// has none).
func run(ctx context.Context, s cli.TUIStart, extra ...tea.ProgramOption) error {
	if s.Stderr == nil {
		s.Stderr = io.Discard
	}
	if s.Getenv == nil {
		s.Getenv = func(string) string { return "" }
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := newBridge()
	defer b.close()
	term := append([]tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(s.Stdin), tea.WithOutput(s.Stdout), tea.WithEnvironment(s.Environ)}, extra...)
	noTerm := errors.New("tui: no terminal given (TUIStart.Stdin and Stdout are nil)")
	noColor := s.Getenv("NO_COLOR") != ""

	opts := s.App
	if opts.Config != nil && len(opts.Config.Untrusted()) > 0 {
		if s.Stdin == nil || s.Stdout == nil {
			return noTerm
		}
		trusted, quit, err := askTrust(opts.Config.ProjectTrust(), noColor, term)
		if err != nil || quit {
			return err
		}
		if trusted {
			cfg, err := app.TrustProject(opts.Config)
			if err != nil {
				return err
			}
			opts.Config, s.Persona, s.ModelErr = cfg, cfg.Persona, cfg.CheckModel()
		}
	}
	opts.Asker = &asker{b: b}
	emit := cli.LogEvents(s.Log, b.Emit)
	o := options{
		ctx: ctx, bridge: b, runs: &runGroup{},
		persona: s.Persona, modelErr: s.ModelErr,
		noColor: noColor, editor: editorFrom(s.Getenv), stateDir: userStateDir(s.Getenv, s.App.Home),
		prompt: s.Prompt, emit: emit,
		saveDefault: func(model string) (string, error) { return config.SaveUserModel(s.App.Home, s.Getenv, model) },
	}
	if opts.Config != nil {
		o.theme = opts.Config.TUI.Theme
		// The Notification hook's threshold: one number for both.
		o.notify, o.after = opts.Config.TUI.Notify, time.Duration(opts.Config.NotifyAfter)*time.Second
	}
	o.tty = terminalOf(s.Stdin, s.Stdout)
	open := &opening{done: make(chan struct{})}
	if s.ResumeID != "" {
		// Nothing to continue, or no such session: a clear error before
		// any screen is drawn (the command line exits 2).
		openSession(ctx, opts, s.ResumeID, emit, open)
		if open.err != nil {
			return open.err
		}
		defer open.app.Close()
	} else {
		// The first frame comes first; see start.go. The opening begins
		// when it is written, or after openAtLatest if nothing draws.
		open.start = func() { go openSession(ctx, opts, "", emit, open) }
		late := time.AfterFunc(openAtLatest, open.begin)
		defer func() {
			late.Stop()
			open.cancel()
			<-open.done // after the program: nothing else waits for it
			if open.app != nil {
				open.app.Close()
			}
		}()
	}
	if s.Stdin == nil || s.Stdout == nil {
		return noTerm
	}

	var p *tea.Program
	var m *Model
	var start *startModel
	if s.ResumeID != "" {
		o.app, o.sess, o.notices, o.foreign = open.app, open.sess, open.notices, open.foreign
		m = newModel(o)
		p = tea.NewProgram(m, term...)
	} else {
		set, _ := personas.Load(personaDir(opts)) // its warnings come with the app's
		o.personas, o.model, o.mode = set, opts.Config.ActiveModel(), string(opts.Config.Mode)
		start = newStartModel(o, open)
		watched := append(slices.Clip(term), tea.WithOutput(watchFrames(s.Stdout, open.begin)))
		p = tea.NewProgram(start, watched...)
	}
	_, runErr := p.Run()

	cancel()
	b.close()
	if !o.runs.close(runsGrace) {
		fmt.Fprintln(s.Stderr, "polly: some work did not stop in time; the session may miss its last step")
	}
	if runErr != nil && !errors.Is(runErr, tea.ErrProgramKilled) {
		return fmt.Errorf("tui: %w", runErr)
	}
	if start != nil {
		if start.failed != nil {
			if text := strings.TrimSpace(start.pre.draft().full()); text != "" {
				fmt.Fprintf(s.Stdout, "polly: not sent (the session did not open):\n%s\n", text)
			}
			return start.failed
		}
		if m = start.real; m == nil {
			return nil // quit before the session was open: nothing was saved
		}
	}
	if sid := m.sess.ID(); sid != "" {
		fmt.Fprintf(s.Stdout, "polly: session %s (resume with --session %s or --continue)\n", sid, sid)
	}
	return nil
}

// editorFrom is $VISUAL, else $EDITOR, else vi.
func editorFrom(getenv func(string) string) string {
	for _, k := range []string{"VISUAL", "EDITOR"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return "vi"
}

// openSession opens the app and the session (id "": a new one) into o,
// and closes o.done. A session that cannot be resumed is an error; one
// that cannot be created falls back to a notice and a new session.
func openSession(ctx context.Context, opts app.Options, id string, emit func(agent.Event), o *opening) {
	defer close(o.done)
	a, err := app.Open(ctx, opts)
	if err != nil {
		o.err = err
		return
	}
	notices := append([]string(nil), a.Warnings...)
	if id != "" {
		if id, err = a.FindSession(ctx, id); err != nil {
			a.Close()
			o.err = err
			return
		}
	}
	sess, err := a.Session(ctx, emit, id)
	if err != nil {
		if o.foreign = foreignOf(ctx, a, id, err); o.foreign != nil {
			notices = append(notices, adoptNotice(o.foreign))
		} else {
			notices = append(notices, err.Error()+"; starting a new session")
		}
		if sess, err = a.Session(ctx, emit, ""); err != nil {
			a.Close()
			o.err = err
			return
		}
	}
	o.app, o.sess, o.notices = a, sess, notices
}

// personaDir is where app.Open loads the workspace's personas from.
func personaDir(opts app.Options) string {
	if opts.Template == nil || opts.Config.Workspace == "" {
		return ""
	}
	return filepath.Join(opts.Config.Workspace, "personas")
}
