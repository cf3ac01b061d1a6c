package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"polly/agent/app"
	"polly/agent/config"
	"polly/workspace"
)

// trustCommand is `polly trust [DIR]`: it shows the settings of the
// project file that need trust and records the user's trust in them.
func trustCommand(env Env, o options) error {
	dir := env.Dir
	if len(o.args) > 1 {
		dir = o.args[1]
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(env.workDir(), dir)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return usagef("polly trust: %s is not a directory", o.args[1])
		}
		dir = workspace.ProjectRoot(dir, env.Home)
	}
	cfg, err := config.Load(config.LoadOptions{ProjectDir: dir, Home: env.Home, Getenv: env.Getenv, Flags: o.flags, Version: version(env)})
	if err != nil {
		return err
	}
	pt := cfg.ProjectTrust()
	if len(pt.Keys) == 0 {
		where := pt.Dir
		if where == "" { // nothing found: the project is dir itself
			where = dir
		}
		fmt.Fprintf(env.Stdout, "%s: nothing here needs trust (no project settings that run programs or widen permissions)\n", where)
		return nil
	}
	if pt.Trusted {
		fmt.Fprintf(env.Stdout, "%s is already trusted with these settings:\n", pt.Dir)
		printTrust(env.Stdout, pt)
		return nil
	}
	_, err = trustAndReload(env.Stdout, cfg)
	return err
}

// trustAndReload shows what is trusted, records it and loads the config
// again with those settings applied.
func trustAndReload(w io.Writer, cfg *config.Config) (*config.Config, error) {
	pt := cfg.ProjectTrust()
	fmt.Fprintf(w, "polly: trusting these settings of the project %s:\n", pt.Dir)
	printTrust(w, pt)
	next, err := app.TrustProject(cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "polly: recorded in %s; a change to any of them asks again\n", pt.Store)
	return next, nil
}

// printTrust shows everything trust grants: each setting with where it is
// written, every field of it whole (credentials masked), and the project
// files the settings run.
func printTrust(w io.Writer, pt config.ProjectTrust) {
	for _, k := range pt.Keys {
		fmt.Fprintf(w, "  %s  (%s)\n", k.Path, k.Source)
		for _, f := range k.Fields {
			fmt.Fprintf(w, "    %s = %s\n", f.Path, f.Value)
		}
	}
	if len(pt.Files) == 0 {
		return
	}
	fmt.Fprintln(w, "  project files these settings run (their content is trusted too; an edit asks again):")
	for _, f := range pt.Files {
		changed := ""
		if f.Changed {
			changed = "  (changed since you trusted it)"
		}
		fmt.Fprintf(w, "    %s  sha256:%s%s\n", f.Path, f.Hash[:12], changed)
	}
}
