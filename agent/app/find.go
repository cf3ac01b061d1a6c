package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"polly/agent"
	"polly/agent/config"
	"polly/agent/owner"
	"polly/memory/store"
)

// NoSessionError: the session asked for (by --continue, --session or in
// the TUI) does not exist, or a prefix is ambiguous. The command line
// treats it as bad usage.
type NoSessionError struct{ Msg string }

func (e *NoSessionError) Error() string { return e.Msg }

// LoadOwner returns the checker that tells this install's sessions in the
// project dir from the others. Only a corrupt install id is an error (the
// user must decide what to do with it); without a state directory the
// checker accepts no stored session and stamps none, and Problem says why.
func LoadOwner(cfg *config.Config, dir string) (owner.Checker, error) {
	c := owner.Checker{Project: config.ProjectKey(dir)}
	in, err := owner.Load(cfg.StateDir())
	var ce *owner.CorruptError
	if errors.As(err, &ce) {
		return c, err
	}
	c.Install, c.Problem = in, err
	return c, nil
}

// OpenStore opens a project's store with every new session stamped by own.
func OpenStore(path string, own owner.Checker) (*store.Store, error) {
	st, err := store.Open(path)
	if err != nil {
		return nil, err
	}
	st.SetStamper(own.Stamp)
	return st, nil
}

// Sessions is a project's store seen through this install's ownership:
// what the lists show, what --continue picks, what adopting changes.
type Sessions struct {
	Store *store.Store // nil: Err says why there is none
	Owner owner.Checker
	Root  string // the project root
	Err   error
}

// Sessions is the app's store seen through its owner check.
func (a *App) Sessions() Sessions {
	return Sessions{Store: a.Store, Owner: a.Owner, Root: a.ProjectDir, Err: a.storeErr}
}

// noStore says why there is no store to read.
func (s Sessions) noStore() error {
	if s.Err != nil {
		return fmt.Errorf("no session store: %w", s.Err)
	}
	return errors.New("no session store (.agent/polly.db could not be opened)")
}

// History is undo, redo and rewind on these sessions: only own ones, and
// only beneath the project.
func (s Sessions) History() agent.History {
	return agent.History{Store: s.Store, Root: s.Root, Owner: s.Owner}
}

// Listed is a session as a list shows it; Foreign says why this install
// does not take it for its own ("" when it does).
type Listed struct {
	store.SessionSummary
	Foreign string
}

// List returns root sessions, most recent activity first (limit <= 0:
// all), each judged.
func (s Sessions) List(ctx context.Context, limit int) ([]Listed, error) {
	if s.Store == nil {
		return nil, s.noStore()
	}
	all, err := s.Store.ListSessions(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Listed, len(all))
	for i, sum := range all {
		out[i] = Listed{SessionSummary: sum, Foreign: s.why(sum.Session)}
	}
	return out, nil
}

// why is "" for an own session, else what makes it foreign.
func (s Sessions) why(sess store.Session) string {
	var fe *owner.ForeignError
	switch err := s.Owner.Check(sess); {
	case err == nil:
		return ""
	case errors.As(err, &fe):
		return fe.Why
	default:
		return err.Error()
	}
}

// FindSession resolves what a user typed to a session id: "latest" is the
// newest root session this install made in this project (--continue: a
// newer session it did not make, however dated, never wins); otherwise a
// whole id or a prefix that matches exactly one root session. Whether the
// session may be used is decided when it is opened (agent.SessionOwner).
func (a *App) FindSession(ctx context.Context, id string) (string, error) {
	return a.Sessions().Find(ctx, id)
}

