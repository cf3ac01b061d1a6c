package permission

import (
	"fmt"
	"strings"

	"polly/memory/store"
	"polly/tools"
)

// decideMemory judges a write to the workspace memory (issue 25). The
// memory enters the system prompt of every later session in every
// project, so a write is judged like a file edit: mode ask asks (the
// dialog shows the diff), auto-edit and yolo allow. A write by a session
// that has read untrusted content (fetched pages, MCP results) asks in
// every mode but yolo, and no allow rule lifts that: the text may be what
// a page told the model to keep. Headless, asking means a denial the model
// passes on. Deny and ask rules naming the tool apply as everywhere.
func (p *Policy) decideMemory(tool string, a tools.Access) Decision {
	file := strings.Join(a.Paths, ", ")
	d := Decision{Kind: "memory", Target: file, Scope: store.ScopeMode,
		Key: "memory\x00" + file, Covers: "writes to " + file + " of the workspace memory"}
	anyCall := func(r compiledRule) bool { return r.Pattern == "" }
	if rd, ok := p.denyOrAsk(d, tool, anyCall); ok {
		return rd
	}
	why := "writes " + file + " of the workspace memory, which enters every later session in every project"
	if len(a.Untrusted) > 0 {
		// Approving clean writes does not approve writes after a page was read.
		d.Key += "\x00untrusted"
		d.Covers += " after reading untrusted content"
		if p.mode() == Yolo {
			d.Verdict, d.Reason = Allowed, "memory writes run in mode yolo, also after reading untrusted content"
			return d
		}
		d.Verdict = Asks
		d.Reason = fmt.Sprintf("%s, and this session has read untrusted content (%s) that may have asked for it", why, strings.Join(a.Untrusted, ", "))
		d.hint = "read what you wanted to save and save it themselves if they agree, or re-run with --yolo"
		return d
	}
	if rd, ok := p.allowOrYolo(d, tool, anyCall, "memory writes run in mode yolo"); ok {
		return rd
	}
	if p.mode() == AutoEdit {
		d.Verdict, d.Reason = Allowed, "memory writes are applied in mode auto-edit (and shown)"
		return d
	}
	d.Verdict, d.Reason = Asks, why+"; it needs approval in mode ask"
	d.hint = fmt.Sprintf("re-run with --mode auto-edit or --yolo, or add the rule %q to permissions.allow in the config", tool)
	return d
}
