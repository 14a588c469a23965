package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"amid/host/planner"
	"amid/plugins/protocol/schema"
)

func TestGoodReply(t *testing.T) {
	// A Markdown fence around the object, as many models write it.
	e := newEndpoint(t, reply("```json\n"+goodReply+"\n```", 900, 120))
	p, fb, ev, _ := newTest(t, e, Config{Temperature: 0.2})
	lanes, err := p.Plan(context.Background(), testInput())
	if err != nil {
		t.Fatal(err)
	}
	want := []planner.Lane{
		{Name: "unet-wide", Plugin: "segmentation", Config: json.RawMessage(`{"arch":"unet","epochs":30,"lr":0.002}`), Rationale: "anisotropic CT: a wider U-Net"},
		{Name: "resunet", Plugin: "segmentation", Config: json.RawMessage(`{"arch":"resunet","lr":0.0005}`), Rationale: "a residual variant"},
	}
	if len(lanes) != len(want) {
		t.Fatalf("lanes = %+v", lanes)
	}
	for i := range want {
		if lanes[i].Name != want[i].Name || lanes[i].Plugin != want[i].Plugin || string(lanes[i].Config) != string(want[i].Config) || lanes[i].Rationale != want[i].Rationale {
			t.Errorf("lane %d = %+v (config %s), want %+v", i, lanes[i], lanes[i].Config, want[i])
		}
	}
	if fb.calls.Load() != 0 {
		t.Error("fallback called on a good reply")
	}
	// 900 + 120: the usage the endpoint reported.
	if p.Used() != 1020 {
		t.Errorf("Used = %d, want 1020", p.Used())
	}
	reqs := e.requests(t)
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "test-model" || len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[1].Role != "user" {
		t.Errorf("request = %+v", r)
	}
	if math.Abs(r.Temperature-0.2) > 1e-6 {
		t.Errorf("temperature = %g, want 0.2", r.Temperature)
	}
	if r.ResponseFormat == nil || r.ResponseFormat.Type != "json_schema" || r.ResponseFormat.JSONSchema == nil ||
		r.ResponseFormat.JSONSchema.Name != "lanes" || compact(t, r.ResponseFormat.JSONSchema.Schema) != compact(t, ReplySchema) {
		t.Errorf("response_format = %+v", r.ResponseFormat)
	}
	if got := e.headers[0].Get("Authorization"); got != "Bearer sk-test-0123" {
		t.Errorf("Authorization = %q", got)
	}
	// The user message is the scrubbed input: the plugins' schemas and candidates, the
	// fingerprint's numbers, the budget in seconds.
	var u payload
	if err := json.Unmarshal([]byte(r.Messages[1].Content), &u); err != nil {
		t.Fatalf("user message is not JSON: %v", err)
	}
	if len(u.Plugins) != 2 || u.Plugins[0].Name != "segmentation" || string(u.Plugins[0].Candidates[0].Config) != `{"arch":"unet","epochs":20,"lr":0.001}` ||
		compact(t, u.Plugins[0].ConfigSchema) != compact(t, json.RawMessage(segSchema)) || u.BudgetSeconds != 1200 || u.Slots != 2 {
		t.Errorf("user message = %s", r.Messages[1].Content)
	}
	mustContain(t, "fingerprint", string(u.Fingerprint), `"median":[0.8,0.8,2.5]`, `"modality":"CT"`)
	if len(ev.messages("llm.request")) != 1 || len(ev.messages("llm.reply")) != 1 || len(ev.messages("llm.fallback")) != 0 {
		t.Errorf("events = %+v", ev.list)
	}
}

