package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"polly/agent/app"
	"polly/agent/config"
	"polly/memory/store"
	"polly/workspace"
)

// gcCommand runs `polly gc [--older-than DAYS] [--dry-run]`: the retention
// pass of agent/app on this project's .agent/ and the workspace memory.
func gcCommand(ctx context.Context, env Env, cfg *config.Config, o options) error {
	days := cfg.Retention.Days
	if o.olderThan != nil {
		days = *o.olderThan
	}
	stateDir := filepath.Join(env.Dir, ".agent")
	dbPath := filepath.Join(stateDir, "polly.db")
	if _, err := os.Stat(dbPath); errors.Is(err, fs.ErrNotExist) {
		// Do not create .agent/ just to say there is nothing.
		fmt.Fprintf(env.Stdout, "no sessions in %s (%s does not exist); nothing to remove\n", env.Dir, dbPath)
		return nil
	}
	st, err := store.Open(dbPath)
	if err != nil {
		return err
	}
	defer st.Close()
	var ws *workspace.Workspace
	if fi, err := os.Stat(cfg.Workspace); err == nil && fi.IsDir() {
		if ws, err = workspace.Open(cfg.Workspace, nil); err != nil {
			fmt.Fprintf(env.Stderr, "polly: workspace %s not tidied: %v\n", cfg.Workspace, err)
			ws = nil
		}
	}
	res, err := app.RunGC(ctx, st, stateDir, ws, app.GCOptions{OlderThan: time.Duration(days) * 24 * time.Hour, DryRun: o.dryRun})
	for _, l := range res.Lines(o.dryRun) {
		fmt.Fprintln(env.Stdout, l)
	}
	return err
}
