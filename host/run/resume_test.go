package run

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"amid/host/audit/audittest"
	"amid/host/planner/llm"
)

// testModel is the model the loopback endpoint offers.
const testModel = "test-model"

// chatServer is a loopback endpoint speaking the OpenAI protocol: /v1/models lists
// testModel, and /v1/chat/completions plans as an LLM would. Asked to plan (no results), it
// proposes the first candidate of the first plugin; shown results, it proposes the best
// lane's configuration with half its learning rate, as lane "refined". It keeps the user
// message of every chat request and the Authorization header of the last one.
type chatServer struct {
	*httptest.Server
	mu    sync.Mutex
	users []llmPayload
	auth  string
}

// llmPayload is the part of the planner's user message the server reads.
type llmPayload struct {
	Plugins []struct {
		Name       string `json:"name"`
		Candidates []struct {
			Config json.RawMessage `json:"config"`
		} `json:"candidates"`
	} `json:"plugins"`
	Results []struct {
		Plugin string          `json:"plugin"`
		Config json.RawMessage `json:"config"`
	} `json:"results"`
}

func newChatServer(t *testing.T) *chatServer {
	t.Helper()
	s := &chatServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *chatServer) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/models":
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{{"id": testModel, "object": "model", "owned_by": "test"}}})
		return
	case "/v1/chat/completions":
	default:
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	var in llmPayload
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, m := range req.Messages {
		if m.Role == "user" {
			if err := json.Unmarshal([]byte(m.Content), &in); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			break
		}
	}
	s.mu.Lock()
	s.users = append(s.users, in)
	s.auth = r.Header.Get("Authorization")
	s.mu.Unlock()
	type lane struct {
		Name      string          `json:"name"`
		Plugin    string          `json:"plugin"`
		Config    json.RawMessage `json:"config"`
		Rationale string          `json:"rationale"`
	}
	var l lane
	switch {
	case len(in.Results) > 0:
		var cfg map[string]any
		if err := json.Unmarshal(in.Results[0].Config, &cfg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		lr, _ := cfg["learning_rate"].(float64)
		if lr == 0 {
			lr = 3e-3 // the segmentation plugin's default
		}
		cfg["learning_rate"] = lr / 2
		b, _ := json.Marshal(cfg)
		l = lane{Name: "refined", Plugin: in.Results[0].Plugin, Config: b, Rationale: "half the learning rate of the best lane"}
	case len(in.Plugins) > 0 && len(in.Plugins[0].Candidates) > 0:
		l = lane{Name: "first", Plugin: in.Plugins[0].Name, Config: in.Plugins[0].Candidates[0].Config, Rationale: "the plugin's first candidate"}
	default:
		http.Error(w, "no plugin candidates to plan from", http.StatusBadRequest)
		return
	}
	content, _ := json.Marshal(map[string]any{"lanes": []lane{l}})
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": testModel,
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": string(content)}}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
	})
}

// requests returns the user messages of the chat requests so far.
func (s *chatServer) requests() []llmPayload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llmPayload(nil), s.users...)
}

// stopOn returns an event function that cancels the context it returns at the first event
// whose message starts with prefix, logging every event to t.
func stopOn(t *testing.T, prefix string) (func(Event), context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return func(ev Event) {
		if ev.Progress != nil {
			return
		}
		t.Logf("%s %s", ev.Phase, ev.Message)
		if strings.HasPrefix(ev.Message, prefix) {
			cancel()
		}
	}, ctx
}

