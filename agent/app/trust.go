package app

import (
	"fmt"

	"polly/agent/config"
)

// TrustProject records the user's trust in the project settings cfg was
// loaded with and returns the configuration loaded again with them
// applied. The TUI's trust dialog and `polly trust` share it.
func TrustProject(cfg *config.Config) (*config.Config, error) {
	if err := cfg.TrustProject(); err != nil {
		return nil, fmt.Errorf("trust project: %w", err)
	}
	next, err := cfg.Reload()
	if err != nil {
		return nil, err
	}
	if err := next.CheckRuleTools(ToolNames()); err != nil {
		return nil, err
	}
	return next, nil
}
