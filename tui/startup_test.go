package tui

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Start-up of the real binary: `polly --version` (which is also what the
// sandbox helper, a re-exec of Polly, pays before it runs a command), the
// TUI's first frame in a terminal and its resident set once idle, each
// against a trivial baseline built and run in the same test, so a loaded
// machine slows both.

// Limits of the ratios to the baselines, about twice what this tree
// measured on 2 cores under a load average of 17, every binary built
// without cgo as README.md says, read back from disk (see
// dropFromPageCache): --version 12–27× a hello-world program (a 2 ms
// program: its wall time moves most with load), of which glamour's
// package inits (chroma's lexer and style tables, bluemonday) are most
// (3.8× without glamour, same run); its peak RSS 11× (26 MB
// against 2.3 MB; 6.8× without glamour); first frame 2.4–4.0× a one-line
// Bubble Tea program (1.9× without glamour); idle RSS 5.2× (42 MB
// against 8.1 MB, a second after the first frame; 4.2× without glamour).
const (
	maxVersionRatio = 40.0
	maxVersionRSS   = 22.0
	maxFrameRatio   = 8.0
	maxIdleRSS      = 10.0
)

// startupBins builds polly and the two baselines into a temporary
// directory. POLLY_BENCH_BIN names a polly binary to measure instead (an
// older build, to compare two trees in one run).
func startupBins(tb testing.TB) (b startBins) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds and runs the real binary")
	}
	dir := tb.TempDir()
	b = startBins{polly: filepath.Join(dir, "polly"), hello: filepath.Join(dir, "hello"),
		teaframe: filepath.Join(dir, "teaframe"), runstat: filepath.Join(dir, "runstat"),
		home: tb.TempDir(), project: tb.TempDir()}
	pkgs := map[string]string{b.polly: "polly", b.hello: "./testdata/startup/hello",
		b.teaframe: "./testdata/startup/teaframe", b.runstat: "./testdata/startup/runstat"}
	if other := os.Getenv("POLLY_BENCH_BIN"); other != "" {
		delete(pkgs, b.polly)
		b.polly = other
		dropFromPageCache(tb, other)
	}
	for bin, pkg := range pkgs {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0") // as README.md builds Polly; the baselines alike
		if out, err := build.CombinedOutput(); err != nil {
			tb.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
		dropFromPageCache(tb, bin)
	}
	return b
}

// dropFromPageCache writes bin to disk and drops it from the page cache,
// so that every binary is read back as an installed one is, not from
// what the linker just wrote: on this kernel a fresh binary's text may
// sit in 2 MiB folios that map whole, and the same --version then peaks
// at 45 MB instead of 24 MB.
func dropFromPageCache(tb testing.TB, bin string) {
	tb.Helper()
	f, err := os.Open(bin)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		tb.Logf("%s stays in the page cache: %v", bin, err)
	}
}

// startBins are the binaries, and the home and project directory they
// run in (kept between runs: a first frame is measured as on any day but
// the first, with the database and the workspace already there).
type startBins struct{ polly, hello, teaframe, runstat, home, project string }

// runOnce runs bin to completion under runstat and returns its wall time
// and peak RSS.
func (b startBins) runOnce(tb testing.TB, bin string, args ...string) (time.Duration, int64) {
	tb.Helper()
	cmd := exec.Command(b.runstat, append([]string{bin}, args...)...)
	cmd.Env = b.env()
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s %v: %v\n%s", bin, args, err, out)
	}
	var ns, rss int64
	if _, err := fmt.Sscan(string(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:]), &ns, &rss); err != nil {
		tb.Fatalf("runstat said %q: %v", out, err)
	}
	return time.Duration(ns), rss
}

// env is a clean environment: its own home and config, a fake key and a
// closed loopback port as the provider (nothing is ever sent).
func (b startBins) env() []string {
	home := b.home
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "XDG_DATA_HOME=" + filepath.Join(home, ".local/share"),
		"TERM=xterm-256color", "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=http://127.0.0.1:9/v1",
	}
}

// firstFrame starts bin in a new 120×40 pseudo-terminal and returns the
// time until the screen shows marker (the TUI's input placeholder), then
// kills it.
func (b startBins) firstFrame(tb testing.TB, bin, marker string) time.Duration {
	d, _ := b.frameAndIdleRSS(tb, bin, marker, 0)
	return d
}

