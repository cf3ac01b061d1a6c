package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"polly/agent/app"
	"polly/agent/config"
	"polly/agent/inspect"
)

// inspectCommand runs polly inspect [SESSION] [CALL] [--json]: with no
// call, the session's calls; with one, what the model received on it
// (the request rebuilt from its record, the token breakdown, every
// message), or with --json the request body as sent. SESSION defaults to
// the latest, CALL may be "last".
func inspectCommand(ctx context.Context, env Env, cfg *config.Config, o options) error {
	args := o.args[1:]
	if len(args) > 2 {
		return usagef("polly inspect takes at most a session and a call number (got %q)", args)
	}
	sessions, ok, err := openSessions(env, cfg)
	if err != nil {
		return err
	}
	if !ok {
		return &exitError{code: ExitUsage, err: fmt.Errorf("no Polly sessions in %s: nothing to inspect", env.Dir)}
	}
	st := sessions.Store
	defer st.Close()
	session, call, err := inspectTarget(args, func(id string) bool {
		_, err := st.Session(ctx, id)
		return err == nil
	})
	if err != nil {
		return err
	}
	if o.session != "" {
		session = o.session
	}
	id, err := sessions.Find(ctx, session)
	var ns *app.NoSessionError
	if errors.As(err, &ns) {
		return &exitError{code: ExitUsage, err: err}
	}
	if err != nil {
		return err
	}
	c, calls, err := inspect.Find(ctx, st, id, max(call, 0))
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	if call < 0 {
		return inspect.List(env.Stdout, id, calls)
	}
	rb, err := st.Rebuild(ctx, c)
	if err != nil {
		// A damaged or missing record: say so; the listing still helps.
		if lerr := inspect.List(env.Stdout, id, calls[c.Number-1:c.Number]); lerr != nil {
			return lerr
		}
		return &exitError{code: ExitFailed, err: errors.New(inspect.Explain(err))}
	}
	if o.configJSON {
		b, err := inspect.Body(rb)
		if err != nil {
			return err
		}
		_, err = env.Stdout.Write(append(b, '\n'))
		return err
	}
	return inspect.Render(env.Stdout, rb, len(calls))
}

// callNumber reads a call number ("last": 0).
func callNumber(s string) (int, error) {
	if s == "last" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, usagef("a call number is a whole number from 1, or last (got %q)", s)
	}
	return n, nil
}

// inspectTarget reads polly inspect's arguments: [SESSION] [CALL]. One
// argument is a call number of the latest session, or a session; a
// session id can be all digits ("91754235"), and a whole id is the
// session, never a call number. call is -1 when none is named (list).
func inspectTarget(args []string, isSession func(string) bool) (session string, call int, err error) {
	session, call = "latest", -1
	switch len(args) {
	case 2:
		session = args[0]
		if call, err = callNumber(args[1]); err != nil {
			return "", 0, err
		}
	case 1:
		if n, nerr := callNumber(args[0]); nerr == nil && !isSession(args[0]) {
			call = n
		} else {
			session = args[0]
		}
	}
	return session, call, nil
}
