package permission

import (
	"path/filepath"
	"strings"

	"polly/memory/store"
	"polly/tools"
)

// Secrets is what the sandbox hides from commands (sandbox.DefaultDenyRead
// with sandbox.deny_read): reading it asks in every mode but yolo, for the
// file tools as for commands. Polly's own files (its config, trust store
// and state: API keys) are never read by a tool, even in yolo.
type Secrets struct {
	Paths []string // absolute; Polly's own among them
	Polly []string // absolute: never readable
	Home  string   // for ~ and $HOME in command lines
}

// under reports the first of paths that p is or is below.
func under(p string, paths []string) (string, bool) {
	for _, s := range paths {
		if p == s || strings.HasPrefix(p, s+string(filepath.Separator)) {
			return s, true
		}
	}
	return "", false
}

// secretOf judges one absolute path: which secret it reads, and whether
// that is one of Polly's own files.
func (s Secrets) secretOf(p string) (secret string, polly, ok bool) {
	if secret, ok := under(p, s.Polly); ok {
		return secret, true, true
	}
	secret, ok = under(p, s.Paths)
	return secret, false, ok
}

// mentioned finds a secret a command line names (as an absolute path, with
// ~, $HOME or ${HOME}). It only decides when to ask: the sandbox hides the
// set from a command whatever the line says.
func (s Secrets) mentioned(line string) (secret string, polly, ok bool) {
	for _, list := range [][]string{s.Polly, s.Paths} {
		for _, p := range list {
			spellings := []string{p}
			if rel, err := filepath.Rel(s.Home, p); s.Home != "" && err == nil && !strings.HasPrefix(rel, "..") {
				spellings = append(spellings, "~/"+rel, "$HOME/"+rel, "${HOME}/"+rel)
			}
			for _, sp := range spellings {
				if strings.Contains(line, sp) {
					_, isPolly := under(p, s.Polly)
					return p, isPolly, true
				}
			}
		}
	}
	return "", false, false
}

// readSecret decides a file tool's read of a secret, when it reads one.
func (p *Policy) readSecret(tool string, places []place) (Decision, bool) {
	for _, pl := range places {
		for _, path := range []string{pl.given, pl.real} {
			if path == "" {
				continue
			}
			secret, polly, ok := p.secrets.secretOf(path)
			if !ok {
				continue
			}
			d := Decision{Kind: "read", Target: path, Scope: store.ScopeMode, Protected: true,
				Key: "read-secret\x00" + secret, Covers: "reads of " + secret}
			switch {
			case polly:
				d.Verdict, d.Reason = Refused, path+" is Polly's own configuration or state (it holds API keys): no tool reads it"
			case p.mode() == Yolo:
				d.Verdict, d.Reason = Allowed, "mode yolo (reads "+secret+", which holds credentials)"
			default:
				d.Verdict, d.Reason = Asks, "reads "+path+", which holds credentials ("+secret+" is in the deny-read set); asked in every mode but yolo"
			}
			return d, true
		}
	}
	return Decision{}, false
}

// execSecret decides a command line that names a secret: Polly's own files
// are refused; the rest asks (yolo reads them) and, allowed, the command's
// sandbox shows the deny-read set but Polly's files. Without the sandbox
// (contained false) every command asks already, for that reason.
func (p *Policy) execSecret(d Decision, a tools.Access, contained bool) (Decision, bool) {
	secret, polly, ok := p.secrets.mentioned(a.Command)
	if !ok {
		return d, false
	}
	switch {
	case polly:
		d.Verdict, d.Protected, d.Reason = Refused, true, "names "+secret+", Polly's own configuration or state (it holds API keys): no command reads it"
		return d, true
	case !contained:
		return d, false
	case p.mode() == Yolo:
		d.Grant.ReadSecrets = true
		return d, false // yolo goes on, with the secrets readable
	}
	d.Verdict, d.Protected, d.Reason = Asks, true, "reads "+secret+", which holds credentials (the sandbox hides it from commands); asked in every mode but yolo"
	d.Grant.ReadSecrets = true
	return d, true
}
