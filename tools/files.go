package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff"
	"github.com/google/jsonschema-go/jsonschema"

	"polly/memory/store"
	"polly/workspace/atomicfile"
)

const (
	readDefaultLimit = 2000
	readMaxLineChars = 2000
	readMaxOutput    = 256 << 10 // bytes of numbered text per call
	readCountBudget  = 32 << 20  // bytes we are willing to scan to count remaining lines
	editMaxFileSize  = 16 << 20
	writeDiffMax     = 4 << 20 // larger old contents are replaced without a diff
	previewMaxBytes  = 4 << 10
)

// FileTools returns the file and search tools working relative to root:
// read_file, write_file, edit_file, list_dir, glob and grep.
func FileTools(root string) []Tool {
	root = filepath.Clean(root)
	return []Tool{
		rootTool(root, "read_file", readFile, readsPath[readFileArgs], nonNegative("offset", "limit")),
		rootTool(root, "write_file", writeFile, writeAccess, nil),
		rootTool(root, "edit_file", editFile, editAccess, nil),
		rootTool(root, "list_dir", listDir, readsPath[listDirArgs], nil),
		rootTool(root, "glob", globFiles, readsPath[globArgs], nil),
		rootTool(root, "grep", grep, readsPath[grepArgs], nil),
	}
}

// rootTool builds the file tool name working in root: access says what a
// call touches (the gate judges it first), run makes the call.
func rootTool[A any](root, name string, run func(ctx context.Context, root string, a A) (Result, error),
	access func(root string, a A) (Access, error), fix func(*jsonschema.Schema)) Tool {
	return New(name, description(name), func(ctx context.Context, a A) (Result, error) { return run(ctx, root, a) }, fix).
		WithAccess(func(_ context.Context, a A) (Access, error) { return access(root, a) })
}

// pathArgs are the arguments of a tool that reads one path.
type pathArgs interface{ target() string }

// readsPath is the access of a tool that reads the path its arguments name.
func readsPath[A pathArgs](root string, a A) (Access, error) {
	return Access{Kind: AccessRead, Paths: []string{resolvePath(root, a.target())}}, nil
}

func (a readFileArgs) target() string { return a.Path }
func (a listDirArgs) target() string  { return a.Path }
func (a globArgs) target() string     { return a.Path }
func (a grepArgs) target() string     { return a.Path }

// nonNegative sets minimum 0 on integer properties.
func nonNegative(props ...string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		zero := 0.0
		for _, p := range props {
			s.Properties[p].Minimum = &zero
		}
	}
}

type readFileArgs struct {
	Path   string `json:"path" jsonschema:"file to read, relative to the project root or absolute"`
	Offset int    `json:"offset,omitempty" jsonschema:"1-based line number to start at (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"maximum number of lines to return (default 2000)"`
}

