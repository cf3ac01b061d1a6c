package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"polly/agent/app"
	"polly/agent/config"
	"polly/personas"
)

// openSessions opens the project's store for polly sessions; ok is false
// when there is none yet (nothing is created just to say so).
func openSessions(env Env, cfg *config.Config) (s app.Sessions, ok bool, err error) {
	dbPath := filepath.Join(env.Dir, ".agent", "polly.db")
	if _, err := os.Stat(dbPath); errors.Is(err, fs.ErrNotExist) {
		return s, false, nil
	}
	own, err := app.LoadOwner(cfg, env.Dir)
	if err != nil {
		return s, false, err
	}
	st, err := app.OpenStore(dbPath, own)
	if err != nil {
		return s, false, err
	}
	return app.Sessions{Store: st, Owner: own, Root: env.Dir}, true, nil
}

// listSessions is polly sessions: this install's sessions here, then the
// ones the store holds that it did not make (not used until adopted).
func listSessions(ctx context.Context, env Env, cfg *config.Config) error {
	s, ok, err := openSessions(env, cfg)
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintln(env.Stdout, "no sessions yet in this directory")
		return nil
	}
	defer s.Store.Close()
	list, err := s.List(ctx, 50)
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	if len(list) == 0 {
		fmt.Fprintln(env.Stdout, "no sessions yet in this directory")
		return nil
	}
	set, _ := personas.Load(filepath.Join(cfg.Workspace, "personas"))
	var foreign []app.Listed
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tPERSONA\tSTATUS\tMSGS\tTOKENS\tTITLE")
	for _, l := range list {
		if l.Foreign != "" {
			foreign = append(foreign, l)
			continue
		}
		persona := l.Persona
		if p, ok := set.Find(l.Persona); ok {
			persona = p.Name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", l.ID, l.UpdatedAt.Local().Format("2006-01-02 15:04"), persona, l.Status, l.Messages, l.PromptTokens+l.CompletionTokens, shortTitle(l.Title))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(foreign) == 0 {
		return nil
	}
	fmt.Fprintf(env.Stdout, "\nNot made by Polly here — not continued or undone until you adopt them (polly sessions --adopt ID):\n")
	for _, l := range foreign {
		fmt.Fprintf(env.Stdout, "  %s  %s  %s\n      %s\n", l.ID, l.UpdatedAt.Local().Format("2006-01-02 15:04"), shortTitle(l.Title), l.Foreign)
	}
	return nil
}

func shortTitle(title string) string {
	if r := []rune(title); len(r) > 60 {
		return string(r[:57]) + "..."
	}
	return title
}

// adoptSessions is polly sessions --adopt [ID]: it shows what each
// session Polly did not make here is, then takes it over for this install
// and project. Without an id it takes every such root session.
func adoptSessions(ctx context.Context, env Env, cfg *config.Config, ids []string) error {
	s, ok, err := openSessions(env, cfg)
	if err != nil {
		return err
	}
	if !ok {
		return &exitError{code: ExitUsage, err: fmt.Errorf("no Polly sessions in %s: nothing to adopt", env.Dir)}
	}
	defer s.Store.Close()
	if len(ids) == 0 {
		list, err := s.List(ctx, 0)
		if err != nil {
			return err
		}
		for _, l := range list {
			if l.Foreign != "" {
				ids = append(ids, l.ID)
			}
		}
		if len(ids) == 0 {
			fmt.Fprintf(env.Stdout, "every session in %s was made by Polly here: nothing to adopt\n", s.Store.Path())
			return nil
		}
	} else {
		id, err := s.Find(ctx, ids[0])
		if err != nil {
			return err
		}
		ids = []string{id}
	}
	for _, id := range ids {
		d, err := s.Describe(ctx, id)
		if err != nil {
			return err
		}
		if d.Foreign == "" {
			fmt.Fprintf(env.Stdout, "session %s was made by Polly here: nothing to adopt\n", id)
			continue
		}
		describe(env.Stdout, d)
		moved, err := s.Adopt(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "  adopted: stamped for this install (%s) and %s", s.Owner.Install.ID(), s.Owner.Project)
		if moved > 0 {
			fmt.Fprintf(env.Stdout, "; %d backup path(s) moved from %s", moved, app.MadeIn(d.Session))
		}
		fmt.Fprintf(env.Stdout, ". It can now be continued (--session %s) and undone.\n", id)
	}
	return nil
}

// describe prints what a session is, before it is adopted.
func describe(w io.Writer, d app.Description) {
	s := d.Session
	fmt.Fprintf(w, "session %s %q\n", s.ID, s.Title)
	fmt.Fprintf(w, "  not made by Polly here: %s\n", d.Foreign)
	fmt.Fprintf(w, "  made in:   %s\n", orUnknown(app.MadeIn(d.Session)))
	fmt.Fprintf(w, "  created:   %s, last active %s\n", s.CreatedAt.Local().Format(time.DateTime), s.UpdatedAt.Local().Format(time.DateTime))
	fmt.Fprintf(w, "  holds:     %d message(s), %d turn(s), %d file backup(s)\n", d.Messages, d.Turns, d.Backups)
	if len(d.Outside) > 0 {
		fmt.Fprintf(w, "  %d backup(s) name paths outside this project; undo refuses them, adopted or not:\n", len(d.Outside))
		for _, p := range d.Outside {
			fmt.Fprintf(w, "    %s\n", p)
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "(not recorded)"
	}
	return s
}
