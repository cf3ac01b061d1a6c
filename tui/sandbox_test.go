package tui

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"polly/agent/llmtest"
)

// The dialog offers "allow once with network" for a command; pressing w
// runs it with the network (a loopback listener sees the connection),
// and the sandbox is named in the dialog.
func TestPermissionDialogAllowWithNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"))
			c.Close()
		}
	}()
	call := fmt.Sprintf(`{"command":"curl -s -m 5 http://%s/","network":true}`, l.Addr())
	h := newHarness(t, harnessOpts{mode: "ask"}, llmtest.Call("run_command", call), llmtest.Call("run_command", call), llmtest.Text("fetched"))
	h.prompt("fetch it")
	h.until("the dialog", func() bool {
		scr := h.screen()
		return strings.Contains(scr, "w allow once with network") && strings.Contains(scr, "asks for network access")
	})
	h.answerable()
	h.key("y") // allowed, but without network: the sandbox blocks the connection
	h.until("the second dialog", func() bool { return len(h.m.perm.asks) == 1 && h.srv.Calls() == 2 })
	h.answerable()
	if n := conns.Load(); n != 0 {
		t.Fatalf("y (no network) connected %d times", n)
	}
	h.key("w")
	h.until("the run to end", h.idle)
	if n := conns.Load(); n != 1 {
		t.Fatalf("w (with network): %d connections, want 1", n)
	}
	if out := h.srv.Last().LastTurn().Content; !strings.Contains(out, "exit code: 0") || !strings.HasSuffix(out, "ok") {
		t.Fatalf("the model got %q", out)
	}
}

// Without Landlock the status bar says commands ask.
func TestStatusBarShowsMissingSandbox(t *testing.T) {
	t.Setenv("POLLY_SANDBOX_PROBE", "fail")
	h := newHarness(t, harnessOpts{mode: "auto-edit"})
	if scr := h.screen(); !strings.Contains(scr, "no sandbox: asking") {
		t.Fatalf("status bar:\n%s", scr)
	}
}