func readFile(_ context.Context, root string, a readFileArgs) (Result, error) {
	abs := resolvePath(root, a.Path)
	shown := displayPath(root, abs)
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return Result{}, fmt.Errorf("file %s does not exist%s", shown, suggestNames(abs))
	}
	if err != nil {
		return Result{}, fmt.Errorf("stat %s: %w", shown, err)
	}
	if fi.IsDir() {
		return Result{}, fmt.Errorf("%s is a directory; use list_dir to see its entries or glob to find files in it", shown)
	}
	if !fi.Mode().IsRegular() {
		return Result{}, fmt.Errorf("%s is not a regular file (%s); opening it could block", shown, fi.Mode().Type())
	}
	f, err := os.Open(abs)
	if err != nil {
		return Result{}, fmt.Errorf("open %s: %w", shown, err)
	}
	defer f.Close()
	// A buffer the file's size (within 8–64 KB): a small file does not
	// cost 64 KB of garbage per read.
	br := bufio.NewReaderSize(f, int(min(max(fi.Size()+1, binarySniffLen), 64<<10)))
	if head, _ := br.Peek(binarySniffLen); bytes.IndexByte(head, 0) >= 0 {
		return Result{}, fmt.Errorf("%s looks like a binary file (%d bytes, contains NUL bytes); it cannot be shown as text", shown, fi.Size())
	}
	offset := max(a.Offset, 1)
	limit := a.Limit
	if limit <= 0 {
		limit = readDefaultLimit
	}

	var out strings.Builder
	out.Grow(int(min(fi.Size()+fi.Size()/4+64, readMaxOutput+8<<10))) // room for line numbers
	var line, lineBuf []byte
	n := 0    // lines consumed
	last := 0 // last line shown
	cutBytes := false
	for {
		keep := 0
		if n+1 >= offset {
			keep = readMaxLineChars * utf8.UTFMax
		}
		var total int
		var err error
		line, total, err = readCapped(br, line[:0], keep)
		if total == 0 && err == io.EOF {
			break // a trailing newline ends the last line; it does not start one
		}
		if err != nil && err != io.EOF {
			return Result{}, fmt.Errorf("read %s: %w", shown, err)
		}
		n++
		if n >= offset {
			lineBuf = appendLine(lineBuf[:0], n, line, total)
			out.Write(lineBuf)
			last = n
		}
		if err == io.EOF {
			break
		}
		if last > 0 && (last-offset+1 >= limit || out.Len() >= readMaxOutput) {
			cutBytes = last-offset+1 < limit
			break
		}
	}
	if last == 0 {
		if n == 0 {
			if offset > 1 {
				return Result{}, fmt.Errorf("offset %d is past the end of %s: the file is empty", offset, shown)
			}
			return Result{Output: fmt.Sprintf("(%s is empty)", shown)}, nil
		}
		return Result{}, fmt.Errorf("offset %d is past the end of %s, which has %d lines", offset, shown, n)
	}
	if more, total, known := remainingLines(br, last); more {
		why := ""
		if cutBytes {
			why = fmt.Sprintf(" (output limit of %d KB reached)", readMaxOutput>>10)
		}
		span := fmt.Sprintf("lines %d-%d", offset, last)
		if offset == last {
			span = fmt.Sprintf("line %d", last)
		}
		if known {
			fmt.Fprintf(&out, "[%s of %d shown%s; call read_file with offset=%d to continue]\n", span, total, why, last+1)
		} else {
			fmt.Fprintf(&out, "[%s shown%s; more lines follow (file is %s); call read_file with offset=%d to continue]\n",
				span, why, humanSize(fi.Size()), last+1)
		}
	}
	// A skill's SKILL.md read whole is the skill loaded: it stays whole.
	return Result{Output: out.String(), Keep: filepath.Base(abs) == "SKILL.md" && offset == 1 && !cutBytes}, nil
}

// readCapped reads one line from br, appending at most keep bytes of it
// (without the newline) to dst. total is the line's full length. err is
// io.EOF when the input ended before a newline.
func readCapped(br *bufio.Reader, dst []byte, keep int) (line []byte, total int, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		body := bytes.TrimSuffix(frag, []byte("\n"))
		total += len(body)
		if room := keep - len(dst); room > 0 {
			dst = append(dst, body[:min(room, len(body))]...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			return dst, total, err
		default:
			return dst, total, nil
		}
	}
}

// appendLine appends one cat -n style line to dst, cutting it at
// readMaxLineChars characters.
func appendLine(dst []byte, n int, line []byte, total int) []byte {
	var num [20]byte
	digits := strconv.AppendInt(num[:0], int64(n), 10)
	for i := len(digits); i < 6; i++ {
		dst = append(dst, ' ')
	}
	dst = append(append(dst, digits...), '\t')
	line = bytes.TrimSuffix(line, []byte("\r"))
	if total <= readMaxLineChars {
		return append(append(dst, line...), '\n')
	}
	i, chars := 0, 0
	for i < len(line) && chars < readMaxLineChars {
		_, size := utf8.DecodeRune(line[i:])
		i += size
		chars++
	}
	if i == len(line) && total == len(line) {
		return append(append(dst, line...), '\n') // many multi-byte runes, but within the limit
	}
	dst = append(dst, line[:i]...)
	return fmt.Appendf(dst, "… [line cut at %d chars; %d bytes in total]\n", readMaxLineChars, total)
}

