// Package llmtest is a fake OpenAI-compatible chat-completions server for
// tests. It speaks the real wire format (SSE chunks, tool-call argument
// fragments, a usage chunk, [DONE], error bodies) so Polly's real client
// (agent/llm) and everything above it run unchanged, on loopback, with no
// network; agent/llm's tests also run the official openai-go client against
// it, so the fake stays what the SDK expects.
//
// A test scripts the model as a list of steps; each chat request consumes the
// next one:
//
//	srv := llmtest.NewServer(t,
//		llmtest.Call("read_file", `{"path":"go.mod"}`), // first reply: a tool call (id call_1)
//		llmtest.Fail{Status: 429, RetryAfter: "1"},      // second request: rate limited
//		llmtest.Text("done"),                            // third: plain text
//	)
//	client := llm.New(llm.Config{BaseURL: srv.URL()})
//	// ... drive the code under test ...
//	got := srv.Last()              // the last chat request, decoded
//	_ = got.Messages[len(got.Messages)-1].ToolCallID
//
// Replies can be computed from the request with Func, which is how long
// scripted runs are written:
//
//	srv := llmtest.NewServer(t, llmtest.Func(func(r llmtest.Request) llmtest.Step {
//		if r.LastMessage().Role == "tool" {
//			return llmtest.Text("ok")
//		}
//		return llmtest.Call("bash", `{"cmd":"ls"}`)
//	}))
//
// A Func step is consumed like any other; Repeat(n, f) scripts n requests
// with one function, and Serve(f) answers every request after the script
// with f, for runs whose length the code under test decides.
//
// By default the server validates each conversation the way OpenAI does
// (every tool call answered by tool messages right after it, no orphaned tool
// messages, no fields outside the wire format) and answers violations with a
// 400 invalid_request_error; Strict(false) turns that off. When the script
// runs out, the server answers 500 naming the exhausted script and fails the
// test; a scripted step left unused when the test ends fails it too.
package llmtest
