package summarize

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"polly/memory/task"
)

// FactsSection is the optional sixth part: durable facts that outlive the
// task (preferences, decisions, constraints, environment), for MEMORY.md.
const FactsSection = "DURABLE FACTS"

// Parsed is a summary split into its parts.
type Parsed struct {
	Sections map[string]string // canonical section name → body
	Facts    []string          // the DURABLE FACTS bullets
}

// labels maps the ways models write a part's name to the canonical one.
// Compiled on first use, not at start-up.
var labels = sync.OnceValue(func() []sectionLabel {
	return []sectionLabel{
		{regexp.MustCompile(`^(?i)current\s+task`), "CURRENT TASK"},
		{regexp.MustCompile(`^(?i)completed(\s+so\s+far)?`), "COMPLETED SO FAR"},
		{regexp.MustCompile(`^(?i)(in[\s_-]+progress(\s*[/&,–—-]\s*|\s+and\s+|\s+)next(\s+steps?)?|in[\s_-]+progress|next\s+steps?)`), "IN PROGRESS / NEXT"},
		{regexp.MustCompile(`^(?i)key\s+facts`), "KEY FACTS"},
		{regexp.MustCompile(`^(?i)(blocked(\s*[/&,–—-]\s*|\s+and\s+|\s+)issues|blocked|blockers|open\s+issues|issues)`), "BLOCKED / ISSUES"},
		{regexp.MustCompile(`^(?i)durable\s+facts`), FactsSection},
	}
})

type sectionLabel struct {
	re   *regexp.Regexp
	name string
}

// lead strips what may come before a label: a heading, a list number or
// bullet, bold or underline markup.
var lead = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(#{1,6}\s*)?([-*•]\s+)?(\d+[.)]\s*)?(\*\*|__)?\s*`)
})

// labelLine recognises a line that starts a part: "## CURRENT TASK",
// "**Current task:** …", "1. **CURRENT TASK**: …", "CURRENT TASK:". A bare
// label without markup needs a colon or to stand alone in capitals, so an
// ordinary sentence ("Completed so far we …") does not split a part.
func labelLine(line string) (name, rest string, ok bool) {
	m := lead().FindStringSubmatchIndex(line)
	marked := m[2] >= 0 || m[6] >= 0 || m[8] >= 0 // heading, number or bold
	body := line[m[1]:]
	for _, l := range labels() {
		loc := l.re.FindStringIndex(body)
		if loc == nil {
			continue
		}
		after := body[loc[1]:]
		if after != "" && isWordChar(after[0]) {
			continue // "Issues" inside "Issuesome…"
		}
		after = strings.TrimLeft(after, " \t")
		after = strings.TrimPrefix(strings.TrimPrefix(after, "**"), "__")
		after = strings.TrimLeft(after, " \t")
		colon := false
		for _, sep := range []string{":", "—", "–", "- "} {
			if strings.HasPrefix(after, sep) {
				after, colon = after[len(sep):], true
				break
			}
		}
		after = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(after), "**"), "__"))
		standalone := after == "" && strings.ToUpper(body[:loc[1]]) == body[:loc[1]]
		if !marked && !colon && !standalone {
			return "", "", false
		}
		if marked && !colon && after != "" && m[2] < 0 {
			// "1. Completed the parser" is an item, not a part.
			return "", "", false
		}
		return l.name, after, true
	}
	return "", "", false
}

func isWordChar(b byte) bool {
	return b == '_' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
}