// TestResumeKeepsLLMPlanner starts a run with the LLM planner, stops it as exploration
// begins and resumes it: the resumed run asks the same endpoint to refine the lanes.
func TestResumeKeepsLLMPlanner(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a lane for a few seconds")
	}
	const key = "sk-resume-test-key"
	t.Setenv(llm.DefaultAPIKeyEnv, key)
	srv := newChatServer(t)
	data := demo(t)
	e, done := env(t, t.TempDir())
	defer done()
	runDir := filepath.Join(t.TempDir(), "run")
	spec := LLMSpec(llm.Config{BaseURL: srv.URL + "/v1", Model: testModel})
	p, err := NewPlanner(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	events, ctx := stopOn(t, PhaseExplore)
	e.Events = events
	// 15 s: exploration's half of what is left after the final reserve gives the one lane
	// about the shortest fold the runner trains (minFoldTime, 5 s).
	r, err := New(Options{Task: filepath.Join(data, "task.yaml"), Dir: runDir, Budget: 15 * time.Second, Folds: 2, Planner: p, PlannerSpec: &spec}, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); err == nil {
		t.Fatal("the run was not stopped at exploration")
	}
	st, err := LoadState(runDir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != PhaseExplore || st.PlannerSpec == nil || *st.PlannerSpec != spec || st.Planner != "llm:"+testModel {
		t.Fatalf("stopped in phase %s with planner %q %+v; want explore, the LLM endpoint recorded", st.Phase, st.Planner, st.PlannerSpec)
	}
	raw, err := os.ReadFile(filepath.Join(runDir, stateFileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), key) {
		t.Error("run.json carries the API key")
	}
	if n := len(srv.requests()); n != 1 {
		t.Fatalf("%d chat requests before the stop, want 1 (the plan)", n)
	}
	if st.lane("first") == nil {
		t.Fatalf("the LLM's lane was not planned: %+v", st.Lanes)
	}

	events, ctx = stopOn(t, "the planner adds lane")
	e.Events = events
	r, err = Reopen(context.Background(), runDir, ResumeOptions{}, e)
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Run(ctx) // stopped once the refined lane is added, or ended by the budget
	reqs := srv.requests()
	if len(reqs) != 2 || len(reqs[1].Results) == 0 {
		t.Fatalf("chat requests after the resume: %+v; want the refinement, with results", reqs)
	}
	srv.mu.Lock()
	auth := srv.auth
	srv.mu.Unlock()
	if auth != "Bearer "+key {
		t.Errorf("the refinement's Authorization header is %q; want the key from $%s", auth, llm.DefaultAPIKeyEnv)
	}
	// The refined lane trains when exploration has time left for its minimum; in 15 s it
	// usually has none, and the notes say so.
	noted := false
	for _, n := range r.State().Notes {
		noted = noted || strings.Contains(n, "lane refined, proposed after the first round")
	}
	if r.State().lane("refined") == nil && !noted {
		t.Errorf("the refined lane was neither added nor noted: %+v, notes %q", r.State().Lanes, r.State().Notes)
	}
	refined := false
	for _, en := range audittest.Entries(t, filepath.Join(runDir, "audit.db")) {
		refined = refined || en.Action == "plan.refined"
		if en.Action == "planner.fallback" {
			t.Errorf("the resumed run fell back to the rules: %s", en.Details)
		}
	}
	if !refined {
		t.Error("the audit log does not record the refinement")
	}
}

// newStopped creates a run planned by spec without running it.
func newStopped(t *testing.T, spec PlannerSpec) (string, Env) {
	t.Helper()
	data := demo(t)
	e, done := env(t, t.TempDir())
	t.Cleanup(done)
	runDir := filepath.Join(t.TempDir(), "run")
	if _, err := New(Options{Task: filepath.Join(data, "task.yaml"), Dir: runDir, PlannerSpec: &spec}, e); err != nil {
		t.Fatal(err)
	}
	return runDir, e
}

// TestResumeFallsBackToRules resumes LLM-planned runs whose endpoint is gone or no longer
// configured: each continues with the rules and says so once, in the log, the notes and
// the audit log, keeping the recorded planner for a later resume.
func TestResumeFallsBackToRules(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // its address now refuses connections
	for _, c := range []struct {
		name string
		spec PlannerSpec
		o    ResumeOptions
		want string // in the sentence
	}{
		{"unreachable", LLMSpec(llm.Config{BaseURL: gone.URL + "/v1", Model: testModel}), ResumeOptions{}, gone.URL},
		{"not configured", PlannerSpec{Kind: PlannerRules}, ResumeOptions{Planner: PlannerLLM}, "no longer configured"},
	} {
		t.Run(c.name, func(t *testing.T) {
			runDir, e := newStopped(t, c.spec)
			var mu sync.Mutex
			var logged []string
			events, ctx := stopOn(t, "The LLM planner")
			e.Events = func(ev Event) {
				mu.Lock()
				logged = append(logged, ev.Message)
				mu.Unlock()
				events(ev)
			}
			r, err := Reopen(context.Background(), runDir, c.o, e)
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			if r.planner != nil {
				t.Fatalf("the planner is %T, want the rules (nil)", r.planner)
			}
			_ = r.Run(ctx) // stopped once the fallback is said
			var said []string
			for _, m := range logged {
				if strings.HasPrefix(m, "The LLM planner") {
					said = append(said, m)
				}
			}
			if len(said) != 1 || !strings.Contains(said[0], c.want) || !strings.HasSuffix(said[0], "continues with the rules planner.") {
				t.Fatalf("log %q; want one sentence naming %q and the rules", logged, c.want)
			}
			st, err := LoadState(runDir)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Notes) != 1 || st.Notes[0] != said[0] {
				t.Errorf("notes %q; want the sentence", st.Notes)
			}
			if st.PlannerSpec == nil || *st.PlannerSpec != c.spec {
				t.Errorf("recorded planner %+v; want %+v kept", st.PlannerSpec, c.spec)
			}
			n := 0
			for _, en := range audittest.Entries(t, filepath.Join(runDir, "audit.db")) {
				if en.Action == "planner.fallback" && strings.Contains(string(en.Details), c.want) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d planner.fallback entries in the audit log, want 1", n)
			}
		})
	}
}

