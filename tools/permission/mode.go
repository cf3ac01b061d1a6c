package permission

import "fmt"

// Modes in the order the TUI's mode key cycles through them.
var Modes = []Mode{Ask, AutoEdit, Yolo}

// SetMode changes the mode for every decision from now on (the TUI's
// mode key, or "allow all edits this session" in its dialog). Session
// approvals stay. It is safe while agents run.
func (p *Policy) SetMode(m Mode) error {
	switch m {
	case Ask, AutoEdit, Yolo:
	default:
		return fmt.Errorf("permission mode %q: want ask, auto-edit or yolo", m)
	}
	p.switched.Store(&m)
	return nil
}

// CurrentMode is the mode decisions are made in now.
func (p *Policy) CurrentMode() Mode { return p.mode() }