// Parse splits a summarizer reply into its parts, whatever common form
// they take (headings, bold labels, numbered items). It fails, saying
// why, when fewer than two of the five parts are there: such a reply is
// not a structured summary.
func Parse(reply string) (Parsed, error) {
	p := Parsed{Sections: map[string]string{}}
	var cur string
	bodies := map[string]*strings.Builder{}
	inFence := false
	for _, line := range strings.Split(strings.ReplaceAll(reply, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		if !inFence {
			if name, rest, ok := labelLine(line); ok {
				cur = name
				if bodies[cur] == nil {
					bodies[cur] = &strings.Builder{}
				}
				if rest != "" {
					bodies[cur].WriteString(rest + "\n")
				}
				continue
			}
		}
		if cur != "" {
			bodies[cur].WriteString(line + "\n")
		}
	}
	var found []string
	for _, sec := range Sections {
		if b, ok := bodies[sec]; ok {
			p.Sections[sec] = strings.TrimSpace(b.String())
			found = append(found, sec)
		}
	}
	if b, ok := bodies[FactsSection]; ok {
		p.Facts = bullets(b.String())
	}
	switch {
	case len(found) == 0:
		return p, fmt.Errorf("the reply has none of the five parts (%s)", strings.Join(Sections, ", "))
	case len(found) < 2:
		return p, fmt.Errorf("the reply has only %s of the five parts", found[0])
	}
	return p, nil
}

// bullets are the items of a list, without markers; "none" is no item.
func bullets(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		l = strings.TrimSpace(strings.TrimLeft(l, "-*•+"))
		if m := regexp.MustCompile(`^\d+[.)]\s*`).FindString(l); m != "" {
			l = l[len(m):]
		}
		l = strings.TrimSpace(l)
		low := strings.ToLower(strings.Trim(l, " .()_*"))
		if l == "" || low == "none" || low == "n/a" || low == "no durable facts" || low == "nothing new" {
			continue
		}
		out = append(out, l)
	}
	return out
}

// Text renders the parts in the canonical form: the five headings, in
// order, missing ones marked (the check fills them).
func (p Parsed) Text() string {
	var b strings.Builder
	for i, sec := range Sections {
		if i > 0 {
			b.WriteString("\n\n")
		}
		body, ok := p.Sections[sec]
		if !ok || body == "" {
			body = "(not stated by the summarizer)"
		}
		b.WriteString("## " + sec + "\n" + body)
	}
	return b.String() + "\n"
}

// Cap keeps a summary under maxChars: every part keeps a share in
// proportion to its size (at least 300 characters), cut at a line.
func (p Parsed) Cap(maxChars int) (Parsed, bool) {
	total := 0
	for _, s := range p.Sections {
		total += len(s)
	}
	if maxChars <= 0 || total <= maxChars {
		return p, false
	}
	out := Parsed{Sections: map[string]string{}, Facts: p.Facts}
	for sec, body := range p.Sections {
		share := max(300, maxChars*len(body)/total)
		if len(body) > share {
			cut := task.Clip(body, share)
			if i := strings.LastIndexByte(cut, '\n'); i > share/2 {
				cut = cut[:i]
			}
			body = strings.TrimRight(cut, "…") + "\n[… cut by the harness to the summary size cap]"
		}
		out.Sections[sec] = body
	}
	return out, true
}

// statusMark finds a plan status written as a marker: "[DONE]",
// "[in progress]", "(todo)", "✅". statusWord finds one written as a bare
// word in capitals (DONE, IN PROGRESS, TODO), which only counts on a line
// that names a plan step ("3 TODO comments in main.go" keeps its word).
var (
	statusMark = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`[ \t]*[\[(](?i:done|in[ _-]?progress|todo|pending|completed|not started)[\])]|[ \t]*(?:✅|✔️?|☑️?|⏳|🔄)`)
	})
	statusWord = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`[ \t]*\b(?:DONE|IN[ _]PROGRESS|TODO)\b:?`)
	})
)

// stripStatuses removes the plan-status markers of a line, and its bare
// status words when it names a plan step.
func stripStatuses(l string, namesStep bool) string {
	out := statusMark().ReplaceAllString(l, "")
	if namesStep {
		out = statusWord().ReplaceAllString(out, "")
	}
	if out == l {
		return l
	}
	// "- [DONE] title" → "- title"; "1. **A** — [DONE]" → "1. **A**"
	out = strings.TrimRight(out, " \t—–-:")
	if t := strings.TrimSpace(out); t == "-" || t == "*" || t == "" {
		return ""
	}
	return strings.Replace(out, "-  ", "- ", 1)
}

