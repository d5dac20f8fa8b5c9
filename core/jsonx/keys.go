package jsonx

import (
	"reflect"
	"strings"
)

// Keys are the JSON keys of struct value v's fields, from their json tags,
// in field order: a config parser's struct is the one list of the keys it
// takes, and the config check's did-you-mean reads them from there. A
// field without a tag is its name; a "-" tag, none.
func Keys(v any) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}
