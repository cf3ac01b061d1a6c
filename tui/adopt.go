package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"polly/agent"
	"polly/agent/app"
	"polly/agent/owner"
)

// A session Polly did not make here (a shipped, copied or moved store) is
// resumed only after the user has seen what it is and said so: the adopt
// question is drawn over the screen; a adopts and resumes, n or esc
// leaves it alone.

// foreignOf describes the session err refused as foreign (nil when err
// is something else).
func foreignOf(ctx context.Context, a *app.App, id string, err error) *app.Description {
	var fe *owner.ForeignError
	if !errors.As(err, &fe) || a == nil {
		return nil
	}
	d, derr := a.Sessions().Describe(ctx, fe.Session.ID)
	if derr != nil {
		d = app.Description{Session: fe.Session, Foreign: fe.Why}
	}
	return &d
}

// adoptKey answers the adopt question.
func (m *Model) adoptKey(k string) tea.Cmd {
	d := m.adopt
	switch k {
	case "a", "A":
		m.adopt = nil
		return m.adoptAndOpen(d.Session.ID)
	case "n", "N", "esc", "enter":
		m.adopt = nil
		m.flash = fmt.Sprintf("session %s left as it is: not continued, not undone", d.Session.ID)
	}
	return nil
}

// adoptAndOpen takes the session over for this install and project, then
// resumes it.
func (m *Model) adoptAndOpen(id string) tea.Cmd {
	return m.switchSession(func(a *app.App, ctx context.Context, emit func(agent.Event)) sessionOpenedMsg {
		if _, err := a.Sessions().Adopt(ctx, id); err != nil {
			return sessionOpenedMsg{err: err}
		}
		sess, err := a.Session(ctx, emit, id)
		return sessionOpenedMsg{sess: sess, err: err, notes: []*item{{kind: kNotice, level: "warn",
			text: "adopted session " + id + ": it is now this install's, in this project"}}}
	})
}

// adoptView is the question, in a box.
func (m *Model) adoptView() string {
	d := m.adopt
	s := d.Session
	th := m.th
	w := max(40, min(m.w-4, 100))
	inner := w - 4
	wrap := func(text string) string { return ansi.Wrap(text, inner, " ,/") }
	lines := []string{
		th.title.Render("Continue a session Polly did not make here?"),
		wrap(fmt.Sprintf("%s %q", s.ID, s.Title)),
		"",
		wrap("Why it is not yours: " + d.Foreign),
		wrap("Made in: " + orNotRecorded(app.MadeIn(s))),
		wrap(fmt.Sprintf("Created %s, last active %s", s.CreatedAt.Local().Format(time.DateTime), s.UpdatedAt.Local().Format(time.DateTime))),
		wrap(fmt.Sprintf("Holds %d message(s), %d turn(s), %d file backup(s)", d.Messages, d.Turns, d.Backups)),
	}
	if len(d.Outside) > 0 {
		lines = append(lines, wrap(fmt.Sprintf("%d backup(s) name paths outside this project; undo refuses them: %s", len(d.Outside), strings.Join(d.Outside, ", "))))
	}
	lines = append(lines, "",
		wrap("Its history goes to the model as if you had written it, and undo restores its backups. Adopt it only if you know where it came from."),
		"", th.key.Render("a")+" adopt and continue   "+th.key.Render("n")+" / "+th.key.Render("esc")+" leave it")
	return th.box.Width(w).Render(strings.Join(lines, "\n"))
}

func orNotRecorded(s string) string {
	if s == "" {
		return "(not recorded)"
	}
	return s
}

// adoptNotice is the start-up notice for a session refused at start.
func adoptNotice(d *app.Description) string {
	return fmt.Sprintf("session %s was not made by Polly here (%s): a new session was started; answer the question to continue it", d.Session.ID, d.Foreign)
}
