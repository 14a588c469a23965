package schema

import "testing"

// FuzzSchema feeds plugin-supplied config schemas and configurations (both untrusted input
// to the host) through Compile, Check and Describe: they may fail, never panic.
func FuzzSchema(f *testing.F) {
	f.Add(desc.ConfigSchema, []byte(`{"lr":0.1}`))
	f.Add([]byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"steps":{"type":"integer","minimum":1}},"required":["steps"],"additionalProperties":false}`), []byte(`{"steps":20}`))
	f.Add([]byte(`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`), []byte(`1`))
	f.Add([]byte(`{"pattern":"(a+)+$"}`), []byte(`"aaaaaaaaaaaaaaaaaaaaaaaaaaaa!"`))
	f.Add([]byte(`not json`), []byte(`{`))
	f.Add([]byte(`{"$ref":"file:///etc/passwd"}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, doc, config []byte) {
		s, err := Compile(doc)
		if err != nil {
			return
		}
		_ = s.Check(config)
		d := *desc
		d.ConfigSchema = doc
		_, _ = Describe(&d)
	})
}
