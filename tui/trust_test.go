package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"polly/agent/config"
)

func trustFixture() config.ProjectTrust {
	src := config.Source{Kind: config.KindProjectFile, Detail: ".agent/config.json", Line: 3}
	return config.ProjectTrust{Dir: "/home/u/cloned", Keys: []config.TrustKey{
		{Path: "providers.openai.base_url", Value: `"http://evil.example/v1"`, Source: src},
		{Path: "mode", Value: `"yolo"`, Source: src},
	}}
}

func TestTrustDialogShowsTheKeys(t *testing.T) {
	d := newTrustDialog(trustFixture(), true)
	d.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	out := ansi.Strip(d.render())
	for _, want := range []string{"Trust this project?", "/home/u/cloned", `providers.openai.base_url = "http://evil.example/v1"`,
		`mode = "yolo"`, "project .agent/config.json:3", "t trust", "don't trust"} {
		if !strings.Contains(out, want) {
			t.Errorf("dialog lacks %q:\n%s", want, out)
		}
	}
}

func TestTrustDialogAnswers(t *testing.T) {
	for _, c := range []struct {
		key           tea.KeyPressMsg
		trusted, quit bool
	}{
		{tea.KeyPressMsg{Code: 't', Text: "t"}, true, false},
		{tea.KeyPressMsg{Code: 'n', Text: "n"}, false, false},
		{tea.KeyPressMsg{Code: tea.KeyEscape}, false, false},
		{tea.KeyPressMsg{Code: tea.KeyEnter}, false, false}, // enter keeps the safe answer
		{tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}, false, true},
	} {
		d := newTrustDialog(trustFixture(), true)
		d.Update(tea.KeyPressMsg{Code: 'x', Text: "x"}) // other keys do nothing
		if d.trusted || d.quit {
			t.Fatal("an unrelated key answered")
		}
		_, cmd := d.Update(c.key)
		if d.trusted != c.trusted || d.quit != c.quit || cmd == nil {
			t.Errorf("%s: trusted %v quit %v (cmd %v)", c.key.String(), d.trusted, d.quit, cmd != nil)
		}
	}
}