// remainingLines reports whether lines follow the last one shown and, if
// counting them is cheap, the file's total line count.
func remainingLines(br *bufio.Reader, last int) (more bool, total int, known bool) {
	if _, err := br.Peek(1); err != nil {
		return false, last, true
	}
	count, scanned := 0, 0
	var lastByte byte
	for scanned < readCountBudget {
		chunk, _ := br.Peek(br.Size()) // a short chunk means EOF or a read error
		if len(chunk) == 0 {
			break
		}
		count += bytes.Count(chunk, []byte("\n"))
		lastByte = chunk[len(chunk)-1]
		scanned += len(chunk)
		if _, derr := br.Discard(len(chunk)); derr != nil {
			break
		}
	}
	if _, err := br.Peek(1); err == nil {
		return true, 0, false // over budget: don't read a huge file to the end
	}
	if lastByte != '\n' {
		count++ // last line without a trailing newline
	}
	return true, last + count, true
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

type writeFileArgs struct {
	Path    string `json:"path" jsonschema:"file to create or overwrite, relative to the project root or absolute"`
	Content string `json:"content" jsonschema:"the complete new content of the file"`
}

func writeAccess(root string, a writeFileArgs) (Access, error) {
	p, err := planWrite(root, a)
	if err != nil {
		return Access{}, err
	}
	return Access{Kind: AccessWrite, Paths: []string{p.abs}, Preview: p.preview()}, nil
}

// writePlan is what a write_file call will do; Access and Run share it.
type writePlan struct {
	abs, shown string // target after following symlinks; how it is shown
	link       string // the symlink the path named, when abs is its target
	old        string
	existed    bool
	oldSize    int64
	mode       fs.FileMode
	content    string
	diff       string // "" when unchanged or when the old content is too large or binary
}

func planWrite(root string, a writeFileArgs) (writePlan, error) {
	given := resolvePath(root, a.Path)
	abs := followLink(given)
	p := writePlan{abs: abs, shown: displayPath(root, abs), content: a.Content, mode: 0o644, link: linkOf(given, abs)}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.diff = udiffLabels(p.shown, "", a.Content, true)
		return p, nil
	case err != nil:
		return p, fmt.Errorf("stat %s: %w", p.shown, err)
	case fi.IsDir():
		return p, fmt.Errorf("%s is a directory; give a file path", p.shown)
	case !fi.Mode().IsRegular():
		return p, fmt.Errorf("%s is not a regular file (%s)", p.shown, fi.Mode().Type())
	}
	p.existed, p.oldSize, p.mode = true, fi.Size(), fi.Mode().Perm()
	if fi.Size() > writeDiffMax {
		return p, nil
	}
	old, err := os.ReadFile(abs)
	if err != nil {
		return p, fmt.Errorf("read %s: %w", p.shown, err)
	}
	p.old = string(old)
	if bytes.IndexByte(old, 0) < 0 {
		p.diff = udiffLabels(p.shown, p.old, a.Content, false)
	}
	return p, nil
}

func (p writePlan) unchanged() bool {
	return p.existed && p.oldSize == int64(len(p.content)) && p.old == p.content
}

func (p writePlan) preview() string {
	if p.existed {
		if p.unchanged() {
			return fmt.Sprintf("%s: content unchanged", p.shown)
		}
		if p.diff == "" {
			return fmt.Sprintf("overwrite %s (%s) with %d bytes", p.shown, humanSize(p.oldSize), len(p.content))
		}
		return clip(p.diff, previewMaxBytes)
	}
	return fmt.Sprintf("new file %s (%d bytes):\n%s", p.shown, len(p.content), clip(p.content, previewMaxBytes))
}

