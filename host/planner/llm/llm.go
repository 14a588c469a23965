package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"amid/host/planner"
)

// ErrBudget is returned (wrapped) when the token budget does not allow another call.
var ErrBudget = errors.New("token budget exhausted")

// maxBody bounds a response body the planner reads.
const maxBody = 4 << 20

// Response formats, from the most to the least constrained; an endpoint that refuses one is
// asked again with the next.
const (
	formatSchema = iota // response_format json_schema
	formatObject        // response_format json_object
	formatNone          // no response_format
)

// Planner is a planner.Planner that asks a language model for lanes. A Planner serves one
// run: its token budget is spent across all its Plan calls. It is safe for concurrent use.
type Planner struct {
	cfg      Config
	fallback planner.Planner
	log      func(event string, fields map[string]any)
	scrub    *Scrubber
	http     *http.Client
	// sleep waits d or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error

	mu     sync.Mutex
	used   int // tokens spent
	format int // the most constrained response format the endpoint has not refused
}

// New returns an LLM planner with the given configuration. When it cannot plan (a bad
// configuration, an endpoint that fails or keeps replying unusable lanes, the token budget
// spent) it logs why and returns what fallback plans; fallback may be nil, and then Plan
// returns the error. log receives every event (llm.request, llm.reply, llm.lane_dropped,
// llm.retry, llm.fallback), each with a "message" field; it may be nil.
func New(cfg Config, fallback planner.Planner, log func(event string, fields map[string]any)) *Planner {
	if log == nil {
		log = func(string, map[string]any) {}
	}
	cfg = cfg.withDefaults()
	return &Planner{
		cfg:      cfg,
		fallback: fallback,
		log:      log,
		scrub:    NewScrubber(cfg.Redact, cfg.FingerprintKeys),
		http:     &http.Client{Transport: http.DefaultTransport},
		sleep:    sleepCtx,
	}
}

// Used returns the tokens the planner has spent so far.
func (p *Planner) Used() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// Plan asks the model for lanes, retrying unusable replies and transient failures up to
// Config.Retries times, and falls back when it cannot. Only a cancelled ctx makes it return
// an error while a fallback exists.
func (p *Planner) Plan(ctx context.Context, in planner.Input) ([]planner.Lane, error) {
	lanes, attempts, err := p.plan(ctx, in)
	if err == nil {
		return lanes, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("llm planner: %w", ctx.Err())
	}
	if p.fallback == nil {
		return nil, fmt.Errorf("llm planner failed after %s: %w", plural(attempts, "attempt"), err)
	}
	msg := fmt.Sprintf("llm planner failed after %s: %v; using rules", plural(attempts, "attempt"), err)
	p.log("llm.fallback", map[string]any{"message": msg, "attempts": attempts, "error": err.Error()})
	return p.fallback.Plan(ctx, in)
}

// plan returns the lanes, how many requests it tried, and the last error.
func (p *Planner) plan(ctx context.Context, in planner.Input) ([]planner.Lane, int, error) {
	if err := p.cfg.Validate(); err != nil {
		return nil, 0, err
	}
	user, rep, err := build(p.scrub, in)
	if err != nil {
		return nil, 0, err
	}
	sum := sha256.Sum256(user)
	o := newOffer(in)
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: system(in)},
		{Role: openai.ChatMessageRoleUser, Content: string(user)},
	}
	var last error
	attempts := 0
	for attempts < 1+p.cfg.Retries {
		attempts++
		if err := p.reserve(msgs); err != nil {
			return nil, attempts, err
		}
		p.log("llm.request", map[string]any{
			"message":       fmt.Sprintf("llm request %d to %s (model %s)", attempts, p.cfg.BaseURL, p.cfg.Model),
			"attempt":       attempts,
			"model":         p.cfg.Model,
			"prompt_sha256": hex.EncodeToString(sum[:]),
			"prompt_bytes":  len(user),
			"dropped":       rep.Dropped,
			"redacted":      rep.Redacted,
		})
		content, wait, err := p.call(ctx, msgs)
		if ctx.Err() != nil {
			return nil, attempts, ctx.Err()
		}
		if errors.Is(err, errFormat) {
			attempts-- // the endpoint refused a response format: ask again with the next one
			continue
		}
		if err != nil {
			last = err
			var perm *permanent
			if errors.As(err, &perm) {
				return nil, attempts, err
			}
			if wait == 0 {
				wait = p.backoff(attempts)
			}
		} else {
			lanes, drops, err := o.parse(content)
			for _, d := range drops {
				p.log("llm.lane_dropped", map[string]any{
					"message": fmt.Sprintf("llm lane %s dropped: %s", d.Lane, d.Reason),
					"lane":    d.Lane, "plugin": d.Plugin, "reason": d.Reason,
				})
			}
			if err == nil {
				return lanes, attempts, nil
			}
			last = err
			msgs = append(msgs,
				openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: clip(content, 8000)},
				openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: p.feedback(err)})
			wait = 0
		}
		if attempts < 1+p.cfg.Retries {
			p.log("llm.retry", map[string]any{
				"message": fmt.Sprintf("llm attempt %d failed: %v; retrying in %s", attempts, last, wait),
				"attempt": attempts, "error": last.Error(), "wait": wait.String(),
			})
			if err := p.sleep(ctx, wait); err != nil {
				return nil, attempts, err
			}
		}
	}
	return nil, attempts, last
}

