// Package finite finds the floats JSON cannot hold (NaN, +Inf, −Inf) in a record before
// it is encoded, and names the field: encoding/json refuses them with "json: unsupported
// value: NaN", which names neither the record nor the field, and a run that wrote such
// a record stopped there on every resume (a correlation of one validation case).
package finite

import (
	"fmt"
	"math"
	"reflect"
	"strings"
)

// Check returns an error naming the first field of v, in the path JSON would write it
// at ("lanes[0].folds.0.extra.plcc"), that holds a non-finite float; nil when none does.
func Check(v any) error {
	if p, f := find(reflect.ValueOf(v), nil, 0); p != nil {
		return fmt.Errorf("%s is %v, which a record cannot hold", strings.Join(p, ""), f)
	}
	return nil
}

// find walks v (at most 64 levels deep: records are shallow, and a cycle through a
// pointer would otherwise not end).
func find(v reflect.Value, path []string, depth int) ([]string, float64) {
	if depth > 64 || !v.IsValid() {
		return nil, 0
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			if len(path) == 0 {
				path = []string{"the value"}
			}
			return path, f
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return find(v.Elem(), path, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return nil, 0 // bytes, and json.RawMessage
		}
		for i := range v.Len() {
			if p, f := find(v.Index(i), append(path, fmt.Sprintf("[%d]", i)), depth+1); p != nil {
				return p, f
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if p, f := find(it.Value(), append(path, field(path, fmt.Sprint(it.Key().Interface()))), depth+1); p != nil {
				return p, f
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() && !sf.Anonymous {
				continue // an embedded struct's exported fields are encoded, its type's name or not
			}
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			var p []string
			if sf.Anonymous && sf.Tag.Get("json") == "" {
				p = path // an embedded struct's fields are its parent's
			} else {
				p = append(path, field(path, name))
			}
			if q, f := find(v.Field(i), p, depth+1); q != nil {
				return q, f
			}
		}
	}
	return nil, 0
}

// field is name as the next element of path: dotted after the first.
func field(path []string, name string) string {
	if len(path) == 0 {
		return name
	}
	return "." + name
}

// Maybe is v, or nil when it has no value (none): a record writes an undefined score as
// JSON's null beside its reason, never as the 0 that stands in for it in memory.
func Maybe(v float64, none bool) *float64 {
	if none {
		return nil
	}
	return &v
}