func compact(t *testing.T, b json.RawMessage) string {
	t.Helper()
	c, err := canonical(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestReplySchemaCompiles(t *testing.T) {
	s, err := schema.Compile(ReplySchema)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check([]byte(goodReply)); err != nil {
		t.Errorf("good reply: %v", err)
	}
	if err := s.Check([]byte(`{"lanes":[]}`)); err == nil {
		t.Error("no lanes accepted")
	}
}

func TestMalformedThenGood(t *testing.T) {
	e := newEndpoint(t, reply(`{"lanes": [{"name": "a", "plugin": `, 100, 10), reply(goodReply, 100, 10))
	p, fb, ev, waits := newTest(t, e, Config{})
	lanes, err := p.Plan(context.Background(), testInput())
	if err != nil || len(lanes) != 2 {
		t.Fatalf("lanes = %+v, err = %v", lanes, err)
	}
	if fb.calls.Load() != 0 {
		t.Error("fallback called")
	}
	reqs := e.requests(t)
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	// The retry carries the bad reply and the error.
	m := reqs[1].Messages
	if len(m) != 4 || m[2].Role != "assistant" || !strings.HasPrefix(m[2].Content, `{"lanes": [{"name"`) || m[3].Role != "user" {
		t.Fatalf("retry messages = %+v", m)
	}
	mustContain(t, "feedback", m[3].Content, "not usable", "not a JSON object", "unexpected EOF")
	if r := ev.messages("llm.retry"); len(r) != 1 {
		t.Errorf("retry events = %q", r)
	}
	// A bad reply is retried at once.
	if len(*waits) != 1 || (*waits)[0] != 0 {
		t.Errorf("waits = %v", *waits)
	}
}

func TestInvalidLanesDropped(t *testing.T) {
	in := testInput()
	in.Results = []planner.Result{{Lane: "unet-small", Plugin: "segmentation", Config: json.RawMessage(`{"lr":0.001,"epochs":20,"arch":"unet"}`),
		Score: 0.71, Folds: 1, Status: "done", Took: time.Minute}}
	e := newEndpoint(t, reply(`{"lanes":[
	 {"name":"fast","plugin":"segmentation","config":{"lr":"fast"},"rationale":"lr is not a number"},
	 {"name":"boost","plugin":"xgboost","config":{},"rationale":"no such plugin"},
	 {"name":"again","plugin":"segmentation","config":{"arch":"unet","epochs":20,"lr":0.001},"rationale":"trained already"},
	 {"name":"unet-small","plugin":"segmentation","config":{"lr":0.01,"arch":"unet"},"rationale":"higher lr"},
	 {"name":"twice","plugin":"segmentation","config":{"arch":"unet","lr":0.01},"rationale":"same as the one before"},
	 {"name":"cls","plugin":"classification","config":{"depth":3},"rationale":"no backbone"}]}`, 10, 10))
	p, fb, ev, _ := newTest(t, e, Config{})
	lanes, err := p.Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	// One lane survives, renamed so it does not take the trained lane's name.
	if len(lanes) != 1 || lanes[0].Name != "unet-small-2" || string(lanes[0].Config) != `{"arch":"unet","lr":0.01}` {
		t.Fatalf("lanes = %+v", lanes)
	}
	if fb.calls.Load() != 0 || e.count() != 1 {
		t.Errorf("fallback calls %d, requests %d", fb.calls.Load(), e.count())
	}
	d := strings.Join(ev.messages("llm.lane_dropped"), "\n")
	mustContain(t, "dropped lanes", d,
		"lane fast dropped: config: configuration does not match the schema: config.lr: got string, want number",
		`lane boost dropped: plugin "xgboost" is not offered (offered: classification, segmentation)`,
		`lane again dropped: same configuration as lane "unet-small", already trained`,
		`lane twice dropped: same configuration as lane "unet-small-2" of this reply`,
		"lane cls dropped: config: configuration does not match the schema: config: missing property 'backbone'")
	// The user message carried the result, its score and its duration.
	var u payload
	if err := json.Unmarshal([]byte(e.requests(t)[0].Messages[1].Content), &u); err != nil {
		t.Fatal(err)
	}
	if len(u.Results) != 1 || u.Results[0].Score == nil || *u.Results[0].Score != 0.71 || u.Results[0].TookSeconds != 60 {
		t.Errorf("results = %+v", u.Results)
	}
}

func TestNoValidLaneIsRetried(t *testing.T) {
	e := newEndpoint(t, reply(`{"lanes":[{"name":"x","plugin":"segmentation","config":{"lr":-1},"rationale":""}]}`, 10, 10), reply(goodReply, 10, 10))
	p, _, _, _ := newTest(t, e, Config{})
	if lanes, err := p.Plan(context.Background(), testInput()); err != nil || len(lanes) != 2 {
		t.Fatalf("lanes = %+v, err = %v", lanes, err)
	}
	m := e.requests(t)[1].Messages
	mustContain(t, "feedback", m[len(m)-1].Content, "no valid lane", "lane x: config: configuration does not match the schema: config.lr: exclusiveMinimum: got -1, want 0")
	if strings.Contains(m[len(m)-1].Content, "file:") || strings.Contains(m[len(m)-1].Content, "[path]") {
		t.Errorf("feedback names the schema's file: %s", m[len(m)-1].Content)
	}
}

func TestRateLimited(t *testing.T) {
	for _, c := range []struct {
		name       string
		status     int
		retryAfter string
		want       time.Duration
	}{
		{"Retry-After seconds", http.StatusTooManyRequests, "2", 2 * time.Second},
		// An hour is more than MaxWait (5s here): the wait is bounded.
		{"Retry-After bounded", http.StatusTooManyRequests, "3600", 5 * time.Second},
		{"Retry-After date", http.StatusTooManyRequests, time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), 5 * time.Second},
		// No Retry-After: the first backoff (Backoff, 300ms here).
		{"no Retry-After", http.StatusTooManyRequests, "", 300 * time.Millisecond},
		{"server error", http.StatusServiceUnavailable, "", 300 * time.Millisecond},
		{"server error with Retry-After", http.StatusBadGateway, "1", time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := map[string]string{}
			if c.retryAfter != "" {
				h["Retry-After"] = c.retryAfter
			}
			e := newEndpoint(t, fail(c.status, h, "slow down"), reply(goodReply, 10, 10))
			p, fb, ev, waits := newTest(t, e, Config{MaxWait: 5 * time.Second, Backoff: 300 * time.Millisecond})
			lanes, err := p.Plan(context.Background(), testInput())
			if err != nil || len(lanes) != 2 || fb.calls.Load() != 0 {
				t.Fatalf("lanes = %+v, err = %v, fallback calls %d", lanes, err, fb.calls.Load())
			}
			if len(*waits) != 1 || (*waits)[0] != c.want {
				t.Errorf("waits = %v, want [%v]", *waits, c.want)
			}
			if r := ev.messages("llm.retry"); len(r) != 1 || !strings.Contains(r[0], fmt.Sprintf("HTTP %d", c.status)) {
				t.Errorf("retry events = %q", r)
			}
			if e.count() != 2 {
				t.Errorf("%d requests, want 2", e.count())
			}
		})
	}
}

