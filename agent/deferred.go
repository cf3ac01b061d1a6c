package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"polly/tools"
)

// Limits on the MCP tools sent with every request. Beyond them the MCP
// tools are deferred, as Claude Code defers them: the model sees one
// search tool instead and loads the tools it needs by searching.
const (
	// maxToolsPerRequest is what OpenAI accepts in one request (others
	// accept less or slow down with more).
	maxToolsPerRequest = 128
	// mcpToolShare is the share of the context budget the MCP tools'
	// schemas may take before they are deferred.
	mcpToolShare = 0.10
	// mcpSearchTool is the search tool's name.
	mcpSearchTool = "mcp_tool_search"
	// maxLoadedMCPTools bounds how many deferred tools searches load.
	maxLoadedMCPTools = 32
)

// deferredTools holds the MCP tools of an agent that are not sent until a
// search loads them. Runs of the search tool may be concurrent with each
// other (parallel calls), so the loaded set has a lock; the agent reads it
// between requests.
type deferredTools struct {
	mu      sync.Mutex
	names   []string        // every deferred tool (sorted)
	loaded  []string        // loaded by searches, oldest first
	changed bool            // loaded changed since the agent last looked
	reg     *tools.Registry // to describe them
}

// planMCPTools decides which of the allowed tools are sent: all of them
// when the MCP tools fit both limits, else the tools that are not MCP
// server tools, the loaded ones and the search tool.
func (a *Agent) planMCPTools() {
	var mcpNames []string
	for _, n := range a.allowed {
		if strings.HasPrefix(n, "mcp__") {
			mcpNames = append(mcpNames, n)
		}
	}
	if len(mcpNames) == 0 {
		a.deferred = nil
		return
	}
	b, _ := json.Marshal(a.registry.Specs(mcpNames))
	share := float64(a.counter.Count(string(b))) / float64(max(1, a.budget()))
	if len(a.allowed) <= maxToolsPerRequest && share <= mcpToolShare {
		a.deferred = nil
		return
	}
	if a.deferred == nil {
		a.deferred = &deferredTools{}
	}
	d := a.deferred
	d.mu.Lock()
	d.names, d.reg, d.changed = mcpNames, a.registry, false
	d.loaded = slices.DeleteFunc(d.loaded, func(n string) bool { return !slices.Contains(mcpNames, n) })
	loaded := slices.Clone(d.loaded)
	d.mu.Unlock()
	search := &searchMCPTools{d: d}
	a.registry = a.registry.With(search)
	a.allowed = slices.DeleteFunc(a.allowed, func(n string) bool {
		return strings.HasPrefix(n, "mcp__") && !slices.Contains(loaded, n)
	})
	a.allowed = append(a.allowed, mcpSearchTool)
	if !a.warned["mcp-deferred"] {
		a.warnOnce("mcp-deferred", fmt.Sprintf("%d MCP tools are more than one request should carry (%d tools in all, schemas %.0f%% of the context budget): they are found through %s and loaded when the model searches for them",
			len(mcpNames), len(a.allowed)+len(mcpNames)-len(loaded)-1, share*100, mcpSearchTool))
	}
}

// refreshDeferred rebuilds the tool list when a search loaded tools.
func (a *Agent) refreshDeferred() {
	if a.deferred == nil {
		return
	}
	a.deferred.mu.Lock()
	changed := a.deferred.changed
	a.deferred.mu.Unlock()
	if changed {
		a.buildTools()
	}
}

// searchMCPTools finds deferred MCP tools by words (or names them with
// "select:a,b") and loads what it finds for the next requests.
type searchMCPTools struct{ d *deferredTools }

func (t *searchMCPTools) Name() string { return mcpSearchTool }
func (t *searchMCPTools) Description() string {
	return "Search the MCP servers' tools that are not loaded yet, by words in their names and descriptions " +
		"(or \"select:mcp__server__tool,…\" for exact names). The tools found are loaded: you can call them from your next message on."
}
func (t *searchMCPTools) Schema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: []string{"query"}, Properties: map[string]*jsonschema.Schema{
		"query": {Type: "string", Description: `words to look for ("create github issue"), or "select:" and exact tool names`},
	}}
}
func (t *searchMCPTools) Access(context.Context, json.RawMessage) (tools.Access, error) {
	return tools.Access{Kind: tools.AccessRead}, nil
}

func (t *searchMCPTools) Run(_ context.Context, args json.RawMessage) (tools.Result, error) {
	var a struct{ Query string }
	if err := json.Unmarshal(args, &a); err != nil {
		return tools.Result{}, fmt.Errorf("arguments: %w", err)
	}
	d := t.d
	d.mu.Lock()
	defer d.mu.Unlock()
	found := d.match(a.Query)
	if len(found) == 0 {
		return tools.Result{Output: fmt.Sprintf("no MCP tool matches %q; %d are available: %s", a.Query, len(d.names), strings.Join(d.names, ", "))}, nil
	}
	for _, n := range found {
		if !slices.Contains(d.loaded, n) {
			d.loaded = append(d.loaded, n)
			d.changed = true
		}
	}
	if over := len(d.loaded) - maxLoadedMCPTools; over > 0 {
		d.loaded = d.loaded[over:] // the oldest loads make room
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Loaded %d tool(s); call them from your next message:\n", len(found))
	for _, s := range d.reg.Specs(found) {
		params, _ := json.Marshal(s.Parameters)
		fmt.Fprintf(&b, "\n%s — %s\nparameters: %s\n", s.Name, s.Description, params)
	}
	return tools.Result{Output: b.String()}, nil
}

// match ranks the deferred tools for a query: a word in the name counts
// three, in the description one; the best eight are returned.
func (d *deferredTools) match(query string) []string {
	if names, ok := strings.CutPrefix(strings.TrimSpace(query), "select:"); ok {
		var out []string
		for _, n := range strings.Split(names, ",") {
			if n = strings.TrimSpace(n); slices.Contains(d.names, n) {
				out = append(out, n)
			}
		}
		return out
	}
	words := strings.Fields(strings.ToLower(query))
	type scored struct {
		name  string
		score int
	}
	var ranked []scored
	specs := d.reg.Specs(d.names)
	for _, s := range specs {
		name, desc := strings.ToLower(s.Name), strings.ToLower(s.Description)
		score := 0
		for _, w := range words {
			if strings.Contains(name, w) {
				score += 3
			}
			if strings.Contains(desc, w) {
				score++
			}
		}
		if score > 0 {
			ranked = append(ranked, scored{s.Name, score})
		}
	}
	sort.SliceStable(ranked, func(i, j int) bool { return ranked[i].score > ranked[j].score })
	var out []string
	for i := 0; i < len(ranked) && i < 8; i++ {
		out = append(out, ranked[i].name)
	}
	return out
}
