package inv3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"amid/viewer/volume"
)

// maxDepth bounds the nesting of property-list containers (real projects nest 2 deep).
const maxDepth = 32

// decodePlist decodes an XML property list into Go values: map[string]any, []any, string,
// int64, float64 and bool. Dates and data are returned as their text.
func decodePlist(r io.Reader) (any, error) {
	d := xml.NewDecoder(r)
	d.Strict = false
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: no plist element (%v)", volume.ErrFormat, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != "plist" {
				return nil, fmt.Errorf("%w: root element <%s>, want <plist>", volume.ErrFormat, se.Name.Local)
			}
			return plistValue(d, nil, 0)
		}
	}
}

// plistValue reads the next value element; start is set when its start tag was already read.
func plistValue(d *xml.Decoder, start *xml.StartElement, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: property list nested deeper than %d", volume.ErrFormat, maxDepth)
	}
	if start == nil {
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, fmt.Errorf("%w: %v", volume.ErrFormat, err)
			}
			if se, ok := tok.(xml.StartElement); ok {
				start = &se
				break
			}
			if _, ok := tok.(xml.EndElement); ok {
				return nil, errEnd
			}
		}
	}
	switch start.Name.Local {
	case "dict":
		m := map[string]any{}
		for {
			k, err := plistValue(d, nil, depth+1)
			if errors.Is(err, errEnd) {
				return m, nil
			}
			if err != nil {
				return nil, err
			}
			key, ok := k.(plistKey)
			if !ok {
				return nil, fmt.Errorf("%w: dictionary entry without a key", volume.ErrFormat)
			}
			v, err := plistValue(d, nil, depth+1)
			if err != nil {
				if errors.Is(err, errEnd) {
					return nil, fmt.Errorf("%w: key %q without a value", volume.ErrFormat, key)
				}
				return nil, err
			}
			m[string(key)] = v
		}
	case "array":
		var a []any
		for {
			v, err := plistValue(d, nil, depth+1)
			if errors.Is(err, errEnd) {
				return a, nil
			}
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
	case "true", "false":
		if err := d.Skip(); err != nil {
			return nil, fmt.Errorf("%w: %v", volume.ErrFormat, err)
		}
		return start.Name.Local == "true", nil
	}
	var text string
	if err := d.DecodeElement(&text, start); err != nil {
		return nil, fmt.Errorf("%w: <%s>: %v", volume.ErrFormat, start.Name.Local, err)
	}
	text = strings.TrimSpace(text)
	switch start.Name.Local {
	case "key":
		return plistKey(text), nil
	case "integer":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: integer %q", volume.ErrFormat, text)
		}
		return n, nil
	case "real":
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: real %q", volume.ErrFormat, text)
		}
		return f, nil
	case "string", "date", "data":
		return text, nil
	}
	return nil, fmt.Errorf("%w: unknown property-list element <%s>", volume.ErrFormat, start.Name.Local)
}

type plistKey string

// errEnd marks the end of a container.
var errEnd = errors.New("end of container")
