package tui

import (
	_ "fmt"
)

// mdSample has every element the renderer draws.
const mdSample = "# Title here\n\n## Step 2\n\n" +
	"I read `parser.go`. The **bug** is in *parse* and ~~old~~ \\*not emph\\* &amp; [the docs](https://go.dev/doc) or <https://x.y/z>.\n" +
	"A soft break and a very long line that should wrap around at sixty columns because it is long.\n\n" +
	"```go\n// parse parses\nfunc parse(s string) *Node {\n\tif s == \"\" { return nil } // 0x1F\n\tx := `raw\nstring`\n}\n```\n\n" +
	"- it returns nil\n- callers expect a node\n  - nested one\n  - nested two\n- [ ] todo\n- [x] done\n\n" +
	"9. ninth\n10. tenth\n\n" +
	"> quoted **text** here\n> more\n\n---\n\n" +
	"| file | lines |\n|---|--:|\n| `a.go` | 12 |\n| **b.go** | 3 |\n\n" +
	"```diff\n@@ -1,3 +1,3 @@\n-old\n+new\n```\n"
