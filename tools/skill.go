package tools

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// SkillBook loads Agent Skills by name (workspace/skills implements it
// through a small adapter in agent/app).
type SkillBook interface {
	// LoadSkill returns the skill's folder, its instructions (SKILL.md
	// without front matter) and the files of its folder, relative to it.
	LoadSkill(name string) (dir, body string, files []string, err error)
}

type skillArgs struct {
	Name string `json:"name" jsonschema:"the skill's name, as listed under Skills in the system prompt"`
}

// SkillTool is skill: it loads one skill's instructions on demand, so the
// system prompt only carries names and descriptions. Loading a skill only
// reads files, so it never asks.
func SkillTool(book SkillBook) Tool {
	return New("skill", description("skill"),
		func(ctx context.Context, a skillArgs) (Result, error) {
			dir, body, files, err := book.LoadSkill(strings.TrimSpace(a.Name))
			if err != nil {
				return Result{}, err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "Skill %s (folder %s)\n\n%s", a.Name, dir, strings.TrimRight(body, "\n"))
			if len(files) > 0 {
				fmt.Fprintf(&b, "\n\nFiles in %s (read them with read_file when the instructions need them):\n", dir)
				for _, f := range files {
					b.WriteString("- " + filepath.ToSlash(f) + "\n")
				}
			}
			return Result{Output: strings.TrimRight(b.String(), "\n"), Keep: true}, nil
		}, nil)
}