func TestBackoffDoubles(t *testing.T) {
	e := newEndpoint(t, fail(http.StatusInternalServerError, nil, "boom"))
	p, fb, ev, waits := newTest(t, e, Config{Retries: 4, Backoff: time.Second, MaxWait: 5 * time.Second})
	if _, err := p.Plan(context.Background(), testInput()); err != nil {
		t.Fatal(err)
	}
	// 1s doubling, bounded by 5s; no wait after the fifth and last attempt.
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second}
	if len(*waits) != len(want) {
		t.Fatalf("waits = %v, want %v", *waits, want)
	}
	for i := range want {
		if (*waits)[i] != want[i] {
			t.Errorf("wait %d = %v, want %v", i, (*waits)[i], want[i])
		}
	}
	if fb.calls.Load() != 1 || e.count() != 5 {
		t.Errorf("fallback calls %d, requests %d", fb.calls.Load(), e.count())
	}
	f := ev.messages("llm.fallback")
	if len(f) != 1 || !strings.HasPrefix(f[0], "llm planner failed after 5 attempts: server error (HTTP 500)") || !strings.HasSuffix(f[0], "; using rules") {
		t.Errorf("fallback events = %q", f)
	}
}

func TestHangingServer(t *testing.T) {
	e := newEndpoint(t, hang)
	p, fb, ev, _ := newTest(t, e, Config{Timeout: 100 * time.Millisecond, Retries: 1})
	lanes, err := p.Plan(context.Background(), testInput())
	if err != nil {
		t.Fatal(err)
	}
	if fb.calls.Load() != 1 || len(lanes) != 1 || lanes[0].Name != "rules-unet-small" {
		t.Errorf("lanes = %+v, fallback calls %d", lanes, fb.calls.Load())
	}
	if e.count() != 2 {
		t.Errorf("%d requests, want 2 (Retries 1)", e.count())
	}
	f := ev.messages("llm.fallback")
	if len(f) != 1 || f[0] != "llm planner failed after 2 attempts: request timed out after 100ms; using rules" {
		t.Errorf("fallback events = %q", f)
	}
}