// feedback is the message that asks again after an unusable reply; it passes through the
// scrubber like everything else a request carries.
func (p *Planner) feedback(err error) string {
	t, _ := p.scrub.Text(fmt.Sprintf("Your reply was not usable: %v. Reply again with only the JSON object matching the schema.", err))
	return t
}

// reserve checks that the budget allows a request of about the size of msgs (four bytes a
// token, the usual estimate for English and JSON).
func (p *Planner) reserve(msgs []openai.ChatCompletionMessage) error {
	if p.cfg.MaxTokens == 0 {
		return nil
	}
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
	}
	est := n / 4
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used >= p.cfg.MaxTokens {
		return fmt.Errorf("%w: %d of %d tokens used", ErrBudget, p.used, p.cfg.MaxTokens)
	}
	if p.used+est > p.cfg.MaxTokens {
		return fmt.Errorf("%w: a request of about %d tokens would go beyond the budget (%d of %d used)", ErrBudget, est, p.used, p.cfg.MaxTokens)
	}
	return nil
}

// charge adds a response's tokens to the budget.
func (p *Planner) charge(u openai.Usage, msgs []openai.ChatCompletionMessage, content string) (int, bool) {
	n := max(u.PromptTokens+u.CompletionTokens, u.TotalTokens)
	estimated := n == 0
	if estimated {
		for _, m := range msgs {
			n += len(m.Content)
		}
		n = (n + len(content)) / 4
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used += n
	return p.used, estimated
}

// errFormat says the endpoint refused the response format; the next one is tried.
var errFormat = errors.New("response format refused")

// permanent wraps an error that retrying cannot fix (a refused key, an unknown model).
type permanent struct{ err error }

func (e *permanent) Error() string { return e.err.Error() }
func (e *permanent) Unwrap() error { return e.err }

// call makes one request. It returns the reply's content, or an error and how long the
// endpoint asked to wait before the next attempt (zero when it did not say).
func (p *Planner) call(ctx context.Context, msgs []openai.ChatCompletionMessage) (string, time.Duration, error) {
	p.mu.Lock()
	format := p.format
	p.mu.Unlock()
	req := openai.ChatCompletionRequest{Model: p.cfg.Model, Messages: msgs, Temperature: p.cfg.Temperature}
	switch format {
	case formatSchema:
		req.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
				Name: "lanes", Description: "method lanes to train", Schema: ReplySchema, Strict: false,
			},
		}
	case formatObject:
		req.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	}
	rec := &recorder{c: p.http}
	client := openai.NewClientWithConfig(clientConfig(p.cfg, rec))
	actx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	resp, err := client.CreateChatCompletion(actx, req)
	if err != nil {
		if ctx.Err() != nil {
			return "", 0, ctx.Err()
		}
		if actx.Err() != nil {
			return "", 0, fmt.Errorf("request timed out after %s", p.cfg.Timeout)
		}
		status, body := httpStatus(err)
		switch {
		case !rec.sent():
			// go-openai refused the request before sending it (a parameter the model
			// does not take): asking again cannot help.
			return "", 0, &permanent{fmt.Errorf("request not sent: %w", err)}
		case status == http.StatusTooManyRequests || status == http.StatusRequestTimeout:
			return "", p.retryAfter(rec.header()), fmt.Errorf("rate limited (HTTP %d): %w", status, err)
		case status >= 500:
			return "", p.retryAfter(rec.header()), fmt.Errorf("server error (HTTP %d): %w", status, err)
		case status == http.StatusBadRequest && format < formatNone && mentionsFormat(body):
			p.mu.Lock()
			if p.format == format {
				p.format++
			}
			p.mu.Unlock()
			p.log("llm.format", map[string]any{
				"message": fmt.Sprintf("llm endpoint refused the response format (%v); asking without it", err),
				"error":   err.Error(),
			})
			return "", 0, errFormat
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			return "", 0, &permanent{fmt.Errorf("endpoint refused the API key from $%s (HTTP %d): %w", p.cfg.APIKeyEnv, status, err)}
		case status >= 400:
			return "", 0, &permanent{fmt.Errorf("endpoint refused the request (HTTP %d): %w", status, err)}
		}
		if status == 0 && rec.answered() {
			return "", 0, fmt.Errorf("reply is not a chat completion: %w", err)
		}
		return "", 0, fmt.Errorf("request failed: %w", err)
	}
	content := ""
	if len(resp.Choices) > 0 {
		content = resp.Choices[0].Message.Content
	}
	used, estimated := p.charge(resp.Usage, msgs, content)
	p.log("llm.reply", map[string]any{
		"message": fmt.Sprintf("llm reply: %d prompt and %d completion tokens; %d of %d used",
			resp.Usage.PromptTokens, resp.Usage.CompletionTokens, used, p.cfg.MaxTokens),
		"prompt_tokens": resp.Usage.PromptTokens, "completion_tokens": resp.Usage.CompletionTokens,
		"used": used, "budget": p.cfg.MaxTokens, "estimated": estimated, "bytes": len(content),
	})
	if len(resp.Choices) == 0 {
		return "", 0, errors.New("reply has no choices")
	}
	return content, 0, nil
}

