package workspace

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"polly/workspace/atomicfile"
)

// Template updates. A workspace is created from the template once and
// never overwritten, but the instruction files (SOUL, TOOLS, AGENTS, the
// daily-log README) describe what Polly does — and that changes. So:
//   - a file still as Polly wrote it (its hash is in .template.json) or
//     equal to an earlier template (templatehistory/) is updated in place;
//   - a file the user changed keeps their text: a notice says so, and the
//     memory inspector shows the template's change as a diff and applies it
//     (a three-way merge of the user's text with the template's change; a
//     conflict leaves the file alone and the new template beside it).

// templateHistory holds every earlier template of the versioned files:
// <file with / as _>.<n>, oldest first. Changing a template means adding
// its previous text here (TestTemplateHistoryIsComplete says so).
//
//go:embed templatehistory
var templateHistory embed.FS

// Versioned are the instruction files kept up to date with the template.
var Versioned = []string{SoulFile, ToolsFile, AgentsFile, LogDir + "/README.md"}

// templateStateFile records, per versioned file, the hash of what Polly
// last wrote there, and the template a notice was last given for.
const templateStateFile = ".template.json"

// UpdatesDir holds the pending template changes as Markdown diffs, one per
// file, for the memory inspector; a file goes when its change is applied.
const UpdatesDir = ".template-updates"

type templateState struct {
	Files    map[string]string `json:"files"`              // file → sha256 of the content Polly wrote
	Notified map[string]string `json:"notified,omitempty"` // file → sha256 of the template a notice was given for
}

// TemplateUpdate is a versioned file whose template changed.
type TemplateUpdate struct {
	File    string // e.g. "SOUL.md"
	Updated bool   // it was still the template as Polly wrote it: replaced with the new one
	Notice  bool   // the user changed it, and this is the first time this template is offered
	Diff    string // the user changed it: the template's change (unified diff), kept in UpdatesDir
}

// SyncTemplate brings the versioned files to the current template (see
// above) and returns what it did or offers.
func (w *Workspace) SyncTemplate() ([]TemplateUpdate, error) {
	if w.template == nil {
		return nil, nil
	}
	unlock, err := w.lockAll()
	if err != nil {
		return nil, err
	}
	defer unlock()
	st := w.loadTemplateState()
	var out []TemplateUpdate
	for _, f := range Versioned {
		tmpl, err := fs.ReadFile(w.template, f)
		if err != nil {
			continue
		}
		cur, err := os.ReadFile(w.path(f))
		if err != nil {
			continue // missing: Init writes the template; unreadable: left alone
		}
		want := hashOf(tmpl)
		switch {
		case string(cur) == string(tmpl):
			st.Files[f] = want
			delete(st.Notified, f)
			os.Remove(w.updatePath(f))
		case hashOf(cur) == st.Files[f] || isEarlierTemplate(f, string(cur)):
			if err := atomicfile.Write(w.path(f), tmpl, 0o644); err != nil {
				return out, fmt.Errorf("update %s to the current template: %w", f, err)
			}
			st.Files[f] = want
			delete(st.Notified, f)
			os.Remove(w.updatePath(f))
			out = append(out, TemplateUpdate{File: f, Updated: true})
		default:
			base := baseTemplate(f, string(cur), st.Files[f], string(tmpl))
			if base == string(tmpl) {
				continue // edits of the user's own: the template did not change under them
			}
			diff := udiff.Unified("a/"+f+" (template before)", "b/"+f+" (template now)", base, string(tmpl))
			u := TemplateUpdate{File: f, Diff: diff, Notice: st.Notified[f] != want}
			if u.Notice {
				if err := w.writeUpdate(f, diff); err != nil {
					return out, err
				}
				st.Notified[f] = want
			}
			out = append(out, u)
		}
	}
	return out, w.saveTemplateState(st)
}