// frameAndIdleRSS is firstFrame that, given an idle time, leaves the TUI
// alone that long after its first frame and also returns its resident
// set then (VmRSS).
func (b startBins) frameAndIdleRSS(tb testing.TB, bin, marker string, idle time.Duration) (time.Duration, int64) {
	tb.Helper()
	ptmx, pts := openPTY(tb)
	defer ptmx.Close()
	cmd := exec.Command(bin)
	cmd.Dir = b.project
	cmd.Env = b.env()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	pts.Close()
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	// A reader goroutine: a read deadline on the terminal's master side
	// is not always honoured, and an idle TUI writes nothing.
	out := make(chan []byte, 16)
	go func() {
		defer close(out)
		for {
			buf := make([]byte, 64<<10)
			n, err := ptmx.Read(buf)
			if n > 0 {
				out <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	timeout := time.After(20 * time.Second)
	var seen bytes.Buffer
	want := []byte(marker)
	answered := map[string]bool{}
	for {
		select {
		case p, ok := <-out:
			if !ok {
				tb.Fatalf("%s ended before its first frame; it drew:\n%q", bin, seen.String())
			}
			seen.Write(p)
		case <-timeout:
			tb.Fatalf("%s: no %q on the screen; it drew:\n%q", bin, marker, seen.String())
		}
		for _, qa := range terminalAnswers { // as a real terminal does, at once
			if !answered[qa[0]] && bytes.Contains(seen.Bytes(), []byte(qa[0])) {
				answered[qa[0]] = true
				_, _ = ptmx.Write([]byte(qa[1]))
			}
		}
		if bytes.Contains(seen.Bytes(), want) {
			break
		}
	}
	frame := time.Since(start)
	if idle == 0 {
		return frame, 0
	}
	go func() { // keep the terminal's output flowing
		for range out {
		}
	}()
	time.Sleep(idle)
	return frame, vmRSS(tb, cmd.Process.Pid)
}

// vmRSS is a process's resident set in bytes.
func vmRSS(tb testing.TB, pid int) int64 {
	tb.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// terminalAnswers are the queries Bubble Tea sends at start and what a
// dark xterm-like terminal answers; left unanswered, a program waits for
// them until a timeout and every first frame measures that timeout.
var terminalAnswers = [][2]string{
	{"\x1b[?2026$p", "\x1b[?2026;2$y"},              // synchronized output: supported, off
	{"\x1b[?2027$p", "\x1b[?2027;0$y"},              // grapheme clusters: unknown
	{"\x1b]11;?\a", "\x1b]11;rgb:1e1e/1e1e/2e2e\a"}, // background colour
	{"\x1b[?u", "\x1b[?0u"},                         // kitty keyboard flags
	{"\x1b[c", "\x1b[?62;22c"},                      // primary device attributes
}

// openPTY opens a pseudo-terminal pair of 120×40.
func openPTY(tb testing.TB) (ptmx, pts *os.File) {
	tb.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		tb.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		tb.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		tb.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
		tb.Fatal(err)
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return ptmx, pts
}

func median[T int64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// idleFor is how long a TUI sits idle after its first frame before its
// resident set is read.
const idleFor = time.Second

// startupRatios measures rounds of each pair, interleaved so that load
// hits both alike, and returns the ratios of the medians.
func startupRatios(t *testing.T, b startBins, rounds int) (r ratios, report string) {
	var pv, hv, pf, tf []time.Duration
	var pr, hr, pi, ti []int64
	b.firstFrame(t, b.polly, "Message Polly") // creates the database and the workspace
	for i := range rounds {
		d, rss := b.runOnce(t, b.hello)
		hv, hr = append(hv, d), append(hr, rss)
		d, rss = b.runOnce(t, b.polly, "--version")
		pv, pr = append(pv, d), append(pr, rss)
		idle := time.Duration(0)
		if i%3 == 0 { // the resident set varies less than the times: a third of the rounds
			idle = idleFor
		}
		d, rss = b.frameAndIdleRSS(t, b.teaframe, "Message Polly", idle)
		if tf = append(tf, d); idle > 0 {
			ti = append(ti, rss)
		}
		d, rss = b.frameAndIdleRSS(t, b.polly, "Message Polly", idle)
		if pf = append(pf, d); idle > 0 {
			pi = append(pi, rss)
		}
	}
	r = ratios{
		version:    float64(median(pv)) / float64(median(hv)),
		versionRSS: float64(median(pr)) / float64(median(hr)),
		frame:      float64(median(pf)) / float64(median(tf)),
		idleRSS:    float64(median(pi)) / float64(median(ti)),
	}
	report = fmt.Sprintf("--version %v (hello %v, ×%.1f), its peak RSS %.1f MB (hello %.1f MB, ×%.1f); first frame %v (trivial Bubble Tea %v, ×%.1f), idle RSS %.1f MB (trivial Bubble Tea %.1f MB, ×%.1f)",
		median(pv), median(hv), r.version, float64(median(pr))/1e6, float64(median(hr))/1e6, r.versionRSS,
		median(pf), median(tf), r.frame, float64(median(pi))/1e6, float64(median(ti))/1e6, r.idleRSS)
	return r, report
}

// ratios are Polly's start-up figures over their baselines'.
type ratios struct{ version, versionRSS, frame, idleRSS float64 }

func (r ratios) within() bool {
	return r.version <= maxVersionRatio && r.versionRSS <= maxVersionRSS && r.frame <= maxFrameRatio && r.idleRSS <= maxIdleRSS
}

// TestStartupGuard fails when Polly's start-up regresses 2×: what its
// package inits allocate, and against the baselines its --version time
// and RSS, the TUI's first frame and its idle RSS. A failing timing is
// measured again once before the test fails (one burst of load from
// another process must not fail it).
func TestStartupGuard(t *testing.T) {
	bins := startupBins(t)
	t.Run("init allocations", func(t *testing.T) { checkInitAllocations(t, bins) })
	t.Run("time and RSS", func(t *testing.T) {
		var report string
		for attempt := 1; attempt <= 2; attempt++ {
			var r ratios
			r, report = startupRatios(t, bins, 9)
			t.Logf("attempt %d: %s", attempt, report)
			if r.within() {
				return
			}
		}
		t.Errorf("start-up regressed (limits: --version ×%.0f, its RSS ×%.0f, first frame ×%.1f, idle RSS ×%.1f): %s",
			maxVersionRatio, maxVersionRSS, maxFrameRatio, maxIdleRSS, report)
	})
}

// maxInitBytes bounds what the package inits of polly allocate before
// main (GODEBUG=inittrace=1): a count that does not depend on the load of
// the machine. This tree: 7.4 MB in 88k allocations, of which chroma's
// lexer and style tables take 4.7 MB, bluemonday and its CSS parser (in
// glamour) 0.8 MB. The limit is twice that.
const maxInitBytes = 15 << 20

// checkInitAllocations: a dependency or a package-level table that builds
// a lot at init shows here at once, however fast the machine.
func checkInitAllocations(t *testing.T, bins startBins) {
	cmd := exec.Command(bins.polly, "--version")
	cmd.Env = append(bins.env(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("polly --version: %v\n%s", err, stderr.String())
	}
	var total, allocs int64
	type pkgInit struct {
		name  string
		bytes int64
	}
	var inits []pkgInit
	for _, l := range strings.Split(stderr.String(), "\n") {
		// init polly/tui @109 ms, 0.013 ms clock, 160 bytes, 4 allocs
		f := strings.Fields(l)
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		b, err1 := strconv.ParseInt(f[7], 10, 64)
		n, err2 := strconv.ParseInt(f[9], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("unreadable inittrace line %q", l)
		}
		total += b
		allocs += n
		inits = append(inits, pkgInit{f[1], b})
	}
	if len(inits) < 50 {
		t.Fatalf("only %d package inits traced:\n%s", len(inits), stderr.String())
	}
	slices.SortFunc(inits, func(a, b pkgInit) int { return int(b.bytes - a.bytes) })
	t.Logf("package inits allocate %d bytes in %d allocations; the most: %v", total, allocs, inits[:5])
	if total > maxInitBytes {
		t.Errorf("package inits allocate %d bytes, over %d; the most: %v", total, maxInitBytes, inits[:10])
	}
}

// BenchmarkVersion: `polly --version` as a process (ns/op is the wall time
// of one start; maxrss-MB its peak RSS), and BenchmarkHelloBaseline the
// same for a hello-world program.
func BenchmarkVersion(b *testing.B) {
	bins := startupBins(b)
	benchProcess(b, bins, bins.polly, "--version")
}

func BenchmarkHelloBaseline(b *testing.B) {
	bins := startupBins(b)
	benchProcess(b, bins, bins.hello)
}

// benchProcess reports the median wall time measured by runstat (without
// runstat's own start) as wall-ns/op.
func benchProcess(b *testing.B, bins startBins, bin string, args ...string) {
	var rss []int64
	var wall []time.Duration
	for b.Loop() {
		d, r := bins.runOnce(b, bin, args...)
		wall = append(wall, d)
		rss = append(rss, r)
	}
	b.ReportMetric(float64(median(wall)), "wall-ns/op")
	b.ReportMetric(float64(median(rss))/1e6, "maxrss-MB")
}

// BenchmarkFirstFrameProcess: from starting polly in a pseudo-terminal to
// its first frame on the screen (a configured model, its home and project
// used once before);
// BenchmarkFirstFrameBaseline the same for a one-line Bubble Tea program.
func BenchmarkFirstFrameProcess(b *testing.B) {
	bins := startupBins(b)
	bins.firstFrame(b, bins.polly, "Message Polly") // creates the database and the workspace
	benchFrames(b, bins, bins.polly)
}

func BenchmarkFirstFrameBaseline(b *testing.B) {
	bins := startupBins(b)
	benchFrames(b, bins, bins.teaframe)
}

// benchFrames also reports the median first frame (frame-ns): on a shared
// machine one start delayed by other load moves the mean, not the median.
func benchFrames(b *testing.B, bins startBins, bin string) {
	var frames []time.Duration
	for b.Loop() {
		frames = append(frames, bins.firstFrame(b, bin, "Message Polly"))
	}
	b.ReportMetric(float64(median(frames)), "frame-ns")
}
