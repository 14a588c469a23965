package run

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestPostOptions(t *testing.T) {
	schema := json.RawMessage(`{"properties":{"postprocess":{"enum":["none","lcc"]},"lane":{"enum":["2d"]}}}`)
	if got := postOptions(schema); !slices.Equal(got, []string{"none", "lcc"}) {
		t.Errorf("options %v", got)
	}
	if got := postOptions(json.RawMessage(`{"properties":{}}`)); got != nil {
		t.Errorf("options without the property: %v", got)
	}
	cfg, err := withOption(json.RawMessage(`{"lane":"2d","postprocess":"none"}`), "postprocess", "lcc")
	if err != nil || string(cfg) != `{"lane":"2d","postprocess":"lcc"}` {
		t.Errorf("config %s %v", cfg, err)
	}
}
