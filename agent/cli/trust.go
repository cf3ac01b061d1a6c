package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

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
		fmt.Fprintf(env.Stdout, "%s: nothing in .agent/config.json needs trust\n", pt.Dir)
		return nil
	}
	if pt.Trusted {
		fmt.Fprintf(env.Stdout, "%s is already trusted with these settings:\n", pt.Dir)
		printTrustKeys(env.Stdout, pt.Keys)
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
	printTrustKeys(w, pt.Keys)
	next, err := app.TrustProject(cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "polly: recorded in %s; a change to any of them asks again\n", pt.Store)
	return next, nil
}

func printTrustKeys(w io.Writer, keys []config.TrustKey) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, k := range keys {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", k.Path, k.Value, k.Source)
	}
	tw.Flush()
}