func TestCancelled(t *testing.T) {
	e := newEndpoint(t, hang)
	p, fb, _, _ := newTest(t, e, Config{Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for e.count() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := p.Plan(ctx, testInput())
	if !errors.Is(err, context.Canceled) || fb.calls.Load() != 0 {
		t.Errorf("err = %v, fallback calls %d; want context.Canceled and no fallback", err, fb.calls.Load())
	}
}

func TestGarbageFallsBack(t *testing.T) {
	e := newEndpoint(t, reply("I am sorry, I cannot help with that.", 50, 9))
	p, fb, ev, _ := newTest(t, e, Config{})
	lanes, err := p.Plan(context.Background(), testInput())
	if err != nil || len(lanes) != 1 || lanes[0].Rationale != "rules" {
		t.Fatalf("lanes = %+v, err = %v", lanes, err)
	}
	// DefaultRetries (2) after the first attempt.
	if fb.calls.Load() != 1 || e.count() != 1+DefaultRetries {
		t.Errorf("fallback calls %d, requests %d", fb.calls.Load(), e.count())
	}
	f := ev.messages("llm.fallback")
	if len(f) != 1 || !strings.HasPrefix(f[0], "llm planner failed after 3 attempts: reply is not a JSON object") || !strings.HasSuffix(f[0], "; using rules") {
		t.Errorf("fallback events = %q", f)
	}
	// Without a fallback the error comes back.
	p2 := New(p.cfg, nil, nil)
	p2.sleep = p.sleep
	if _, err := p2.Plan(context.Background(), testInput()); err == nil || !strings.Contains(err.Error(), "llm planner failed after 3 attempts") {
		t.Errorf("no fallback: err = %v", err)
	}
}

func TestTokenBudget(t *testing.T) {
	// 1000 prompt + 200 completion tokens: the budget of 1200 is spent by the first call.
	e := newEndpoint(t, reply(goodReply, 1000, 200))
	p, fb, ev, _ := newTest(t, e, Config{MaxTokens: 1200})
	if lanes, err := p.Plan(context.Background(), testInput()); err != nil || len(lanes) != 2 || fb.calls.Load() != 0 {
		t.Fatalf("first plan: lanes %+v, err %v", lanes, err)
	}
	lanes, err := p.Plan(context.Background(), testInput())
	if err != nil || len(lanes) != 1 || fb.calls.Load() != 1 {
		t.Fatalf("second plan: lanes %+v, err %v, fallback calls %d", lanes, err, fb.calls.Load())
	}
	if e.count() != 1 {
		t.Errorf("%d requests, want 1: the second call must not be made", e.count())
	}
	f := ev.messages("llm.fallback")
	if len(f) != 1 || !strings.Contains(f[0], "token budget exhausted: 1200 of 1200 tokens used") {
		t.Errorf("fallback events = %q", f)
	}

	// A budget smaller than the request itself: nothing is sent.
	e2 := newEndpoint(t, reply(goodReply, 1, 1))
	p2, fb2, ev2, _ := newTest(t, e2, Config{MaxTokens: 50})
	if _, err := p2.Plan(context.Background(), testInput()); err != nil || e2.count() != 0 || fb2.calls.Load() != 1 {
		t.Errorf("tiny budget: err %v, requests %d, fallback calls %d", err, e2.count(), fb2.calls.Load())
	}
	if f := ev2.messages("llm.fallback"); len(f) != 1 || !strings.Contains(f[0], "would go beyond the budget") {
		t.Errorf("fallback events = %q", f)
	}

	// An endpoint that reports no usage is charged an estimate.
	e3 := newEndpoint(t, reply(goodReply, 0, 0))
	p3, _, _, _ := newTest(t, e3, Config{MaxTokens: 100000})
	if _, err := p3.Plan(context.Background(), testInput()); err != nil || p3.Used() == 0 {
		t.Errorf("no usage: err %v, used %d", err, p3.Used())
	}
}

func TestResponseFormatRefused(t *testing.T) {
	refuse := func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req chatRequest
		_ = json.Unmarshal(body, &req)
		if req.ResponseFormat != nil && req.ResponseFormat.Type == "json_schema" {
			fail(http.StatusBadRequest, nil, "response_format type json_schema is not supported by this model")(w, r, body)
			return
		}
		reply(goodReply, 10, 10)(w, r, body)
	}
	e := newEndpoint(t, refuse)
	p, fb, ev, _ := newTest(t, e, Config{Retries: -1})
	for range 2 {
		if lanes, err := p.Plan(context.Background(), testInput()); err != nil || len(lanes) != 2 || fb.calls.Load() != 0 {
			t.Fatalf("lanes %+v, err %v, fallback calls %d", lanes, err, fb.calls.Load())
		}
	}
	reqs := e.requests(t)
	// json_schema refused once; json_object from then on, for the second Plan too.
	if len(reqs) != 3 || reqs[0].ResponseFormat.Type != "json_schema" || reqs[1].ResponseFormat.Type != "json_object" || reqs[2].ResponseFormat.Type != "json_object" {
		t.Errorf("%d requests", len(reqs))
	}
	if len(ev.messages("llm.format")) != 1 {
		t.Errorf("format events = %q", ev.messages("llm.format"))
	}
}

func TestKeyRefused(t *testing.T) {
	e := newEndpoint(t, fail(http.StatusUnauthorized, nil, "invalid api key"))
	p, fb, ev, _ := newTest(t, e, Config{})
	if _, err := p.Plan(context.Background(), testInput()); err != nil {
		t.Fatal(err)
	}
	// A refused key is not retried.
	if e.count() != 1 || fb.calls.Load() != 1 {
		t.Errorf("requests %d, fallback calls %d", e.count(), fb.calls.Load())
	}
	f := ev.messages("llm.fallback")
	if len(f) != 1 || !strings.Contains(f[0], "refused the API key from $AMID_TEST_LLM_KEY (HTTP 401)") || strings.Contains(f[0], "sk-test-0123") {
		t.Errorf("fallback events = %q", f)
	}
}

func TestBadConfigFallsBack(t *testing.T) {
	fb, ev := &rules{}, &events{}
	p := New(Config{BaseURL: "ftp://example.org", Model: "m"}, fb, ev.log)
	if lanes, err := p.Plan(context.Background(), testInput()); err != nil || len(lanes) != 1 || fb.calls.Load() != 1 {
		t.Errorf("lanes %+v, err %v", lanes, err)
	}
	if f := ev.messages("llm.fallback"); len(f) != 1 || !strings.Contains(f[0], "is not an http or https URL") {
		t.Errorf("fallback events = %q", f)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3"}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
	for name, c := range map[string]struct {
		change func(*Config)
		want   string
	}{
		"no url":      {func(c *Config) { c.BaseURL = "" }, "base_url is empty"},
		"not http":    {func(c *Config) { c.BaseURL = "file:///etc" }, "not an http or https URL"},
		"no host":     {func(c *Config) { c.BaseURL = "http://" }, "not an http or https URL"},
		"credentials": {func(c *Config) { c.BaseURL = "https://u:secret@example.org/v1" }, "carries credentials"},
		"no model":    {func(c *Config) { c.Model = "" }, "model is empty"},
		"budget":      {func(c *Config) { c.MaxTokens = -1 }, "max_tokens -1 is negative"},
		"temperature": {func(c *Config) { c.Temperature = 3 }, "temperature 3 is outside"},
	} {
		c2 := ok
		c.change(&c2)
		if err := c2.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
}

func TestPing(t *testing.T) {
	t.Setenv("AMID_TEST_LLM_KEY", "sk-ping")
	cfg := func(e *endpoint, model string) Config {
		return Config{BaseURL: e.URL + "/v1", Model: model, APIKeyEnv: "AMID_TEST_LLM_KEY", Timeout: 2 * time.Second}
	}
	e := newEndpoint(t, reply("OK", 5, 1))
	e.mu.Lock()
	e.models = []string{"llama3", "qwen2.5"}
	e.mu.Unlock()
	if err := Ping(context.Background(), cfg(e, "qwen2.5")); err != nil {
		t.Errorf("offered model: %v", err)
	}
	if err := Ping(context.Background(), cfg(e, "gpt-x")); err == nil || !strings.Contains(err.Error(), `does not offer model "gpt-x" (it offers llama3, qwen2.5)`) {
		t.Errorf("model not offered: %v", err)
	}
	if e.count() != 0 {
		t.Errorf("a model list answers the ping: %d chat requests", e.count())
	}
	// No /models: the model is asked.
	e2 := newEndpoint(t, reply("OK", 5, 1))
	if err := Ping(context.Background(), cfg(e2, "m")); err != nil || e2.count() != 1 {
		t.Errorf("no model list: err %v, chat requests %d", err, e2.count())
	}
	e3 := newEndpoint(t, fail(http.StatusUnauthorized, nil, "bad key"))
	if err := Ping(context.Background(), cfg(e3, "m")); err == nil || !strings.Contains(err.Error(), "refused the API key from $AMID_TEST_LLM_KEY (HTTP 401)") {
		t.Errorf("refused key: %v", err)
	}
	e4 := newEndpoint(t, hang)
	c4 := cfg(e4, "m")
	c4.Timeout = 100 * time.Millisecond
	if err := Ping(context.Background(), c4); err == nil || !strings.Contains(err.Error(), "did not answer within 100ms") {
		t.Errorf("hanging endpoint: %v", err)
	}
	closed := newEndpoint(t, hang)
	closed.Close()
	if err := Ping(context.Background(), cfg(closed, "m")); err == nil {
		t.Error("closed endpoint: no error")
	}
	if err := Ping(context.Background(), Config{Model: "m"}); err == nil || !strings.Contains(err.Error(), "base_url is empty") {
		t.Errorf("no url: %v", err)
	}
}

func TestRequestNotSent(t *testing.T) {
	// go-openai refuses a temperature for o1 models before sending anything: no retry.
	e := newEndpoint(t, reply(goodReply, 1, 1))
	p, fb, ev, _ := newTest(t, e, Config{Model: "o1-mini", Temperature: 0.5})
	if _, err := p.Plan(context.Background(), testInput()); err != nil {
		t.Fatal(err)
	}
	if e.count() != 0 || fb.calls.Load() != 1 {
		t.Errorf("requests %d, fallback calls %d", e.count(), fb.calls.Load())
	}
	if f := ev.messages("llm.fallback"); len(f) != 1 || !strings.HasPrefix(f[0], "llm planner failed after 1 attempt: request not sent: ") {
		t.Errorf("fallback events = %q", f)
	}
}

func TestReplyNotAChatCompletion(t *testing.T) {
	// A proxy's HTML page with status 200, then the real endpoint.
	html := func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>gateway</html>"))
	}
	e := newEndpoint(t, html, reply(goodReply, 1, 1))
	p, fb, ev, waits := newTest(t, e, Config{Backoff: 250 * time.Millisecond})
	if lanes, err := p.Plan(context.Background(), testInput()); err != nil || len(lanes) != 2 || fb.calls.Load() != 0 {
		t.Fatalf("lanes %+v, err %v", lanes, err)
	}
	if r := ev.messages("llm.retry"); len(r) != 1 || !strings.Contains(r[0], "reply is not a chat completion") || len(*waits) != 1 || (*waits)[0] != 250*time.Millisecond {
		t.Errorf("retry events %q, waits %v", r, *waits)
	}
}
