package ingest

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestErrorsKeepTheirCause checks that an unreadable GeoJSON or COCO file's error keeps
// the JSON decoder's error in its chain (wrapped with %w), and that bad keeps both
// ErrLabel and the cause.
func TestErrorsKeepTheirCause(t *testing.T) {
	var syn *json.SyntaxError
	for _, b := range []string{"[{", "{"} {
		if _, err := decodeFeatures([]byte(b)); !errors.As(err, &syn) {
			t.Errorf("decodeFeatures(%q) = %v, want a *json.SyntaxError in its chain", b, err)
		}
	}
	cause := errors.New("the cause")
	if err := bad("x.json", cause); !errors.Is(err, ErrLabel) || !errors.Is(err, cause) {
		t.Errorf("bad = %v, want both ErrLabel and its cause in the chain", err)
	}
}
