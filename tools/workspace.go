package tools

import (
	"context"
)

// Memory is the workspace memory the workspace_* tools write and read.
type Memory interface {
	SaveFact(section, fact string) (string, error)
	LogError(errText, fix string) (string, error)
	LogLearning(insight string) (string, error)
	RequestFeature(desc string) (string, error)
	DailyLog(entry string) (string, error)
	Read(file string) (string, error)
}

type saveFactArgs struct {
	Section string `json:"section" jsonschema:"MEMORY.md section: Project Facts, Preferences, Data Sources, Decisions (or a new one)"`
	Fact    string `json:"fact" jsonschema:"one durable fact, as a full sentence"`
}

type logErrorArgs struct {
	Error string `json:"error" jsonschema:"the error as it appeared (message, command, context)"`
	Fix   string `json:"fix" jsonschema:"what fixed it, so it can be reused next time"`
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

// WorkspaceTools are the workspace_* tools over the workspace memory.
func WorkspaceTools(m Memory) []Tool {
	write := func(f func() (string, error)) (Result, error) {
		where, err := f()
		if err != nil {
			return Result{}, err
		}
		return Result{Output: where}, nil
	}
	memAccess := func(file string) Access { return Access{Kind: AccessMemory, Paths: []string{file}} }
	return []Tool{
		New("workspace_save_fact", description("workspace_save_fact"),
			func(ctx context.Context, a saveFactArgs) (Result, error) {
				return write(func() (string, error) { return m.SaveFact(a.Section, a.Fact) })
			}, nil).WithAccess(func(ctx context.Context, a saveFactArgs) (Access, error) { return memAccess("MEMORY.md"), nil }),
		New("workspace_log_error", description("workspace_log_error"),
			func(ctx context.Context, a logErrorArgs) (Result, error) {
				return write(func() (string, error) { return m.LogError(a.Error, a.Fix) })
			}, nil).WithAccess(func(ctx context.Context, a logErrorArgs) (Access, error) {
			return memAccess(".learnings/ERRORS.md"), nil
		}),
		New("workspace_log_learning", description("workspace_log_learning"),
			func(ctx context.Context, a insightArgs) (Result, error) {
				return write(func() (string, error) { return m.LogLearning(a.Insight) })
			}, nil).WithAccess(func(ctx context.Context, a insightArgs) (Access, error) {
			return memAccess(".learnings/LEARNINGS.md"), nil
		}),
		New("workspace_request_feature", description("workspace_request_feature"),
			func(ctx context.Context, a featureArgs) (Result, error) {
				return write(func() (string, error) { return m.RequestFeature(a.Description) })
			}, nil).WithAccess(func(ctx context.Context, a featureArgs) (Access, error) {
			return memAccess(".learnings/FEATURE_REQUESTS.md"), nil
		}),
		New("workspace_daily_log", description("workspace_daily_log"),
			func(ctx context.Context, a dailyArgs) (Result, error) {
				return write(func() (string, error) { return m.DailyLog(a.Entry) })
			}, nil).WithAccess(func(ctx context.Context, a dailyArgs) (Access, error) { return memAccess("memory/"), nil }),
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
