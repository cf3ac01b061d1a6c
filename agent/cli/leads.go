package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"unicode"

	"polly/agent/config"
	"polly/memory/store"
	"polly/tools"
)

const leadsUsage = "polly leads list [LIST] | polly leads export LIST [PATH] (CSV to stdout without PATH)"

// leadsCommand runs `polly leads list [LIST]` (the lists with their sizes,
// or one list as a table) and `polly leads export LIST [PATH]`. Leads live
// in the project's .agent/polly.db; nothing here needs a model.
func leadsCommand(ctx context.Context, env Env, cfg *config.Config, args []string) error {
	_ = cfg // the store's place does not depend on the config
	if len(args) == 0 {
		return usagef("polly leads needs a subcommand: %s", leadsUsage)
	}
	switch sub := args[0]; {
	case sub == "list" && len(args) <= 2, sub == "export" && (len(args) == 2 || len(args) == 3):
	case sub == "list" || sub == "export":
		return usagef("wrong number of arguments: %s", leadsUsage)
	default:
		return usagef("unknown leads command %q: %s", sub, leadsUsage)
	}
	dbPath := filepath.Join(env.Dir, ".agent", "polly.db")
	if _, err := os.Stat(dbPath); errors.Is(err, fs.ErrNotExist) {
		// Do not create .agent/ just to say there is nothing.
		if args[0] == "list" {
			fmt.Fprintf(env.Stdout, "no leads yet in %s (leads_save stores them in .agent/polly.db)\n", env.Dir)
			return nil
		}
		return fmt.Errorf("no leads yet in %s: %s does not exist", env.Dir, dbPath)
	}
	st, err := store.Open(dbPath)
	if err != nil {
		return err
	}
	defer st.Close()

	if args[0] == "export" {
		list := args[1]
		if len(args) == 3 {
			shown, n, _, err := tools.ExportLeads(ctx, st, env.workDir(), list, args[2])
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "wrote %d leads of list %q to %s\n", n, list, shown)
			return nil
		}
		leads, err := nonEmptyList(ctx, st, list)
		if err != nil {
			return err
		}
		return tools.WriteLeadsCSV(env.Stdout, leads)
	}
	if len(args) == 1 {
		return printLeadLists(ctx, env, st)
	}
	leads, err := nonEmptyList(ctx, st, args[1])
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCOMPANY\tDOMAIN\tCONTACT\tTITLE\tEMAIL\tPHONE\tSOURCE")
	for _, l := range leads {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.ID, cell(l.Company, 30), cell(l.Domain, 30), cell(l.ContactName, 25),
			cell(l.Title, 25), cell(l.Email, 40), cell(l.Phone, 20), cell(l.SourceURL, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%d leads in list %q (polly leads export %s FILE.csv for every column)\n", len(leads), args[1], shellWord(args[1]))
	return nil
}

func printLeadLists(ctx context.Context, env Env, st *store.Store) error {
	lists, err := st.LeadLists(ctx)
	if err != nil {
		return fmt.Errorf("list lead lists: %w", err)
	}
	if len(lists) == 0 {
		fmt.Fprintln(env.Stdout, "no leads yet in this directory")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LIST\tLEADS\tUPDATED")
	for _, l := range lists {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", cell(l.Name, 60), l.Count, l.UpdatedAt.Local().Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

// nonEmptyList returns a list's leads, or an error naming the lists that exist.
func nonEmptyList(ctx context.Context, st *store.Store, list string) ([]store.Lead, error) {
	leads, err := st.Leads(ctx, list)
	if err != nil {
		return nil, fmt.Errorf("read lead list %q: %w", list, err)
	}
	if len(leads) > 0 {
		return leads, nil
	}
	lists, err := st.LeadLists(ctx)
	if err != nil || len(lists) == 0 {
		return nil, fmt.Errorf("lead list %q does not exist; there are no leads yet", list)
	}
	names := make([]string, len(lists))
	for i, l := range lists {
		names[i] = fmt.Sprintf("%s (%d)", l.Name, l.Count)
	}
	return nil, fmt.Errorf("lead list %q does not exist; lists: %s", list, strings.Join(names, ", "))
}

// cell makes a value safe and short for a terminal table: scraped text may
// carry escape sequences or tabs that would break the layout.
func cell(s string, n int) string {
	s = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)), " ")
	if s == "" {
		return "-"
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// shellWord quotes a list name for the hint line when it needs it.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
