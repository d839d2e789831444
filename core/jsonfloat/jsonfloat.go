// Package jsonfloat encodes Go values as JSON like encoding/json, except
// that non-finite floats, which encoding/json refuses, are written as the
// strings "NaN", "+Inf" and "-Inf". A result that holds a diverged loss
// can then still be printed and stored; readers see a string where they
// expected a number and can tell it from a missing value (null).
package jsonfloat

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
)

// The strings non-finite floats are encoded as.
const (
	NaN    = "NaN"
	PosInf = "+Inf"
	NegInf = "-Inf"
)

// Marshal encodes v as encoding/json would, with non-finite floats as the
// strings NaN, PosInf and NegInf. Structs are walked field by field with
// their json tags (omitempty, "-", embedded structs); a value whose type
// implements json.Marshaler is encoded by it, except the root, so a
// MarshalJSON method may call Marshal on its own receiver.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := encode(&buf, reflect.ValueOf(v), true); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Float formats one float: a JSON number, or a quoted NaN, +Inf or -Inf.
func Float(f float64) string {
	switch {
	case math.IsNaN(f):
		return `"` + NaN + `"`
	case math.IsInf(f, 1):
		return `"` + PosInf + `"`
	case math.IsInf(f, -1):
		return `"` + NegInf + `"`
	}
	b, _ := json.Marshal(f)
	return string(b)
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

func encode(buf *bytes.Buffer, v reflect.Value, root bool) error {
	if !v.IsValid() {
		buf.WriteString("null")
		return nil
	}
	if !root && v.Type().Implements(marshalerType) && (v.Kind() != reflect.Pointer || !v.IsNil()) {
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return err
		}
		buf.Write(b)
		return nil
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if v.Kind() == reflect.Float32 && !math.IsNaN(f) && !math.IsInf(f, 0) {
			b, err := json.Marshal(float32(f))
			if err != nil {
				return err
			}
			buf.Write(b)
			return nil
		}
		buf.WriteString(Float(f))
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return encode(buf, v.Elem(), root && v.Kind() == reflect.Pointer)
	case reflect.Struct:
		return encodeStruct(buf, v)
	case reflect.Map:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		if v.Type().Key().Kind() != reflect.String {
			return plain(buf, v)
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, _ := json.Marshal(k.String())
			buf.Write(kb)
			buf.WriteByte(':')
			if err := encode(buf, v.MapIndex(k), false); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		if k := v.Type().Elem().Kind(); k == reflect.Uint8 {
			return plain(buf, v) // []byte as base64, as encoding/json
		}
		buf.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encode(buf, v.Index(i), false); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		return plain(buf, v)
	}
	return nil
}

func plain(buf *bytes.Buffer, v reflect.Value) error {
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}

// encodeStruct writes the exported fields of a struct in order.
func encodeStruct(buf *bytes.Buffer, v reflect.Value) error {
	buf.WriteByte('{')
	first := true
	var walk func(v reflect.Value) error
	walk = func(v reflect.Value) error {
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			fv := v.Field(i)
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					if fv.IsNil() {
						continue
					}
					fv, ft = fv.Elem(), ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					if err := walk(fv); err != nil {
						return err
					}
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if strings.Contains(","+opts+",", ",omitempty,") && isEmpty(fv) {
				continue
			}
			if !first {
				buf.WriteByte(',')
			}
			first = false
			kb, _ := json.Marshal(name)
			buf.Write(kb)
			buf.WriteByte(':')
			if strings.Contains(","+opts+",", ",string,") {
				if err := plain(buf, fv); err != nil {
					return err
				}
				continue
			}
			if err := encode(buf, fv, false); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(v); err != nil {
		return err
	}
	buf.WriteByte('}')
	return nil
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