// backoff is the wait after the attempt-th failed request that gave no Retry-After:
// Backoff, doubling with each attempt, at most MaxWait.
func (p *Planner) backoff(attempt int) time.Duration {
	d := p.cfg.Backoff
	for i := 1; i < attempt && d < p.cfg.MaxWait; i++ {
		d *= 2
	}
	return min(d, p.cfg.MaxWait)
}

// retryAfter reads a Retry-After header (seconds or an HTTP date), bounded by MaxWait; zero
// when there is none (the caller then backs off).
func (p *Planner) retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	var d time.Duration
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		d = time.Duration(s * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	} else {
		return 0
	}
	return min(max(d, time.Millisecond), p.cfg.MaxWait)
}

// mentionsFormat reports whether a 400 reply's body is about the response format.
func mentionsFormat(body string) bool {
	b := strings.ToLower(body)
	return strings.Contains(b, "response_format") || strings.Contains(b, "json_schema") ||
		strings.Contains(b, "response format") || strings.Contains(b, "json_object")
}

// httpStatus returns the HTTP status and error text of an error go-openai returns.
func httpStatus(err error) (int, string) {
	var api *openai.APIError
	if errors.As(err, &api) {
		return api.HTTPStatusCode, api.Message + " " + fmt.Sprint(api.Param) + " " + fmt.Sprint(api.Code)
	}
	var re *openai.RequestError
	if errors.As(err, &re) {
		return re.HTTPStatusCode, string(re.Body)
	}
	return 0, ""
}

func clientConfig(cfg Config, doer openai.HTTPDoer) openai.ClientConfig {
	c := openai.DefaultConfig(cfg.apiKey())
	c.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	c.HTTPClient = doer
	return c
}

// recorder keeps the headers of the last response and bounds its body.
type recorder struct {
	c     *http.Client
	mu    sync.Mutex
	h     http.Header
	tried bool
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.tried = true
	r.mu.Unlock()
	resp, err := r.c.Do(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.h = resp.Header.Clone()
	r.mu.Unlock()
	resp.Body = &limited{r: io.LimitReader(resp.Body, maxBody+1), c: resp.Body}
	return resp, nil
}

// sent reports whether a request was sent.
func (r *recorder) sent() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tried
}

// answered reports whether a response came back.
func (r *recorder) answered() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.h != nil
}

func (r *recorder) header() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h == nil {
		return http.Header{}
	}
	return r.h
}

// limited fails a read past maxBody instead of truncating silently.
type limited struct {
	r io.Reader
	c io.Closer
	n int
}

func (l *limited) Read(b []byte) (int, error) {
	n, err := l.r.Read(b)
	l.n += n
	if l.n > maxBody {
		return n, fmt.Errorf("response body is larger than %d bytes", maxBody)
	}
	return n, err
}

func (l *limited) Close() error { return l.c.Close() }

// plural writes n and a noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
