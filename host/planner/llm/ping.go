package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Ping checks that the configured endpoint answers, accepts the key and offers the model:
// what a settings screen's "test connection" button runs. It lists the endpoint's models
// and, when the endpoint has no model list, asks the model for a one-word reply. It sends
// nothing about any dataset.
func Ping(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	rec := &recorder{c: &http.Client{Transport: http.DefaultTransport}}
	client := openai.NewClientWithConfig(clientConfig(cfg, rec))
	list, err := client.ListModels(ctx)
	if err == nil && len(list.Models) > 0 {
		var ids []string
		for _, m := range list.Models {
			ids = append(ids, m.ID)
		}
		if !slices.Contains(ids, cfg.Model) {
			if len(ids) > 20 {
				ids = append(ids[:20], "…")
			}
			return fmt.Errorf("llm ping: %s does not offer model %q (it offers %s)", cfg.BaseURL, cfg.Model, strings.Join(ids, ", "))
		}
		return nil
	}
	if err != nil {
		if e := pingError(ctx, cfg, err); e != nil {
			return e
		}
	}
	// No model list (404) or an empty one: ask the model itself.
	_, err = client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model:    cfg.Model,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Reply with the word OK."}},
	})
	if err != nil {
		if e := pingError(ctx, cfg, err); e != nil {
			return e
		}
		return fmt.Errorf("llm ping: %s model %q: %w", cfg.BaseURL, cfg.Model, err)
	}
	return nil
}

// pingError explains a failed ping call; nil for a 404, after which the next check runs.
func pingError(ctx context.Context, cfg Config, err error) error {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("llm ping: %s did not answer within %s", cfg.BaseURL, cfg.Timeout)
		}
		return fmt.Errorf("llm ping: %w", ctx.Err())
	}
	status, _ := httpStatus(err)
	switch {
	case status == http.StatusNotFound:
		return nil
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("llm ping: %s refused the API key from $%s (HTTP %d): %w", cfg.BaseURL, cfg.APIKeyEnv, status, err)
	case status != 0:
		return fmt.Errorf("llm ping: %s answered HTTP %d: %w", cfg.BaseURL, status, err)
	}
	return fmt.Errorf("llm ping: %s: %w", cfg.BaseURL, err)
}
