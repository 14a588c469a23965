package llm

import (
	"encoding/json"
	"strings"
	"testing"

	"amid/plugins/protocol/schema"
)

// FuzzParse feeds replies (untrusted text from the endpoint) to the reply checker: it may
// refuse them, never panic, and every lane it keeps is valid against its plugin's schema
// and has a unique, clean name.
func FuzzParse(f *testing.F) {
	f.Add(goodReply)
	f.Add("```json\n" + goodReply + "\n```")
	f.Add(`{"lanes":[{"name":"","plugin":"segmentation","config":{"lr":1},"rationale":""},{"name":"","plugin":"segmentation","config":{"lr":1}}]}`)
	f.Add(`{"lanes":[{"name":"a","plugin":"xgboost","config":null}]}`)
	f.Add(`{"lanes":{}}`)
	f.Add(`Sure! {"lanes":[]} Hope this helps.`)
	f.Add(`{"lanes":[{"name":"ü/../..","plugin":"classification","config":{"backbone":"r"},"rationale":"` + strings.Repeat("é", 600) + `"}]}`)
	in := testInput()
	schemas := map[string]*schema.Schema{}
	for _, p := range in.Plugins {
		s, err := schema.Compile(p.Schema)
		if err != nil {
			f.Fatal(err)
		}
		schemas[p.Name] = s
	}
	f.Fuzz(func(t *testing.T, content string) {
		lanes, _, err := newOffer(in).parse(content)
		if (err == nil) != (len(lanes) > 0) {
			t.Fatalf("err = %v with %d lanes", err, len(lanes))
		}
		names := map[string]bool{}
		for _, l := range lanes {
			if err := schemas[l.Plugin].Check(l.Config); err != nil {
				t.Errorf("lane %q kept with an invalid config: %v", l.Name, err)
			}
			if names[l.Name] || l.Name == "" || sanitize(l.Name) != l.Name {
				t.Errorf("lane name %q", l.Name)
			}
			names[l.Name] = true
		}
		if len(lanes) > MaxLanes {
			t.Errorf("%d lanes", len(lanes))
		}
	})
}

// FuzzScrub feeds text and JSON documents through the scrubber: the results are valid JSON
// that carries no configured identifier, and scrubbing twice changes nothing.
func FuzzScrub(f *testing.F) {
	f.Add("Ask Jane Doe about /data/x.nii.gz", []byte(`{"cases":[{"id":"LIDC-IDRI-0001","spacing":[1,1,2.5]}],"modality":"CT"}`))
	f.Add("DOE^JANE 19620315 1.2.840.1.2", []byte(`{"jane doe":1,"a":["JANE DOE","x/y",1e400]}`))
	f.Add("ǅane doe İ", []byte(`{"0":{"p99":-1,"dtype":"int16"},"01":2}`))
	f.Add("", []byte(`[`))
	s := NewScrubber([]string{"Jane Doe"}, nil)
	f.Fuzz(func(t *testing.T, text string, doc []byte) {
		out, _ := s.Text(text)
		if strings.Contains(strings.ToLower(out), "jane doe") {
			t.Errorf("Text(%q) = %q", text, out)
		}
		if again, n := s.Text(out); again != out || n != 0 {
			t.Errorf("Text not idempotent: %q -> %q -> %q", text, out, again)
		}
		for name, scrub := range map[string]func(json.RawMessage) (json.RawMessage, Report){"Document": s.Document, "Fingerprint": s.Fingerprint} {
			b, _ := scrub(doc)
			if !json.Valid(b) {
				t.Fatalf("%s(%q) = %q is not JSON", name, doc, b)
			}
			if err := s.Leaks(b); err != nil {
				t.Errorf("%s(%q) = %s: %v", name, doc, b, err)
			}
		}
	})
}
