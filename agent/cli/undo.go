package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"polly/agent"
	"polly/agent/config"
)

// undoOptions are the flags of polly undo, redo and rewind.
type undoOptions struct {
	turns, to       int
	turnsSet, toSet bool
	conversation    bool
}

func undoFlags(fs *flag.FlagSet, u *undoOptions) {
	fs.Func("turns", "polly undo: take back the last `N` turns that changed files (default 1)", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("expected a whole number, got %q", s)
		}
		u.turns, u.turnsSet = n, true
		return nil
	})
	fs.Func("to", "polly rewind: keep turns 1..`TURN`, take back the ones after it", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("expected a turn number, got %q", s)
		}
		u.to, u.toSet = n, true
		return nil
	})
	fs.BoolVar(&u.conversation, "conversation", false, "polly rewind: also fork the conversation at that turn (a new session)")
}

// undoCommand runs polly undo, redo and rewind on the project's store. Bad
// input (an unknown session, a turn count out of range) exits 2; a file
// left alone because it changed outside Polly exits 1, after the list of
// what was restored.
func undoCommand(ctx context.Context, env Env, cfg *config.Config, cmd string, o options) error {
	u := o.undo
	switch {
	case u.turnsSet && cmd != "undo":
		return usagef("--turns is for polly undo")
	case (u.toSet || u.conversation) && cmd != "rewind":
		return usagef("--to and --conversation are for polly rewind")
	case cmd == "rewind" && !u.toSet:
		return usagef("polly rewind needs --to TURN (polly rewind --session ID --to 2 keeps turns 1-2)")
	case o.continueLast:
		return usagef("polly %s works on the latest session by default; pick another with --session ID", cmd)
	}
	sessions, ok, err := openSessions(env, cfg)
	if err != nil {
		return err
	}
	if !ok {
		return &exitError{code: ExitUsage, err: fmt.Errorf("no Polly sessions in %s: nothing to %s", env.Dir, cmd)}
	}
	defer sessions.Store.Close()
	session := o.session
	if session != "" {
		if session, err = sessions.Find(ctx, session); err != nil {
			return err
		}
	} else {
		latest, err := sessions.Latest(ctx)
		if err != nil {
			return err
		}
		session = latest.ID
	}
	h := sessions.History()
	var rep agent.UndoReport
	switch cmd {
	case "undo":
		n := 1
		if u.turnsSet {
			n = u.turns
		}
		rep, err = h.Undo(ctx, session, n)
	case "redo":
		rep, err = h.Redo(ctx, session)
	case "rewind":
		rep, err = h.Rewind(ctx, session, u.to, u.conversation)
	}
	var ie *agent.UndoInputError
	if errors.As(err, &ie) {
		return &exitError{code: ExitUsage, err: err}
	}
	if rep.Kind != "" {
		if o.format == FormatJSON {
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			if jerr := enc.Encode(rep); jerr != nil {
				return jerr
			}
		} else {
			fmt.Fprint(env.Stdout, rep.Text())
		}
	}
	if err != nil {
		return err
	}
	if !rep.Complete() {
		names := ""
		for i, s := range rep.Skipped {
			if i > 0 {
				names += ", "
			}
			names += s.Path
		}
		return &exitError{code: ExitFailed, err: fmt.Errorf("%d file(s) left as they are (see above): %s", len(rep.Skipped), names)}
	}
	return nil
}
