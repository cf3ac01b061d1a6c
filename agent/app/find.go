package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"polly/memory/store"
)

// NoSessionError: the session asked for (by --continue, --session or in
// the TUI) does not exist, or a prefix is ambiguous. The command line
// treats it as bad usage.
type NoSessionError struct{ Msg string }

func (e *NoSessionError) Error() string { return e.Msg }

// FindSession resolves what a user typed to a session id: "latest" is the
// newest root session (--continue); otherwise a whole id or a prefix that
// matches exactly one root session.
func (a *App) FindSession(ctx context.Context, id string) (string, error) {
	if a.Store == nil {
		return "", errors.New("no session store (.agent/polly.db could not be opened)")
	}
	return FindSessionIn(ctx, a.Store, id)
}

// FindSessionIn is FindSession on a store opened without an App (polly
// inspect).
func FindSessionIn(ctx context.Context, st *store.Store, id string) (string, error) {
	id = strings.TrimSpace(id)
	if id == "latest" {
		s, err := st.LatestSession(ctx)
		if errors.Is(err, store.ErrNotFound) {
			return "", &NoSessionError{Msg: "no earlier session in this directory to continue (start one with polly, or list them with polly sessions)"}
		}
		if err != nil {
			return "", err
		}
		return s.ID, nil
	}
	if id == "" {
		return "", &NoSessionError{Msg: "no session id given"}
	}
	if _, err := st.Session(ctx, id); err == nil {
		return id, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	all, err := st.ListSessions(ctx, 0)
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
