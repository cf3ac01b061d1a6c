package tools

import (
	"context"

	"polly/workspace"
)

// Memory is the workspace memory the workspace_* tools write and read.
// A write is built as an edit first, so the permission gate can show its
// diff before anything changes.
type Memory interface {
	FactEdit(p workspace.Provenance, section, fact string) (workspace.Edit, error)
	ErrorEdit(p workspace.Provenance, tool, errText, fix string) (workspace.Edit, error)
	LearningEdit(p workspace.Provenance, insight string) (workspace.Edit, error)
	FeatureEdit(p workspace.Provenance, desc string) (workspace.Edit, error)
	LogEdit(p workspace.Provenance, entry string) (workspace.Edit, error)
	Preview(e workspace.Edit) (before, after string, err error)
	Apply(e workspace.Edit) (string, error)
	Read(file string) (string, error)
}

// WithProvenance marks ctx with who is calling a tool — session, project,
// persona, and the untrusted sources the session has read — for the
// provenance of what a workspace_* tool writes and for the gate's
// decision on it.
func WithProvenance(ctx context.Context, p workspace.Provenance) context.Context {
	return withValue(ctx, p)
}

// ProvenanceOf returns the provenance set by WithProvenance.
func ProvenanceOf(ctx context.Context) workspace.Provenance {
	return valueOf[workspace.Provenance](ctx)
}

type saveFactArgs struct {
	Section string `json:"section" jsonschema:"MEMORY.md section: Project Facts, Preferences, Data Sources, Decisions (or a new one)"`
	Fact    string `json:"fact" jsonschema:"one durable fact, as a full sentence"`
}

type logErrorArgs struct {
	Error string `json:"error" jsonschema:"the error as it appeared (message, command, context)"`
	Fix   string `json:"fix" jsonschema:"what fixed it, so it can be reused next time"`
	Tool  string `json:"tool,omitempty" jsonschema:"the tool that failed: the note returns when it fails alike"`
}

type insightArgs struct {
	Insight string `json:"insight" jsonschema:"a lesson worth keeping: what works, what to avoid"`
}

type featureArgs struct {
	Description string `json:"description" jsonschema:"a capability you missed and why it would help"`
}

type dailyArgs struct {
	Entry string `json:"entry" jsonschema:"what was done or decided, in a few lines"`
}

type readArgs struct {
	File string `json:"file" jsonschema:"a file inside the workspace, e.g. MEMORY.md, .learnings/ERRORS.md, memory/2026-11-25.md"`
}

// memoryWrite is a workspace_* tool that writes: its access is the edit's
// diff (and the untrusted sources the session read), its run applies the
// edit with the caller's provenance.
func memoryWrite[A any](m Memory, name string, edit func(p workspace.Provenance, a A) (workspace.Edit, error)) Tool {
	return New(name, description(name),
		func(ctx context.Context, a A) (Result, error) {
			e, err := edit(ProvenanceOf(ctx), a)
			if err != nil {
				return Result{}, err
			}
			before, after, err := m.Preview(e)
			if err != nil {
				return Result{}, err
			}
			where, err := m.Apply(e)
			if err != nil {
				return Result{}, err
			}
			return Result{Output: where, Diff: memoryDiff(e.File, before, after)}, nil
		}, nil).
		WithAccess(func(ctx context.Context, a A) (Access, error) {
			p := ProvenanceOf(ctx)
			e, err := edit(p, a)
			if err != nil {
				return Access{}, err
			}
			before, after, err := m.Preview(e)
			if err != nil {
				return Access{}, err
			}
			return MemoryAccess(e.File, before, after, p.Untrusted), nil
		})
}

// MemoryAccess is the access of a write to a workspace memory file (file
// is workspace-relative) that turns before into after, by a session that
// has read the untrusted sources given.
func MemoryAccess(file, before, after string, untrusted []string) Access {
	diff := memoryDiff(file, before, after)
	if diff == "" {
		diff = file + ": no change (already there)"
	}
	return Access{Kind: AccessMemory, Paths: []string{file}, Preview: clip(diff, previewMaxBytes), Untrusted: untrusted}
}

// memoryDiff is a unified diff of a memory file as a person reads it
// (provenance markers shown as notes); "" for no change.
func memoryDiff(file, before, after string) string {
	if before == after {
		return ""
	}
	return udiffLabels(file, workspace.Readable(before), workspace.Readable(after), before == "")
}

// WorkspaceTools are the workspace_* tools over the workspace memory.
func WorkspaceTools(m Memory) []Tool {
	return []Tool{
		memoryWrite(m, "workspace_save_fact", func(p workspace.Provenance, a saveFactArgs) (workspace.Edit, error) {
			return m.FactEdit(p, a.Section, a.Fact)
		}),
		memoryWrite(m, "workspace_log_error", func(p workspace.Provenance, a logErrorArgs) (workspace.Edit, error) {
			return m.ErrorEdit(p, a.Tool, a.Error, a.Fix)
		}),
		memoryWrite(m, "workspace_log_learning", func(p workspace.Provenance, a insightArgs) (workspace.Edit, error) {
			return m.LearningEdit(p, a.Insight)
		}),
		memoryWrite(m, "workspace_request_feature", func(p workspace.Provenance, a featureArgs) (workspace.Edit, error) {
			return m.FeatureEdit(p, a.Description)
		}),
		memoryWrite(m, "workspace_daily_log", func(p workspace.Provenance, a dailyArgs) (workspace.Edit, error) {
			return m.LogEdit(p, a.Entry)
		}),
		New("workspace_read", description("workspace_read"),
			func(ctx context.Context, a readArgs) (Result, error) {
				text, err := m.Read(a.File)
				if err != nil {
					return Result{}, err
				}
				return Result{Output: text}, nil
			}, nil),
	}
}