func writeFile(ctx context.Context, root string, a writeFileArgs) (Result, error) {
	p, err := planWrite(root, a)
	if err != nil {
		return Result{}, err
	}
	if p.unchanged() {
		return Result{Output: fmt.Sprintf("%s already has this content (%d bytes); nothing written", p.shown, len(p.content))}, nil
	}
	var backup []int64
	if RecorderOf(ctx) != nil {
		before, err := ReadState(p.abs)
		if err != nil {
			return Result{}, fmt.Errorf("read %s to back it up: %w", p.shown, err)
		}
		change := FileChange{Path: p.abs, Link: p.link, Before: before, After: writtenState([]byte(p.content), p.mode)}
		if backup, err = backupBeforeWrite(ctx, "write_file", change, p.shown); err != nil {
			return Result{}, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(p.abs), 0o755); err != nil {
		forgetBackup(ctx, backup)
		return Result{}, fmt.Errorf("create parent directories of %s: %w", p.shown, err)
	}
	if err := atomicWrite(p.abs, []byte(p.content), p.mode); err != nil {
		forgetBackup(ctx, backup)
		return Result{}, err
	}
	if p.existed {
		msg := fmt.Sprintf("overwrote %s (%d bytes written; was %d bytes)", p.shown, len(p.content), p.oldSize)
		return Result{Output: msg, Diff: p.diff, Files: []string{p.shown}}, nil
	}
	msg := fmt.Sprintf("created %s (%d bytes written)", p.shown, len(p.content))
	return Result{Output: msg, Diff: p.diff, Files: []string{p.shown}, Created: []string{p.shown}}, nil
}

type editFileArgs struct {
	Path       string `json:"path" jsonschema:"file to edit, relative to the project root or absolute"`
	OldString  string `json:"old_string" jsonschema:"exact text to replace, with its exact whitespace and indentation and no line-number prefixes; must be unique in the file unless replace_all is set"`
	NewString  string `json:"new_string" jsonschema:"the text to put in its place"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence instead of requiring a unique match (default false)"`
}

func editAccess(root string, a editFileArgs) (Access, error) {
	p, err := planEdit(root, a)
	if err != nil {
		return Access{}, err
	}
	return Access{Kind: AccessWrite, Paths: []string{p.abs}, Preview: clip(p.diff, previewMaxBytes)}, nil
}

// editPlan is the result of applying an edit in memory.
type editPlan struct {
	abs, shown string
	link       string // the symlink the path named, when abs is its target
	old        []byte
	mode       fs.FileMode
	content    string
	count      int
	diff       string
}

func planEdit(root string, a editFileArgs) (editPlan, error) {
	given := resolvePath(root, a.Path)
	abs := followLink(given)
	p := editPlan{abs: abs, shown: displayPath(root, abs), link: linkOf(given, abs)}
	if a.OldString == "" {
		return p, errors.New("old_string is empty; to create a file or replace all of its content use write_file")
	}
	if a.OldString == a.NewString {
		return p, errors.New("old_string and new_string are identical; nothing would change")
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return p, fmt.Errorf("file %s does not exist (use write_file to create it)%s", p.shown, suggestNames(abs))
	case err != nil:
		return p, fmt.Errorf("stat %s: %w", p.shown, err)
	case fi.IsDir():
		return p, fmt.Errorf("%s is a directory, not a file", p.shown)
	case !fi.Mode().IsRegular():
		return p, fmt.Errorf("%s is not a regular file (%s)", p.shown, fi.Mode().Type())
	case fi.Size() > editMaxFileSize:
		return p, fmt.Errorf("%s is %s, too large for edit_file; use run_command (e.g. sed) instead", p.shown, humanSize(fi.Size()))
	}
	p.mode = fi.Mode().Perm()
	data, err := os.ReadFile(abs)
	if err != nil {
		return p, fmt.Errorf("read %s: %w", p.shown, err)
	}
	if bytes.IndexByte(data[:min(len(data), binarySniffLen)], 0) >= 0 {
		return p, fmt.Errorf("%s looks like a binary file; edit_file only edits text", p.shown)
	}
	p.old = data
	content := string(data)
	oldS, newS := a.OldString, a.NewString
	count := strings.Count(content, oldS)
	if count == 0 && strings.Contains(content, "\r\n") && !strings.Contains(oldS, "\r") {
		// The file has CRLF line endings; the model writes LF.
		crlf := strings.NewReplacer("\n", "\r\n")
		if c := strings.Count(content, crlf.Replace(oldS)); c > 0 {
			oldS, newS, count = crlf.Replace(oldS), crlf.Replace(newS), c
		}
	}
	switch {
	case count == 0:
		return p, notFound(content, oldS, p.shown)
	case count > 1 && !a.ReplaceAll:
		return p, fmt.Errorf("old_string occurs %d times in %s (%s); include more surrounding lines to make it unique, or set replace_all to change every occurrence",
			count, p.shown, occurrenceLines(content, oldS, 10))
	}
	if a.ReplaceAll {
		p.content = strings.ReplaceAll(content, oldS, newS)
	} else {
		p.content = strings.Replace(content, oldS, newS, 1)
	}
	p.count = count
	p.diff = udiffLabels(p.shown, content, p.content, false)
	return p, nil
}

func editFile(ctx context.Context, root string, a editFileArgs) (Result, error) {
	p, err := planEdit(root, a)
	if err != nil {
		return Result{}, err
	}
	change := FileChange{Path: p.abs, Link: p.link, Before: stateOf(store.FileRegular, p.old, p.mode),
		After: writtenState([]byte(p.content), p.mode)}
	backup, err := backupBeforeWrite(ctx, "edit_file", change, p.shown)
	if err != nil {
		return Result{}, err
	}
	if err := atomicWrite(p.abs, []byte(p.content), p.mode); err != nil {
		forgetBackup(ctx, backup)
		return Result{}, err
	}
	noun := "occurrence"
	if p.count > 1 {
		noun = "occurrences"
	}
	out := fmt.Sprintf("edited %s: replaced %d %s\n%s", p.shown, p.count, noun, p.diff)
	return Result{Output: out, Diff: p.diff, Files: []string{p.shown}}, nil
}

// occurrenceLines lists the line numbers where sub starts, e.g. "lines 4, 19, 33".
func occurrenceLines(content, sub string, most int) string {
	var nums []string
	line, pos := 1, 0
	for len(nums) < most {
		i := strings.Index(content[pos:], sub)
		if i < 0 {
			break
		}
		line += strings.Count(content[pos:pos+i], "\n")
		nums = append(nums, fmt.Sprint(line))
		line += strings.Count(sub, "\n")
		pos += i + len(sub)
	}
	s := "lines " + strings.Join(nums, ", ")
	if strings.Count(content, sub) > most {
		s += ", …"
	}
	return s
}

// notFound explains a missing old_string with the most useful hint it can
// find: line-number prefixes copied from read_file, a block that matches
// when whitespace is ignored, or where the first line occurs.
func notFound(content, old, shown string) error {
	base := fmt.Sprintf("old_string not found in %s", shown)
	lines := strings.Split(content, "\n")
	oldLines := strings.Split(strings.Trim(old, "\n"), "\n")
	if lineNumberPrefixed(oldLines) {
		return fmt.Errorf("%s: it seems to include the line-number prefixes from read_file output; copy only the text after the tab", base)
	}
	if at := fuzzyFind(lines, oldLines); at >= 0 {
		end := at + len(oldLines)
		var b strings.Builder
		for i := at; i < end && i < at+10; i++ {
			fmt.Fprintf(&b, "%6d\t%s\n", i+1, lines[i])
		}
		return fmt.Errorf("%s, but lines %d-%d match when whitespace and indentation are ignored; the file has:\n%scopy old_string exactly (tabs vs spaces, trailing spaces)",
			base, at+1, end, b.String())
	}
	first := strings.TrimSpace(oldLines[0])
	if first != "" {
		for i, l := range lines {
			if strings.Contains(l, first) {
				return fmt.Errorf("%s; its first line occurs at line %d but the following lines differ. read_file around line %d and copy the text exactly", base, i+1, i+1)
			}
		}
	}
	return fmt.Errorf("%s; the file may have changed since you read it. read_file it again and copy old_string exactly", base)
}

func lineNumberPrefixed(lines []string) bool {
	for _, l := range lines {
		t := strings.TrimLeft(l, " ")
		digits := len(t) - len(strings.TrimLeft(t, "0123456789"))
		if digits == 0 || !strings.HasPrefix(t[digits:], "\t") {
			return false
		}
	}
	return true
}

// fuzzyFind returns the index of the first run of lines equal to want after
// collapsing whitespace, or -1.
func fuzzyFind(lines, want []string) int {
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	w := make([]string, len(want))
	blank := true
	for i, l := range want {
		w[i] = norm(l)
		blank = blank && w[i] == ""
	}
	if blank {
		return -1
	}
outer:
	for i := 0; i+len(w) <= len(lines); i++ {
		for j := range w {
			if norm(lines[i+j]) != w[j] {
				continue outer
			}
		}
		return i
	}
	return -1
}

// linkOf is given when it is a symlink that was followed to abs, else "".
func linkOf(given, abs string) string {
	if given == abs {
		return ""
	}
	return given
}

// followLink resolves a symlink so writes replace its target, not the link.
func followLink(abs string) string {
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			return real
		}
	}
	return abs
}

// atomicWrite replaces path with data (atomicfile: a synced temp file
// renamed into place, the directory synced), so readers never see a
// half-written file and a finished edit survives a crash.
func atomicWrite(path string, data []byte, mode fs.FileMode) error {
	return atomicfile.Write(path, data, mode)
}

// udiffLabels renders a unified diff with git-style a/ b/ labels.
func udiffLabels(shown, before, after string, created bool) string {
	from, to := "a/"+shown, "b/"+shown
	if filepath.IsAbs(shown) {
		from, to = shown, shown
	}
	if created {
		from = "/dev/null"
	}
	return udiff.Unified(from, to, before, after)
}

// clip cuts s to at most n bytes on a line boundary when it can.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := s[:n]
	if i := strings.LastIndexByte(cut, '\n'); i > n/2 {
		cut = cut[:i+1]
	} else {
		for len(cut) > 0 && !utf8.RuneStart(s[len(cut)]) {
			cut = cut[:len(cut)-1]
		}
	}
	return cut + fmt.Sprintf("… [%d more bytes]\n", len(s)-len(cut))
}
