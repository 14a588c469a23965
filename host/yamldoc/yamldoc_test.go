package yamldoc

import (
	"errors"
	"testing"

	"github.com/goccy/go-yaml"
)

// The text the task parser's fuzzer reduced to: a tag on a mapping where a list is expected,
// followed by another key, makes goccy/go-yaml v1.19.2 dereference nil.
const tagged = "labels: !foo\n  a: 1\nb: 0\n"

func TestDecoderPanicIsAnError(t *testing.T) {
	var v struct {
		Labels []string `yaml:"labels"`
		B      int      `yaml:"b"`
	}
	err := Unmarshal([]byte(tagged), &v, yaml.Strict())
	if !errors.Is(err, ErrDecoder) {
		t.Fatalf("decoding %q: %v, want ErrDecoder", tagged, err)
	}
}

func TestDecodes(t *testing.T) {
	var v struct {
		Labels []string `yaml:"labels"`
	}
	if err := Unmarshal([]byte("labels: [a, b]\n"), &v); err != nil || len(v.Labels) != 2 || v.Labels[1] != "b" {
		t.Fatalf("labels %v, %v", v.Labels, err)
	}
	if err := Unmarshal([]byte("labels: 3: 4\n"), &v); err == nil || errors.Is(err, ErrDecoder) {
		t.Fatalf("a syntax error must stay the decoder's own error, not ErrDecoder: %v", err)
	}
}