// TestResumeOldStateAndOverride resumes a state written before planners were recorded with
// the rules, and replaces a recorded LLM planner with --planner rules without asking it.
func TestResumeOldStateAndOverride(t *testing.T) {
	srv := newChatServer(t)
	cfg := llm.Config{BaseURL: srv.URL + "/v1", Model: testModel}

	runDir, e := newStopped(t, LLMSpec(cfg))
	// The state as it was written before: the planner's name only.
	raw, err := os.ReadFile(filepath.Join(runDir, stateFileName))
	if err != nil {
		t.Fatal(err)
	}
	var old map[string]any
	if err := json.Unmarshal(raw, &old); err != nil {
		t.Fatal(err)
	}
	delete(old, "planner_spec")
	raw, _ = json.Marshal(old)
	if err := os.WriteFile(filepath.Join(runDir, stateFileName), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Reopen(context.Background(), runDir, ResumeOptions{LLM: cfg}, e)
	if err != nil {
		t.Fatalf("resume an old state: %v", err)
	}
	if r.planner != nil || r.resumeNote != "" || r.State().PlannerSpec != nil {
		t.Errorf("old state: planner %T, note %q, spec %+v; want the rules, silently", r.planner, r.resumeNote, r.State().PlannerSpec)
	}

	runDir, e = newStopped(t, LLMSpec(cfg))
	r, err = Reopen(context.Background(), runDir, ResumeOptions{Planner: PlannerRules}, e)
	if err != nil {
		t.Fatal(err)
	}
	if r.planner != nil || r.State().PlannerSpec == nil || r.State().PlannerSpec.Kind != PlannerRules || r.State().Planner != PlannerRules {
		t.Errorf("override: planner %T, recorded %q %+v; want the rules", r.planner, r.State().Planner, r.State().PlannerSpec)
	}
	if _, err := Reopen(context.Background(), runDir, ResumeOptions{Planner: "oracle"}, e); err == nil || !strings.Contains(err.Error(), "oracle") {
		t.Errorf("an unknown planner: %v", err)
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d chat requests; the rules ask no endpoint", n)
	}
}
