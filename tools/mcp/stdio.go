package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport starts a stdio server and speaks newline-delimited JSON
// with it, like the SDK's CommandTransport, but passes over the lines of
// stdout that are not JSON (a banner, a log line some servers print) into
// the stderr tail instead of failing the connection on them.
type stdioTransport struct {
	cmd   *exec.Cmd
	noise io.Writer // where non-JSON stdout lines go
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	r := &jsonLines{r: bufio.NewReaderSize(stdout, 64<<10), noise: t.noise}
	w := &serverStdin{WriteCloser: stdin, cmd: t.cmd, grace: time.Second}
	return (&sdk.IOTransport{Reader: r, Writer: w}).Connect(ctx)
}

// jsonLines yields the lines of r that start like JSON ('{' or '['); the
// others are written to noise.
type jsonLines struct {
	r     *bufio.Reader
	noise io.Writer
	buf   []byte // the rest of the current JSON line
}

func (j *jsonLines) Read(p []byte) (int, error) {
	for len(j.buf) == 0 {
		line, err := j.r.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if t[0] == '{' || t[0] == '[' {
				j.buf = line
			} else if j.noise != nil {
				fmt.Fprintf(j.noise, "stdout (not JSON, passed over): %s\n", t)
			}
		}
		if err != nil {
			if len(j.buf) > 0 {
				break
			}
			return 0, err
		}
	}
	n := copy(p, j.buf)
	j.buf = j.buf[n:]
	return n, nil
}

// Close does nothing: the connection ends by closing the server's stdin.
func (j *jsonLines) Close() error { return nil }

// serverStdin is the server's standard input. Closing it ends the server
// as the MCP spec asks: close stdin, wait, then SIGTERM and SIGKILL to its
// process group.
type serverStdin struct {
	io.WriteCloser
	cmd   *exec.Cmd
	grace time.Duration
}

func (s *serverStdin) Close() error {
	cerr := s.WriteCloser.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if sig != 0 {
			_ = syscall.Kill(-s.cmd.Process.Pid, sig)
		}
		select {
		case err := <-done:
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				err = nil // a server that exits on its own terms is not an error here
			}
			return errors.Join(cerr, err)
		case <-time.After(s.grace):
		}
	}
	return errors.New("the server did not exit after SIGKILL")
}

// spawnedTransport is a stdio server that Config.Spawn started (in the
// command sandbox): the same lenient reading of its stdout.
type spawnedTransport struct {
	stdin  io.WriteCloser
	stdout io.ReadCloser
	kill   func()
	noise  io.Writer
}

func (t *spawnedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	r := &jsonLines{r: bufio.NewReaderSize(t.stdout, 64<<10), noise: t.noise}
	return (&sdk.IOTransport{Reader: r, Writer: closeThenKill{t.stdin, t.kill}}).Connect(ctx)
}

// closeThenKill closes a server's stdin (a server ends when it does) and
// kills it, and everything it started, a second later if it has not.
type closeThenKill struct {
	io.WriteCloser
	kill func()
}

func (c closeThenKill) Close() error {
	err := c.WriteCloser.Close()
	time.AfterFunc(time.Second, c.kill)
	return err
}
