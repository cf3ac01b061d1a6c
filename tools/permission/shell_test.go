package permission

import (
	"path"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

func TestClassify(t *testing.T) {
	readOnly := []string{
		"", "# just a comment", "ls", "ls -la | head -n 5", "cat a b 2>/dev/null", "echo hi >&2", "ls 2>&1 >/dev/null",
		"grep -rn 'func main' --include='*.go' .", "rg -n foo -- -pattern-after-dashes", "find . -type f -name '*.go' -newer go.mod",
		"sort -u -k2,2 x | uniq -c | sort -rn", "sed -n '/^func /p; 10,20{p;}' a.go", "sed -e 's/a/b/g' -e '$!N' x",
		"wc -l $(git ls-files)", "git diff --stat HEAD~1 -- 'src/*.go'",
		"git show HEAD:go.mod", "git branch -a --list 'feat*'", "git branch --contains HEAD", "git tag -l 'v*'", "git tag",
		"git remote -v", "git config --get user.name", "git config get user.email", "git stash list", "git rev-parse --show-toplevel",
		"go vet ./...", "go vet -race ./pkg/...", "go build ./...", "go list -m -json all", "go env GOPATH",
		"go version", "go doc fmt.Println", "gofmt -l .",
		"env", "env -i LANG=C ls", "LC_ALL=C sort x", "command -v go", "timeout 5 go vet ./...", "xargs -0 grep -l foo",
		"bash -c 'ls | wc -l'", "sh -c \"git status --short\"", "eval 'ls -la'", "[ -d .git ] && echo repo", "test -n \"$x\"",
		"[[ $branch == main ]] && echo yes", "if [ -f go.mod ]; then cat go.mod; else echo no; fi",
		"for f in *.go; do head -1 \"$f\"; done", "while read -r line; do echo \"$line\"; done < list.txt",
		"case $x in a) echo a;; *) echo b;; esac", "(cd src && ls)", "{ ls; pwd; } | cat", "echo ${x:-default} ${#y} ${z%%.go}",
		"cat <<'EOF'\n$(rm -rf /)\nEOF", "cat <<< \"hello\"", "diff <(sort a) <(sort b)", "tree -L 2 -I node_modules",
		"date +%s", "file src/a.go", "/usr/bin/git status", "du -sh . | sort -h", "printf '%s\\n' a b", "jq .name package.json",
		"stat -c %s go.mod", "readlink -f x", "echo a\\ b", "time go build ./...",
		"date -Iseconds", "xargs -i{} grep -l {} x", "git remote show -n origin", "bash -o pipefail -c 'ls | wc -l'",
	}
	notReadOnly := []string{
		"rm x", "ls > out", "ls >> out", "ls &> out", "ls >| out", "ls 1<>out", "ls >&out", "ls > $f", "touch x", "mkdir d",
		"cp a b", "mv a b", "chmod +x s", "tee f", "sort -o f x", "sort --out=f x", "sort --compress-program=sh x", "uniq a b",
		"sed -i s/a/b/ f", "sed -ni p f", "sed --in-place=.bak p f", "sed -f script x", "sed \"$s\" x", "sed w\\ out x",
		"sed '1e id' x", "sed 's/x/y/w out' x", "sed p $f", "find . -delete", "find . -fprint out", "find . -okdir x \\;",
		"find $d -name x", "find *", "rg --pre sh x", "rg --pr=sh x", "rg --hostname-bin=x x", "rg $pat", "git push", "git -C /x status",
		"git -c alias.x=!sh x", "git --git-dir=/x log", "git branch new", "git branch -m a b", "git tag v1", "git tag -d v1",
		"git config user.name x", "git config --unset user.name", "git remote add o u", "git checkout .", "git reset --hard",
		"git diff --output=/tmp/x", "git log --outp=/tmp/x", "git grep -O vim x", "git grep --open-files-in-pager=sh x",
		"git stash", "git clean -fdx", "git fetch", "cd x && git status", "go run .", "go generate ./...", "go test -c ./x",
		"go test -o x ./...", "go test -coverprofile=c.out", "go test -args -test.coverprofile=x", "go vet -vettool=x ./...",
		"go build -ldflags=-X=1", "go build -mod=mod ./...", "go env -w GOFLAGS=x", "go mod tidy", "go fmt ./...", "go test $pkgs",
		"gofmt -w .", "cargo +nightly test", "cargo test --target-dir /tmp", "cargo fmt", "cargo test -- --logfile x", "npm install",
		"npm test -- --coverage", "npm run build", "make", "make -n", "python x.py", "node -e 1", "perl -e 1", "awk 1 x", "curl x",
		"wget x", "ssh h", "sudo ls", "doas ls", "su -c ls", "exec rm x", "command rm x", "nohup rm x", "nice rm x", "timeout 1 rm x",
		"xargs rm", "xargs sh -c 'rm $1'", "xargs find", "xargs -I{} sed {} x", "env -S 'rm x'", "env -C /tmp ls", "env PATH=/x ls",
		"FOO=1 ls", "LD_PRELOAD=x ls", "GIT_EXTERNAL_DIFF=x git diff", "PAGER=sh git log", "x=1; export PATH=/x", "declare -x A=1",
		"let x=1", "(( x++ ))", "echo $((1+1))", "echo ${a[0]}", "echo ${x:1:2}", "echo ${!p}", "echo ${x@P}", "echo ${x:=y}",
		"for ((i=0;i<3;i++)); do ls; done", "for PATH in /x; do ls; done", "read PATH", "read -a 'a[$(id)]'", "printf -v x y",
		"printf $fmt", "[[ -v a ]]", "[[ $x -gt 1 ]]", "[ -v x ]", "bash", "bash x.sh", "sh -c \"$c\"",
		"bash --rcfile x -c ls", "zsh -c ls", "eval $x", "source x", ". x", "trap 'rm x' EXIT", "alias ls=rm", "hash -p /x ls",
		"$CMD", "${CMD} x", "$(echo ls)", "`echo ls`", "\"$c\" x", "./ls", "bin/cat x", "/tmp/ls", "l*s", "/bin/l? x",
		"coproc ls", "ls |& tee x", "$'\\x72m' x", "file -C -m x", "tree -o out", "tree -R",
		"time -o out ls", "ls ; rm -rf x", "ls `rm x`", "echo \"$(rm x)\"", "cat <(rm x)", "cat <<EOF\n$(rm x)\nEOF",
		// Second wave: holes found by attacking the classifier (issue 11).
		"go test ./...", "go test -race -count=1 -run 'TestX$' ./pkg/...", "timeout 5 go test ./...", "time go test ./...",
		"cargo test --all -- --nocapture", "cargo build", "cargo check", "cargo clippy", "npm test", "npm run test", "go list -m -u all",
		"xargs -i rm {}", "xargs -l rm", "xargs --replace rm {}", "xargs --max-lines rm", "xargs -e rm", "xargs -l1 rm",
		"bash -k -c 'cat LD_PRELOAD=./x.so'", "bash -o keyword -c 'cat x'", "bash -O dotglob -c 'ls'", "sh -ck 'ls'",
		"git grep --op=sh x", "git grep --open=sh x", "git diff --ou=x", "git log --ext-diff -p", "git diff --ext", "git show --textconv x",
		"cat < /dev/tcp/1.2.3.4/80", "exec 3<>/dev/tcp/h/80", "echo x > /dev/udp/1.2.3.4/53", "f=/dev/tcp/h/80; cat < $f",
		"cat < /dev//tcp/h/80", "git remote show origin", "git remote show https://evil.example/x", "git ls-remote origin",
		// Third wave (issue 24 #8): tools that run the project's configuration.
		"cargo tree --depth 1", "cargo metadata", "cargo fmt --check", "npm ls --depth=0", "yarn test", "pnpm run x", "make -q",
		"pytest -q", "tox", "gradle tasks", "mvn -q validate", "go generate ./...", "sed 's|a/b|c|' x",
		"f() { rm x; }; f", "ls\x00", "ls\rrm", "echo 'unterminated", "ls &&", "if then fi", "{a,b}", "echo {a,b}; rm {a,b}",
	}
	for _, c := range readOnly {
		if a := Classify(c); !a.ReadOnly {
			t.Errorf("%q: want read-only, got %s (parts %+v, writes %+v)", c, a.Reason(), a.Parts, a.Writes)
		}
	}
	for _, c := range notReadOnly {
		if a := Classify(c); a.ReadOnly {
			t.Errorf("%q: want not read-only (parts %+v)", c, a.Parts)
		}
	}
	t.Logf("%d read-only and %d other command lines checked", len(readOnly), len(notReadOnly))
}

// Write targets are found where they hide.
func TestClassifyWrites(t *testing.T) {
	cases := map[string][]string{ // command → write paths ("" = unknown)
		"cat a > b 2>>c":                 {"b", "c"},
		"echo x | tee -a one two":        {"one", "two"},
		"rm -rf -- a 'b c'":              {"a", "b c"},
		"mv -t dest a b":                 {"a", "b", "dest"},
		"cp -r src/ dst":                 {"dst"},
		"chmod -R 755 dir":               {"dir"},
		"chown --reference=r x":          {"x"},
		"dd if=a of=/dev/sda":            {"/dev/sda"},
		"curl -sSLo out.html https://x":  {"out.html"},
		"find a b -delete":               {"a", "b"},
		"sed -i.bak p f g":               {"f", "g"},
		"rm $x":                          {""},
		"bash -c 'echo hi > ~/.profile'": {"~/.profile"},
		"git config --global a.b c":      {"~/.gitconfig"},
		"echo hi > /dev/null":            nil,
		"sort -o s.txt x":                {"s.txt"},
	}
	for cmd, want := range cases {
		a := Classify(cmd)
		var got []string
		for _, w := range a.Writes {
			got = append(got, w.Path)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%q: writes %q, want %q", cmd, got, want)
		}
	}
}

// sed runs unasked only with scripts that print or edit the stream;
// anything else (w, W, e, s///w, s///e, other delimiters, labels) asks.
func TestSedScript(t *testing.T) {
	ok := []string{"p", "1,20p", "/a/,/b/d", "$!N;P;D", "s/a/b/g", "y/ab/cd/", "10q", "/x/I{s/a/b/;p}", "= ", "0~3p", "/re/,+2p",
		"s/w/e/", "10,$ d", "/^func /p; 10,20{p;}", "s/a\\/b/c/2"}
	bad := []string{"w out", "1W out", "e ls", "s/a/b/w out", "s/a/b/e", "s/a/b/gw out", "s/a/b", "k", "1,p",
		"s|a|b|", "r other.txt", ":a;N;$!ba", "s/a/b/;w x", "p\nw x"}
	for _, s := range ok {
		if !sedPrint().MatchString(s) {
			t.Errorf("%q: want accepted", s)
		}
	}
	for _, s := range bad {
		if sedPrint().MatchString(strings.ReplaceAll(s, "\\n", "\n")) {
			t.Errorf("%q: want rejected", s)
		}
	}
}

// FuzzClassify: Classify never panics, and a line it calls read-only has
// only allowlisted commands — checked both on its own Parts and by an
// independent walk of the syntax tree, which must find no computed command
// name, no writing redirection and no arithmetic.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"ls -la | head", "git status && git diff", "echo $(rm -rf ~)", "cat x > y", "find . -delete",
		"bash -c 'ls | wc -l'", "sed -n '1,20p' f", "for f in *.go; do wc -l \"$f\"; done", "x=1; [[ $x -eq 1 ]]", "xargs grep foo",
		"cat go.mod 2>/dev/null | head -n 5", "ls -la src && pwd; echo done >&2", "wc -l a b | tail -1",
		"cat >>/dev/null d", "ls &>/dev/null", "echo hi >/dev/stderr", "cat <>/dev/null", "ls >/dev/fd/2", "cat </dev/null"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		a := Classify(cmd)
		if !a.ReadOnly {
			return
		}
		if len(a.Writes) > 0 {
			t.Fatalf("%q: read-only with writes %+v", cmd, a.Writes)
		}
		for _, p := range a.Parts {
			if !p.ReadOnly || !IsReadOnlyCommand(p.Name) {
				t.Fatalf("%q: read-only line holds %+v", cmd, p)
			}
		}
		file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
		if err != nil {
			t.Fatalf("%q: read-only but does not parse: %v", cmd, err)
		}
		syntax.Walk(file, func(n syntax.Node) bool {
			switch x := n.(type) {
			case *syntax.CallExpr:
				if len(x.Args) == 0 {
					return true
				}
				name, ok := oracleLiteral(x.Args[0])
				if !ok {
					t.Fatalf("%q: read-only with a computed command name %v", cmd, x.Args[0])
				}
				if strings.Contains(name, "/") && !strings.HasSuffix(path.Dir(path.Clean(name)), "bin") || !IsReadOnlyCommand(path.Base(name)) {
					t.Fatalf("%q: read-only runs %q, which is not on the allowlist", cmd, name)
				}
			case *syntax.Redirect:
				switch x.Op {
				case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll:
					target, ok := oracleLiteral(x.Word)
					if !ok || !harmlessTarget(target) {
						t.Fatalf("%q: read-only writes %v", cmd, x.Word)
					}
				}
			case *syntax.ArithmCmd, *syntax.ArithmExp, *syntax.LetClause, *syntax.DeclClause, *syntax.CoprocClause:
				t.Fatalf("%q: read-only with %T", cmd, x)
			}
			return true
		})
		if !a.Pure {
			return
		}
		// A pure line runs without a sandbox: only the pure commands, with
		// plain literal words, no expansion, no assignment, no redirection
		// but output to /dev/null, /dev/stdout, /dev/stderr or another
		// descriptor (>>/dev/null appends nothing: as harmless as >).
		syntax.Walk(file, func(n syntax.Node) bool {
			switch x := n.(type) {
			case *syntax.CallExpr:
				if len(x.Assigns) > 0 {
					t.Fatalf("%q: pure with an assignment", cmd)
				}
				for i, w := range x.Args {
					v, ok := oracleLiteral(w)
					_, pure := pureFlags[path.Base(v)]
					brace := strings.Contains(v, "{") && (strings.Contains(v, ",") || strings.Contains(v, ".."))
					if !ok || strings.ContainsAny(v, "*?[") || brace || i == 0 && !pure {
						t.Fatalf("%q: pure with the word %q", cmd, v)
					}
				}
			case *syntax.Redirect:
				v, _ := oracleLiteral(x.Word)
				dup := x.Op == syntax.DplOut && strings.Trim(v, "0123456789-") == ""
				discard := x.Op != syntax.RdrIn && x.Op != syntax.DplIn && x.Op != syntax.Hdoc && x.Op != syntax.DashHdoc && x.Op != syntax.WordHdoc &&
					(v == "/dev/null" || v == "/dev/stdout" || v == "/dev/stderr" || strings.HasPrefix(v, "/dev/fd/") && len(v) > len("/dev/fd/") && strings.Trim(v[len("/dev/fd/"):], "0123456789") == "")
				if !dup && !discard {
					t.Fatalf("%q: pure with the redirection %s %s", cmd, x.Op, v)
				}
			case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ParamExp, *syntax.FuncDecl:
				t.Fatalf("%q: pure with %T", cmd, x)
			}
			return true
		})
	})
}

// oracleLiteral is a deliberately simple second opinion on a word's value:
// plain literals (backslashes dropped) and quotes of plain literals only.
func oracleLiteral(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			b.WriteString(strings.ReplaceAll(x.Value, "\\", ""))
		case *syntax.SglQuoted:
			if x.Dollar {
				return "", false
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, p := range x.Parts {
				l, ok := p.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(strings.ReplaceAll(l.Value, "\\", ""))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}