// ApplyTemplateUpdate applies the template's change to a versioned file
// the user changed: a three-way merge of their text and the new template
// over the template their file came from. The text before goes to
// archive/<file>-template-<date>.md (nothing is lost). On a conflict the
// file is left alone and the new template written beside it as
// <file>.new, for the user to merge; the result says which.
func (w *Workspace) ApplyTemplateUpdate(f string) (string, error) {
	if w.template == nil {
		return "", errors.New("no template to update from")
	}
	tmpl, err := fs.ReadFile(w.template, f)
	if err != nil {
		return "", fmt.Errorf("%s is not a template file", f)
	}
	unlock, err := w.lockAll()
	if err != nil {
		return "", err
	}
	defer unlock()
	curB, err := os.ReadFile(w.path(f))
	if err != nil {
		return "", fmt.Errorf("apply the template update: %w", err)
	}
	cur := string(curB)
	base := baseTemplate(f, cur, w.loadTemplateState().Files[f], string(tmpl))
	merged, ok := udiff.Merge(udiff.Strings(base, cur), udiff.Strings(base, string(tmpl)))
	var text string
	if ok {
		text, err = udiff.Apply(base, merged)
		ok = err == nil
	}
	if !ok {
		beside := w.path(f) + ".new"
		if err := atomicfile.Write(beside, tmpl, 0o644); err != nil {
			return "", fmt.Errorf("apply the template update: %w", err)
		}
		return fmt.Sprintf("your %s and the new template change the same lines: it is left as it is, and the new template is in %s to merge by hand", f, beside), nil
	}
	archive := filepath.Join(w.dir, "archive", strings.ReplaceAll(f, "/", "_")+"-template-"+w.now().Format("2006-01-02-150405")+".md")
	if err := os.MkdirAll(filepath.Dir(archive), 0o755); err != nil {
		return "", fmt.Errorf("apply the template update: %w", err)
	}
	if err := atomicfile.Write(archive, curB, 0o644); err != nil {
		return "", fmt.Errorf("apply the template update: %w", err)
	}
	if err := atomicfile.Write(w.path(f), []byte(text), 0o644); err != nil {
		return "", fmt.Errorf("apply the template update: %w", err)
	}
	st := w.loadTemplateState()
	delete(st.Files, f) // the user's text now, not the template as Polly wrote it
	st.Notified[f] = hashOf(tmpl)
	os.Remove(w.updatePath(f))
	if err := w.saveTemplateState(st); err != nil {
		return "", err
	}
	return fmt.Sprintf("applied the template's change to %s, keeping your edits (the text before is in %s)", f, archive), nil
}

// lockAll holds the workspace against writers of this process and of
// others (two Pollys starting at once update the template once).
func (w *Workspace) lockAll() (func(), error) {
	w.writeMu.Lock()
	unlock, err := lockPath(filepath.Join(w.dir, lockFile))
	if err != nil {
		w.writeMu.Unlock()
		return nil, fmt.Errorf("lock workspace: %w", err)
	}
	return func() { unlock(); w.writeMu.Unlock() }, nil
}

// updatePath is where a file's pending template change is kept.
func (w *Workspace) updatePath(f string) string {
	return filepath.Join(w.dir, UpdatesDir, strings.ReplaceAll(f, "/", "_")+".md")
}

// UpdateFile is the file a pending update at path (in UpdatesDir) is for;
// "" when path is not one.
func (w *Workspace) UpdateFile(path string) string {
	for _, f := range Versioned {
		if w.updatePath(f) == path {
			return f
		}
	}
	return ""
}

func (w *Workspace) writeUpdate(f, diff string) error {
	doc := fmt.Sprintf("# Template update for %s\n\nPolly's template of %s changed, and your %s has edits of its own, so it was not replaced. "+
		"This is the template's change; press **a** in the memory inspector (/memory) to apply it to your file (your edits are kept, the text before goes to archive/).\n\n```diff\n%s```\n",
		f, f, f, diff)
	if err := os.MkdirAll(filepath.Join(w.dir, UpdatesDir), 0o755); err != nil {
		return fmt.Errorf("keep the template update of %s: %w", f, err)
	}
	if err := atomicfile.Write(w.updatePath(f), []byte(doc), 0o644); err != nil {
		return fmt.Errorf("keep the template update of %s: %w", f, err)
	}
	return nil
}

func (w *Workspace) loadTemplateState() templateState {
	st := templateState{Files: map[string]string{}, Notified: map[string]string{}}
	if b, err := os.ReadFile(filepath.Join(w.dir, templateStateFile)); err == nil {
		_ = json.Unmarshal(b, &st) // unreadable: start over, as for a workspace without one
	}
	if st.Files == nil {
		st.Files = map[string]string{}
	}
	if st.Notified == nil {
		st.Notified = map[string]string{}
	}
	return st
}

func (w *Workspace) saveTemplateState(st templateState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(w.dir, templateStateFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("record the template version: %w", err)
	}
	return nil
}

// earlierTemplates are a file's earlier templates, oldest first.
func earlierTemplates(f string) []string {
	var out []string
	name := strings.ReplaceAll(f, "/", "_")
	for n := 1; ; n++ {
		b, err := templateHistory.ReadFile("templatehistory/" + name + "." + strconv.Itoa(n))
		if err != nil {
			return out
		}
		out = append(out, string(b))
	}
}

func isEarlierTemplate(f, text string) bool {
	for _, t := range earlierTemplates(f) {
		if t == text {
			return true
		}
	}
	return false
}

// baseTemplate is the template a user's file came from: the one Polly
// recorded writing (by hash), else the one — earlier or current — it
// differs least from.
func baseTemplate(f, text, written, current string) string {
	candidates := append(earlierTemplates(f), current)
	for _, t := range candidates {
		if hashOf([]byte(t)) == written {
			return t
		}
	}
	best, bestN := "", -1
	for _, t := range candidates {
		n := 0
		for _, e := range udiff.Strings(t, text) {
			n += e.End - e.Start + len(e.New)
		}
		if bestN < 0 || n < bestN {
			best, bestN = t, n
		}
	}
	return best
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
