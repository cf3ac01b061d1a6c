package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// PlanStep is one step of the task plan as the model sends it.
type PlanStep struct {
	Title  string `json:"title" jsonschema:"what the step does, short and concrete"`
	Status string `json:"status" jsonschema:"todo, in_progress or done"`
}

type planArgs struct {
	Steps []PlanStep `json:"steps" jsonschema:"the whole plan, in order; send every step each time (this replaces the stored plan)"`
}

// PlanSetter stores a plan and returns it rendered.
type PlanSetter func(steps []PlanStep) string

// TaskPlanTool is task_plan, bound to one agent's task state by set.
func TaskPlanTool(set PlanSetter) Tool {
	return New("task_plan", description("task_plan"),
		func(ctx context.Context, a planArgs) (Result, error) {
			if len(a.Steps) == 0 {
				return Result{}, fmt.Errorf("steps is empty; send the whole plan (at least one step)")
			}
			if len(a.Steps) > 50 {
				return Result{}, fmt.Errorf("%d steps is too many; keep the plan under 50 steps", len(a.Steps))
			}
			for i, s := range a.Steps {
				if strings.TrimSpace(s.Title) == "" {
					return Result{}, fmt.Errorf("step %d has an empty title", i+1)
				}
			}
			return Result{Output: "Plan stored:\n" + set(a.Steps)}, nil
		},
		func(s *jsonschema.Schema) { Enum(s, []string{"todo", "in_progress", "done"}, "steps", "[]", "status") })
}
