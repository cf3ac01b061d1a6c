package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// stampedItem is a log entry written by DailyLog or LogTaskEnd: "- 14:03 …",
// with its project's tag when it has one: "- 14:03 [polly] coder: …".
var stampedItem = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-*] [0-9]{2}:[0-9]{2} (?:\[([^\]\n]+)\] )?`)
})

// ProjectTag names a project in the daily log: its directory's base name,
// without the characters that would break the "[tag]".
func ProjectTag(dir string) string {
	if dir == "" {
		return ""
	}
	name := strings.Map(func(r rune) rune {
		switch r {
		case '[', ']', '\n', '\r':
			return -1
		}
		return r
	}, filepath.Base(filepath.Clean(dir)))
	if name == "." || name == string(filepath.Separator) {
		return ""
	}
	return name
}

// Caps of the daily-log parts of the prompt.
const (
	logReadCap     = 64 << 10 // newest part of a log read to find its summary lines
	logSummaryCap  = 3 << 10  // summary lines shown per day
	logLineCap     = 240      // characters of one summary line
	olderLogsShown = 3        // names of older logs listed in the note
)

// logSummary keeps the summary lines of a daily log: each top-level list
// item's first line ("- 14:03 coder: fix the test → completed: …"), and for
// older "## heading" entries the heading with the entry's first line. The
// detail lines under them stay in the file. With a project tag it keeps
// only that project's entries ("- 14:03 [tag] …", shown without the tag):
// the log is shared by every project. It returns the newest lines that fit
// cap, oldest first, how many older ones were left out, and how many other
// projects' (or untagged) entries were skipped.
func logSummary(doc string, cap int, tag string) (lines []string, dropped, others int) {
	if tag != "" {
		lines, dropped = logSummary1(projectEntries(doc, tag, &others), cap)
		return lines, dropped, others
	}
	lines, dropped = logSummary1(doc, cap)
	return lines, dropped, 0
}

// projectEntries is the part of a log that belongs to the project tagged
// tag: its stamped entries (tag removed) with their detail lines; others
// counts the entries left out.
func projectEntries(doc, tag string, others *int) string {
	var b strings.Builder
	keep := false
	for _, l := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") || strings.TrimSpace(l) == "":
			if keep {
				b.WriteString(l + "\n") // detail of a kept entry
			}
			continue
		case strings.HasPrefix(l, "# "):
			continue // the day's header
		}
		m := stampedItem().FindStringSubmatchIndex(l)
		keep = m != nil && m[2] >= 0 && l[m[2]:m[3]] == tag
		if !keep {
			if strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "* ") || strings.HasPrefix(l, "## ") {
				*others++
			}
			continue
		}
		b.WriteString(l[:m[2]-1] + l[m[3]+2:] + "\n")
	}
	return b.String()
}

func logSummary1(doc string, cap int) (lines []string, dropped int) {
	var all []string
	inSection := false // inside a "## " entry: its lines are detail
	pending := -1      // index in all of the "## " entry still waiting for its first line
	for _, l := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "# "):
			inSection, pending = false, -1
		case strings.HasPrefix(l, "## "):
			all = append(all, "- "+t[3:])
			inSection, pending = true, len(all)-1
		case stampedItem().MatchString(l): // an entry of its own, wherever it stands
			all = append(all, t)
			inSection, pending = false, -1
		case t == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t"):
			// detail of the entry above
		case pending >= 0:
			all[pending] += ": " + strings.TrimSpace(strings.ReplaceAll(strings.TrimLeft(t, "-*+ "), "**", ""))
			pending = -1
		case !inSection:
			all = append(all, "- "+strings.TrimLeft(t, "-*+ "))
		}
	}
	size := 0
	start := len(all)
	for start > 0 {
		l := shorten(all[start-1], logLineCap)
		if size+len(l)+1 > cap {
			break
		}
		size += len(l) + 1
		start--
		all[start] = l
	}
	return all[start:], start
}

// renderLog is the prompt part of one daily log: its summary lines, of
// the project tagged tag only ("" : all of them).
func renderLog(name, tag string) func(doc string, size int64) (string, string) {
	return func(doc string, size int64) (string, string) {
		lines, dropped, others := logSummary(doc, logSummaryCap, tag)
		if len(lines) == 0 {
			return "", ""
		}
		note := ""
		switch {
		case (dropped > 0 || size > int64(len(doc))) && tag != "":
			note = fmt.Sprintf("[%s: only this project's newest %d entries are shown, as summary lines — workspace_read(%q) has the older ones, the details and other projects']", name, len(lines), name)
		case dropped > 0 || size > int64(len(doc)):
			note = fmt.Sprintf("[%s: only the newest %d entries are shown, as summary lines — workspace_read(%q) has the older ones and the details]", name, len(lines), name)
		case others > 0:
			note = fmt.Sprintf("[%s: %d entries of other projects are not shown]", name, others)
		}
		return strings.Join(lines, "\n") + "\n", note
	}
}

// olderLogsNote says how many daily logs before yesterday exist and how to
// read them, so the model knows history it does not see is there; "" when
// there are none.
func (w *Workspace) olderLogsNote(yesterday string) string {
	dir := w.path(LogDir)
	fi, err := os.Stat(dir)
	if err != nil {
		return ""
	}
	// Cached while the directory is unchanged (adding or removing a log
	// changes its mtime): the prompt is built before every request.
	key := dir + "\x00older\x00" + yesterday
	w.cacheMu.Lock()
	c, hit := w.cache[key]
	w.cacheMu.Unlock()
	if hit && unchanged(c.info, fi) {
		return c.note
	}
	note := w.listOlderLogs(dir, yesterday)
	w.cacheMu.Lock()
	if len(w.cache) >= maxCacheItems {
		clear(w.cache)
	}
	w.cache[key] = cached{info: fi, note: note}
	w.cacheMu.Unlock()
	return note
}

func (w *Workspace) listOlderLogs(dir, yesterday string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var older []string
	for _, e := range entries {
		if !e.IsDir() && isLogName(e.Name()) && strings.TrimSuffix(e.Name(), ".md") < yesterday {
			older = append(older, LogDir+"/"+e.Name())
		}
	}
	if len(older) == 0 {
		return ""
	}
	newest := reverse(older[max(len(older)-olderLogsShown, 0):])
	return fmt.Sprintf("[%d older daily logs are not loaded (newest: %s, …); they are in %s — read one with workspace_read(%q)]",
		len(older), strings.Join(newest, ", "), w.path(LogDir), newest[0])
}

func reverse(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
