// Package schema compiles the JSON Schema a task plugin gives for its configuration and
// checks configurations against it: the host's half of validating a plugin's answers.
//
// It is a package of its own so that plugin binaries do not link it: its JSON Schema
// library compiles its meta-schemas when the program starts, which was more than half of
// a plugin process's package initialisation and so a share of every plugin start.
package schema

import (
	"bytes"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"amid/plugins/protocol"
)

// Schema is a compiled configuration schema.
type Schema struct{ s *jsonschema.Schema }

// Compile compiles a JSON Schema. Errors wrap protocol.ErrMalformed.
func Compile(doc []byte) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("%w: config schema is not JSON: %w", protocol.ErrMalformed, err)
	}
	c := jsonschema.NewCompiler()
	// A plugin's schema may not make the host read files or URLs: no loaders.
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource("config.schema.json", v); err != nil {
		return nil, fmt.Errorf("%w: config schema: %w", protocol.ErrMalformed, err)
	}
	s, err := c.Compile("config.schema.json")
	if err != nil {
		return nil, fmt.Errorf("%w: config schema does not compile: %w", protocol.ErrMalformed, err)
	}
	return &Schema{s: s}, nil
}

// Check validates a JSON configuration against the schema.
func (s *Schema) Check(config []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(config))
	if err != nil {
		return fmt.Errorf("configuration is not JSON: %w", err)
	}
	if err := s.s.Validate(v); err != nil {
		return fmt.Errorf("configuration does not match the schema: %w", err)
	}
	return nil
}

// Describe checks a description against the protocol's rules and compiles its config
// schema. Errors wrap protocol.ErrMalformed.
func Describe(d *protocol.DescribeResponse) (*Schema, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	s, err := Compile(d.ConfigSchema)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", d.Name, err)
	}
	return s, nil
}
