package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"amid/host/planner"
	"amid/plugins/protocol"
)

// endpoint is a loopback server speaking the chat-completions protocol. Each request is
// answered by the next handler in turn; the last one answers all further requests. Every
// request's body and headers are kept.
type endpoint struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
	handlers []func(w http.ResponseWriter, r *http.Request, body []byte)
	models   []string // served at /models; 404 when nil
}

func newEndpoint(t *testing.T, handlers ...func(w http.ResponseWriter, r *http.Request, body []byte)) *endpoint {
	t.Helper()
	e := &endpoint{handlers: handlers}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

func (e *endpoint) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	if r.URL.Path == "/v1/models" {
		models := e.models
		e.mu.Unlock()
		if models == nil {
			http.NotFound(w, r)
			return
		}
		var data []map[string]any
		for _, m := range models {
			data = append(data, map[string]any{"id": m, "object": "model", "owned_by": "test"})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
		return
	}
	if r.URL.Path != "/v1/chat/completions" {
		e.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	e.bodies = append(e.bodies, body)
	e.headers = append(e.headers, r.Header.Clone())
	h := e.handlers[min(len(e.bodies), len(e.handlers))-1]
	e.mu.Unlock()
	h(w, r, body)
}

// requests returns the bodies received so far, decoded.
func (e *endpoint) requests(t *testing.T) []chatRequest {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []chatRequest
	for _, b := range e.bodies {
		var r chatRequest
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("request body is not JSON: %v: %s", err, b)
		}
		out = append(out, r)
	}
	return out
}

func (e *endpoint) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.bodies)
}

// chatRequest is the part of a chat-completions request the tests look at.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Temperature float64 `json:"temperature"`
}

// reply answers with a completion whose content is content and whose usage is prompt and
// completion tokens.
func reply(content string, prompt, completion int) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "test-model",
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
			"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
		})
	}
}

// fail answers with an HTTP error in the OpenAI error format.
func fail(status int, header map[string]string, message string) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error"}})
	}
}

// hang answers nothing until the client gives up.
func hang(w http.ResponseWriter, r *http.Request, _ []byte) { <-r.Context().Done() }

// rules is a trivial fallback planner: one lane from the first plugin's first candidate.
type rules struct{ calls atomic.Int32 }

func (f *rules) Plan(_ context.Context, in planner.Input) ([]planner.Lane, error) {
	f.calls.Add(1)
	c := in.Plugins[0].Candidates[0]
	return []planner.Lane{{Name: "rules-" + c.Name, Plugin: in.Plugins[0].Name, Config: c.Config, Rationale: "rules"}}, nil
}

// events records what a planner logs.
type events struct {
	mu   sync.Mutex
	list []event
}

type event struct {
	name   string
	fields map[string]any
}

func (e *events) log(name string, fields map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, event{name, fields})
}

// messages returns the "message" field of every event called name.
func (e *events) messages(name string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.list {
		if ev.name == name {
			out = append(out, fmt.Sprint(ev.fields["message"]))
		}
	}
	return out
}

// Schemas of the two plugins of the test input: a segmentation plugin whose "lr" must be a
// positive number and "arch" one of two names, and a classification plugin that needs a
// backbone.
const (
	segSchema = `{"type":"object","properties":{"lr":{"type":"number","exclusiveMinimum":0},` +
		`"epochs":{"type":"integer","minimum":1},"arch":{"enum":["unet","resunet"]}},` +
		`"required":["lr"],"additionalProperties":false}`
	clsSchema = `{"type":"object","properties":{"backbone":{"type":"string"}},"required":["backbone"]}`
)

func testInput() planner.Input {
	return planner.Input{
		Task:        json.RawMessage(`{"id":"demo","title":"Liver segmentation","kind":"segmentation"}`),
		Kind:        "segmentation",
		Dims:        3,
		Metric:      "dice",
		Fingerprint: json.RawMessage(`{"cases":{"train":8,"test":2},"spacing":{"median":[0.8,0.8,2.5]},"modality":"CT"}`),
		Plugins: []planner.Plugin{
			{Name: "segmentation", Schema: json.RawMessage(segSchema), Candidates: []protocol.Candidate{
				{Name: "unet-small", Config: []byte(`{"lr":0.001,"epochs":20,"arch":"unet"}`), Rationale: "a small U-Net"},
			}},
			{Name: "classification", Schema: json.RawMessage(clsSchema), Candidates: []protocol.Candidate{
				{Name: "resnet", Config: []byte(`{"backbone":"resnet18"}`)},
			}},
		},
		HigherIsBetter: true,
		Budget:         20 * time.Minute,
		Remaining:      20 * time.Minute,
		Slots:          2,
	}
}

// goodReply is a usable reply of two lanes.
const goodReply = `{"lanes":[
 {"name":"UNet Wide","plugin":"segmentation","config":{"arch":"unet","lr":0.002,"epochs":30},"rationale":"anisotropic CT: a wider U-Net"},
 {"name":"resunet","plugin":"segmentation","config":{"lr":0.0005,"arch":"resunet"},"rationale":"a residual variant"}]}`

// newTest returns a planner against e with a fallback and an event log; the planner's
// waits are recorded instead of slept.
func newTest(t *testing.T, e *endpoint, cfg Config) (*Planner, *rules, *events, *[]time.Duration) {
	t.Helper()
	cfg.BaseURL = e.URL + "/v1"
	if cfg.Model == "" {
		cfg.Model = "test-model"
	}
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = "AMID_TEST_LLM_KEY"
		t.Setenv("AMID_TEST_LLM_KEY", "sk-test-0123")
	}
	fb, ev := &rules{}, &events{}
	p := New(cfg, fb, ev.log)
	var mu sync.Mutex
	waits := &[]time.Duration{}
	p.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	return p, fb, ev, waits
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q: %s", what, sub, s)
		}
	}
}
