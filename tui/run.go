package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	tea "charm.land/bubbletea/v2"

	"polly/agent/app"
	"polly/agent/cli"
)

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
	a, err := app.Open(ctx, opts)
	if err != nil {
		return err
	}
	defer a.Close()

	var notices []string
	notices = append(notices, a.Warnings...)
	id := s.ResumeID
	if id != "" {
		// Nothing to continue, or no such session: a clear error before
		// any screen is drawn (the command line exits 2).
		if id, err = a.FindSession(ctx, id); err != nil {
			return err
		}
	}
	emit := cli.LogEvents(s.Log, b.Emit)
	sess, err := a.Session(ctx, emit, id)
	if err != nil {
		notices = append(notices, err.Error()+"; starting a new session")
		if sess, err = a.Session(ctx, emit, ""); err != nil {
			return err
		}
	}

	if s.Stdin == nil || s.Stdout == nil {
		return noTerm
	}
	runs := &runGroup{}
	m := newModel(options{
		ctx: ctx, app: a, sess: sess, bridge: b, runs: runs,
		persona: s.Persona, modelErr: s.ModelErr,
		noColor: noColor, editor: editorFrom(s.Getenv),
		notices: notices, prompt: s.Prompt, emit: emit,
	})
	p := tea.NewProgram(m, term...)
	_, runErr := p.Run()

	cancel()
	b.close()
	if !runs.close(runsGrace) {
		fmt.Fprintln(s.Stderr, "polly: some work did not stop in time; the session may miss its last step")
	}
	if runErr != nil && !errors.Is(runErr, tea.ErrProgramKilled) {
		return fmt.Errorf("tui: %w", runErr)
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
