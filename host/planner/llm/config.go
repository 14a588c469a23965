package llm

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"
)

// DefaultAPIKeyEnv is the environment variable the API key is read from when
// Config.APIKeyEnv is empty.
const DefaultAPIKeyEnv = "AMID_LLM_API_KEY"

// Defaults of the Config fields left zero.
const (
	DefaultTimeout = 2 * time.Minute
	DefaultRetries = 2
	DefaultMaxWait = 30 * time.Second
	DefaultBackoff = time.Second
)

// Config says which endpoint and model the planner asks, and how patiently.
type Config struct {
	// BaseURL is the endpoint's API root, e.g. https://api.openai.com/v1 or
	// http://127.0.0.1:11434/v1; chat completions are posted to BaseURL/chat/completions.
	BaseURL string `json:"base_url" yaml:"base_url"`
	// Model is the model name the endpoint knows.
	Model string `json:"model" yaml:"model"`
	// APIKeyEnv names the environment variable holding the API key (DefaultAPIKeyEnv when
	// empty). The key itself is never stored; an empty key sends no Authorization header.
	APIKeyEnv string `json:"api_key_env,omitempty" yaml:"api_key_env"`
	// Timeout bounds each request (DefaultTimeout when zero).
	Timeout time.Duration `json:"timeout,omitempty" yaml:"timeout"`
	// Retries is how many more attempts a Plan call makes after a failed one: a reply that is
	// not usable, a rate limit, a server error or a timeout (DefaultRetries when zero;
	// negative means none).
	Retries int `json:"retries,omitempty" yaml:"retries"`
	// MaxTokens is the token budget of the whole run: prompt and completion tokens as the
	// endpoint reports them, summed over every call. A call that would go beyond it is not
	// made. Zero means no budget.
	MaxTokens int `json:"max_tokens,omitempty" yaml:"max_tokens"`
	// Temperature is the sampling temperature; zero leaves the endpoint's default.
	Temperature float32 `json:"temperature,omitempty" yaml:"temperature"`
	// MaxWait bounds the wait before a retry, a Retry-After header included
	// (DefaultMaxWait when zero).
	MaxWait time.Duration `json:"max_wait,omitempty" yaml:"max_wait"`
	// Backoff is the first wait before retrying a failed request; it doubles with each
	// attempt up to MaxWait (DefaultBackoff when zero).
	Backoff time.Duration `json:"backoff,omitempty" yaml:"backoff"`
	// Redact lists identifiers (institution, study or patient names, id prefixes) that no
	// request may carry; they are redacted from all text and a request still carrying one
	// is not sent.
	Redact []string `json:"redact,omitempty" yaml:"redact"`
	// FingerprintKeys adds keys to FingerprintKeys, the fingerprint members a request may carry.
	FingerprintKeys []string `json:"fingerprint_keys,omitempty" yaml:"fingerprint_keys"`
}

// withDefaults returns c with the zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.APIKeyEnv == "" {
		c.APIKeyEnv = DefaultAPIKeyEnv
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Retries == 0 {
		c.Retries = DefaultRetries
	}
	if c.Retries < 0 {
		c.Retries = 0
	}
	if c.MaxWait <= 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultBackoff
	}
	return c
}

// Validate checks that the configuration names an http(s) endpoint and a model.
func (c Config) Validate() error {
	if c.BaseURL == "" {
		return errors.New("llm config: base_url is empty")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return fmt.Errorf("llm config: base_url %q: %w", c.BaseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("llm config: base_url %q is not an http or https URL", c.BaseURL)
	}
	if u.User != nil {
		return errors.New("llm config: base_url carries credentials; put the key in the environment variable named by api_key_env")
	}
	if c.Model == "" {
		return errors.New("llm config: model is empty")
	}
	if c.MaxTokens < 0 {
		return fmt.Errorf("llm config: max_tokens %d is negative", c.MaxTokens)
	}
	if c.Temperature < 0 || c.Temperature > 2 {
		return fmt.Errorf("llm config: temperature %g is outside [0, 2]", c.Temperature)
	}
	return nil
}

// apiKey reads the key from the environment.
func (c Config) apiKey() string {
	return os.Getenv(c.withDefaults().APIKeyEnv)
}