// Check compares a summary with the task state and completes it: the
// original request, every follow-up, the name of every plan step and the
// files read and written, each added where missing. Plan statuses are
// removed, never written: a summary stays in the context while the plan
// moves on, and a status in it would go stale (the task block at the end
// of every request carries the live ones). It returns the text in the
// canonical form and what it changed.
func Check(summary string, st *task.State) (string, []string) {
	p, err := Parse(summary)
	if err != nil && len(p.Sections) == 0 {
		p.Sections = map[string]string{"KEY FACTS": strings.TrimSpace(summary)}
	}
	return p.Check(st)
}

// Check is Check on parsed parts.
func (p Parsed) Check(st *task.State) (string, []string) {
	secs := map[string]string{}
	for k, v := range p.Sections {
		secs[k] = v
	}
	var added []string
	for _, sec := range Sections {
		if strings.TrimSpace(secs[sec]) == "" {
			added = append(added, "section "+sec)
		}
	}
	appendTo := func(sec, line string) {
		if secs[sec] != "" {
			secs[sec] += "\n"
		}
		secs[sec] += line
	}
	// No plan status survives, on any line: they are the task block's.
	var titles []string
	if st != nil {
		for _, step := range st.Plan {
			if t := strings.ToLower(strings.TrimSpace(step.Title)); t != "" {
				titles = append(titles, t)
			}
		}
	}
	stripped := 0
	for _, sec := range Sections {
		lines := strings.Split(secs[sec], "\n")
		for k, l := range lines {
			names := false
			for _, t := range titles {
				if strings.Contains(strings.ToLower(l), t) {
					names = true
					break
				}
			}
			if c := stripStatuses(l, names); c != l {
				lines[k] = c
				stripped++
			}
		}
		secs[sec] = strings.Join(lines, "\n")
	}
	if stripped > 0 {
		added = append(added, fmt.Sprintf("%d plan status(es) removed", stripped))
	}
	if st != nil {
		all := func() string {
			var b strings.Builder
			for _, sec := range Sections {
				b.WriteString(secs[sec] + "\n")
			}
			return b.String()
		}
		norm := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

		// The request and every follow-up.
		if req := strings.TrimSpace(st.OriginalRequest); req != "" && !strings.Contains(norm(secs["CURRENT TASK"]), norm(task.Clip(req, 200))) {
			appendTo("CURRENT TASK", "Original request (from the task state; the task block carries it whole): "+task.Clip(req, 600))
			added = append(added, "the original request")
		}
		for i, f := range st.FollowUps {
			if !strings.Contains(norm(all()), norm(strings.TrimSuffix(task.Clip(strings.TrimSpace(f), 160), "…"))) {
				appendTo("CURRENT TASK", fmt.Sprintf("Follow-up %d from the user: %s", i+1, task.Clip(strings.TrimSpace(f), 400)))
				added = append(added, fmt.Sprintf("follow-up %d", i+1))
			}
		}

		// Plan steps by name, without status.
		var missing []string
		text := strings.ToLower(all())
		for i, step := range st.Plan {
			title := strings.TrimSpace(step.Title)
			if title == "" || strings.Contains(text, strings.ToLower(title)) {
				continue
			}
			missing = append(missing, fmt.Sprintf("%d. %s", i+1, title))
			added = append(added, fmt.Sprintf("step %d. %s", i+1, title))
		}
		if len(missing) > 0 {
			appendTo("KEY FACTS", "Plan steps (from the task state; their live statuses are in the task block): "+strings.Join(missing, "; "))
		}

		// Files read and written.
		text = all()
		var written, read []string
		for _, f := range st.Files {
			if !strings.Contains(text, f) {
				written = append(written, f)
			}
		}
		for _, f := range st.FilesRead {
			if !strings.Contains(text, f) && !contains(st.Files, f) {
				read = append(read, f)
			}
		}
		if len(written) > 0 {
			appendTo("KEY FACTS", "Files written (from the task state): "+strings.Join(written, ", "))
			for _, f := range written {
				added = append(added, "file "+f)
			}
		}
		if len(read) > 0 {
			appendTo("KEY FACTS", "Files read (from the task state): "+strings.Join(read, ", "))
			for _, f := range read {
				added = append(added, "file "+f)
			}
		}
	}
	return Parsed{Sections: secs}.Text(), added
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
