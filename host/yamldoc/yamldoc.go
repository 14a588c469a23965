// Package yamldoc decodes YAML written by users (task definitions, TopCoW edge lists)
// with goccy/go-yaml, and turns the decoder's own failures into errors.
//
// goccy/go-yaml v1.19.2 (the newest release served) dereferences nil when a tag stands on
// a mapping where a list is expected ("labels: !x\n  a: 1\nb: 0"); the fuzzer found it.
// A user's file never panics AMID: every YAML decode of user data goes through Unmarshal.
package yamldoc

import (
	"errors"
	"fmt"

	"github.com/goccy/go-yaml"
)

// ErrDecoder marks text the YAML decoder failed on rather than rejected.
var ErrDecoder = errors.New("the YAML decoder cannot read this text")

// Unmarshal decodes b into v with the options, as yaml.UnmarshalWithOptions does, and
// returns ErrDecoder where the decoder panics.
func Unmarshal(b []byte, v any, opts ...yaml.DecodeOption) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w (%v): look for a tag such as !name on a mapping or list", ErrDecoder, r)
		}
	}()
	return yaml.UnmarshalWithOptions(b, v, opts...)
}