// Find is FindSession.
func (s Sessions) Find(ctx context.Context, id string) (string, error) {
	if s.Store == nil {
		return "", s.noStore()
	}
	id = strings.TrimSpace(id)
	if id == "latest" {
		latest, err := s.Latest(ctx)
		if err != nil {
			return "", err
		}
		return latest.ID, nil
	}
	if id == "" {
		return "", &NoSessionError{Msg: "no session id given"}
	}
	if _, err := s.Store.Session(ctx, id); err == nil {
		return id, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	all, err := s.Store.ListSessions(ctx, 0)
	if err != nil {
		return "", err
	}
	var hits []string
	for _, s := range all {
		if strings.HasPrefix(s.ID, id) {
			hits = append(hits, s.ID)
		}
	}
	switch len(hits) {
	case 0:
		return "", &NoSessionError{Msg: fmt.Sprintf("no session %q in this directory (polly sessions lists them)", id)}
	case 1:
		return hits[0], nil
	}
	if len(hits) > 5 {
		hits = append(hits[:5], "…")
	}
	return "", &NoSessionError{Msg: fmt.Sprintf("session prefix %q matches %s; type more of it", id, strings.Join(hits, ", "))}
}

// Latest is the newest root session this install made in this project.
// When there is none, the error says so, and names the newest session
// the store holds that it did not make, with how to adopt it.
func (s Sessions) Latest(ctx context.Context) (store.Session, error) {
	all, err := s.List(ctx, 0)
	if err != nil {
		return store.Session{}, err
	}
	var foreign []Listed
	for _, l := range all {
		if l.Foreign == "" {
			return l.Session, nil
		}
		foreign = append(foreign, l)
	}
	if len(foreign) == 0 {
		return store.Session{}, &NoSessionError{Msg: "no earlier session in this directory to continue (start one with polly, or list them with polly sessions)"}
	}
	f := foreign[0]
	return store.Session{}, &NoSessionError{Msg: fmt.Sprintf(
		"no session made by Polly here to continue: the store %s holds %d session(s) Polly did not make here, which it does not use without your say-so "+
			"(newest: %s %q: %s). To take one over: polly sessions --adopt %s (it shows what it is first)",
		s.Store.Path(), len(foreign), f.ID, f.Title, f.Foreign, f.ID)}
}

// Description is what Polly shows of a session before adopting it.
type Description struct {
	Session  store.Session
	Foreign  string // why it is not this install's ("" when it is)
	Messages int    // all personas, archived included
	Turns    int
	Backups  int      // file backups undo would restore
	Outside  []string // backup paths outside the project: undo refuses them, adopted or not
}

// Describe reads what a session holds.
func (s Sessions) Describe(ctx context.Context, id string) (Description, error) {
	sess, err := s.Store.Session(ctx, id)
	if err != nil {
		return Description{}, err
	}
	d := Description{Session: sess, Foreign: s.why(sess)}
	sums, err := s.Store.ListSessions(ctx, 0)
	if err != nil {
		return d, err
	}
	for _, sum := range sums {
		if sum.ID == id {
			d.Messages = sum.Messages
		}
	}
	turns, err := s.Store.Turns(ctx, id)
	if err != nil {
		return d, err
	}
	d.Turns = len(turns)
	backups, err := s.Store.Backups(ctx, id)
	if err != nil {
		return d, err
	}
	d.Backups = len(backups)
	from := MadeIn(sess)
	for _, b := range backups {
		if _, err := (agent.History{Root: s.Root}).Beneath(b.Path); err == nil {
			continue
		}
		if from != "" { // adopting moves paths under the old project here
			if _, err := (agent.History{Root: from}).Beneath(b.Path); err == nil && filepath.IsAbs(b.Path) {
				continue
			}
		}
		d.Outside = append(d.Outside, b.Path)
	}
	return d, nil
}

// MadeIn is the project a session was made in, as recorded (the working
// directory for sessions from before projects were recorded).
func MadeIn(s store.Session) string {
	if s.Project != "" {
		return s.Project
	}
	return s.Cwd
}

// Adopt takes a session over for this install and project (polly sessions
// --adopt): it is stamped anew with its sub-agent sessions, and backups
// under the project it was made in move here. It returns the rows moved.
func (s Sessions) Adopt(ctx context.Context, id string) (int64, error) {
	if s.Owner.Install == nil {
		return 0, fmt.Errorf("cannot adopt session %s: %v", id, s.Owner.Problem)
	}
	return s.Store.Restamp(ctx, id)
}
