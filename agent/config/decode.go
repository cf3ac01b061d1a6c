package config

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"polly/workspace/jsonfile"
)

// layer is one source of values merged into a Config.
type layer struct {
	kind   Kind
	detail string // file (display form), variable, or flag
	data   []byte // file contents, for line:col; nil for env and flags
}

// decoder merges one layer into a Config, driven by the Config's types:
// objects overlay structs and maps key by key, arrays append, scalars
// replace. Every value set is recorded in the Config's sources; the value
// rules are the Validate methods, run on the result.
type decoder struct {
	c *Config
	l layer
}

func (d *decoder) source(off int) Source {
	s := Source{Kind: d.l.kind, Detail: d.l.detail}
	if d.l.data != nil && off >= 0 {
		s.Line, s.Col = jsonfile.LineCol(d.l.data, off)
	}
	return s
}

func (d *decoder) fail(off int, field, msg string) *Error {
	return sourceError(d.source(off), field, msg)
}

// mergeFile merges a parsed file into the config.
func (d *decoder) mergeFile(root *jsonfile.Node) error {
	return d.merge(reflect.ValueOf(d.c).Elem(), root, "", root.Off, false)
}

// merge decodes n into v (addressable). field is v's path, at the offset
// to blame for v (its key, or the array element); secret says that type
// errors must not echo the value (it may be a key).
func (d *decoder) merge(v reflect.Value, n *jsonfile.Node, field string, at int, secret bool) error {
	if n.Kind == jsonfile.Null {
		return nil // null means "not set here"
	}
	if v.Kind() == reflect.Pointer {
		// Copy on write: the old pointee may be shared with another layer's value.
		p := reflect.New(v.Type().Elem())
		if !v.IsNil() {
			p.Elem().Set(v.Elem())
		}
		if err := d.merge(p.Elem(), n, field, at, secret); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		// Any JSON value, kept as compact JSON (an mcp_tool hook's input).
		v.SetBytes([]byte(canonical(n)))
		d.c.sources[field] = d.source(at)
		return nil
	}
	if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		if n.Kind != jsonfile.String {
			return d.fail(at, field, "expected a string, got "+n.Describe())
		}
		if err := u.UnmarshalText([]byte(n.Text)); err != nil {
			return d.fail(at, field, err.Error())
		}
		d.c.sources[field] = d.source(at)
		return nil
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.mergeStruct(v, n, field, at)
	case reflect.Map:
		return d.mergeMap(v, n, field, at, secret)
	case reflect.Slice:
		return d.mergeSlice(v, n, field, at, secret)
	}
	return d.mergeLeaf(v, n, field, at, secret)
}

func (d *decoder) mergeStruct(v reflect.Value, n *jsonfile.Node, field string, at int) error {
	if n.Kind != jsonfile.Object {
		return d.fail(at, field, "expected an object, got "+n.Describe())
	}
	seen := make(map[string]bool, len(n.Members))
	for _, m := range n.Members {
		if seen[m.Key] {
			return d.fail(m.Off, joinPath(field, m.Key), "duplicate key")
		}
		seen[m.Key] = true
		f, ok := fieldByName(v.Type(), m.Key)
		if !ok {
			return d.fail(m.Off, field, unknownField(m.Key, v.Type(), field))
		}
		if err := d.merge(v.Field(f.index), m.Val, joinPath(field, f.name), m.Off, secretKey(m.Key) || namedMap(m.Key)); err != nil {
			return err
		}
	}
	if field != "" {
		// Where a layer wrote this object: a model's "context" tells
		// contextAt to look for the numbers set in it.
		d.c.sources[field] = d.source(at)
	}
	return nil
}

func (d *decoder) mergeMap(v reflect.Value, n *jsonfile.Node, field string, at int, secret bool) error {
	if n.Kind != jsonfile.Object {
		return d.fail(at, field, "expected an object, got "+n.Describe())
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	d.c.sources[field] = d.source(at) // a layer wrote here: Validate looks inside
	seen := make(map[string]bool, len(n.Members))
	for _, m := range n.Members {
		path := joinPath(field, m.Key)
		if seen[m.Key] {
			return d.fail(m.Off, path, "duplicate key")
		}
		seen[m.Key] = true
		if m.Val.Kind == jsonfile.Null {
			continue
		}
		key := reflect.ValueOf(m.Key)
		elem := reflect.New(v.Type().Elem()).Elem()
		if old := v.MapIndex(key); old.IsValid() {
			elem.Set(old) // overlay: a project file adding one model keeps the provider's base URL
		}
		if err := d.merge(elem, m.Val, path, m.Off, secret); err != nil {
			return err
		}
		v.SetMapIndex(key, elem)
		d.c.sources[path] = d.source(m.Off)
	}
	return nil
}

func (d *decoder) mergeSlice(v reflect.Value, n *jsonfile.Node, field string, at int, secret bool) error {
	if n.Kind != jsonfile.Array {
		return d.fail(at, field, "expected an array, got "+n.Describe())
	}
	base := v.Len()
	for i, e := range n.Elems {
		path := indexPath(field, base+i)
		if e.Kind == jsonfile.Null {
			return d.fail(e.Off, path, "expected a string, got null")
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := d.merge(elem, e, path, e.Off, secret); err != nil {
			return err
		}
		v.Set(reflect.Append(v, elem))
		if _, set := d.c.sources[path]; !set {
			d.c.sources[path] = d.source(e.Off) // objects in arrays (hooks) have no leaf of their own
		}
	}
	return nil
}

func (d *decoder) mergeLeaf(v reflect.Value, n *jsonfile.Node, field string, at int, secret bool) error {
	got := n.Describe()
	if secret && n.Kind != jsonfile.Object && n.Kind != jsonfile.Array {
		got = "a value of another type" // never echo what may be a key
	}
	switch v.Kind() {
	case reflect.String:
		if n.Kind != jsonfile.String {
			return d.fail(at, field, "expected a string, got "+got)
		}
		v.SetString(n.Text)
	case reflect.Bool:
		if n.Kind != jsonfile.Bool {
			return d.fail(at, field, "expected true or false, got "+got)
		}
		v.SetBool(n.Bool)
	case reflect.Int, reflect.Int64:
		if n.Kind != jsonfile.Number {
			return d.fail(at, field, "expected a number, got "+got)
		}
		i, msg := parseWhole(n.Text)
		if msg == "" && v.OverflowInt(i) {
			msg = "number " + n.Text + " is out of range"
		}
		if msg != "" {
			return d.fail(at, field, msg)
		}
		v.SetInt(i)
	case reflect.Float64:
		if n.Kind != jsonfile.Number {
			return d.fail(at, field, "expected a number, got "+got)
		}
		f, err := strconv.ParseFloat(n.Text, 64)
		if err != nil {
			return d.fail(at, field, "number "+n.Text+" is out of range")
		}
		v.SetFloat(f)
	default:
		panic("config: unsupported field type " + v.Type().String()) // caught by tests
	}
	d.c.sources[field] = d.source(at)
	return nil
}

// parseWhole accepts integers, including integral floats like 1e5 that
// JSON writers produce; the message is "" on success.
func parseWhole(s string) (int64, string) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, ""
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || math.Abs(f) > 1<<53:
		return 0, "number " + s + " is out of range"
	case f != math.Trunc(f):
		return 0, "expected a whole number, got " + s
	}
	return int64(f), ""
}

type structField struct {
	name  string
	index int
}

// fieldAliases are other spellings a key is accepted under.
var fieldAliases = map[string]string{"mcpServers": "mcp_servers"}

func fieldByName(t reflect.Type, name string) (structField, bool) {
	if alias, ok := fieldAliases[name]; ok && t == reflect.TypeFor[Config]() {
		name = alias
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if json, _, _ := strings.Cut(f.Tag.Get("json"), ","); json != "" && json == name && f.IsExported() {
			return structField{json, i}, true
		}
	}
	return structField{}, false
}

func fieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if json, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); json != "" && t.Field(i).IsExported() {
			names = append(names, json)
		}
	}
	return names
}

// unknownField explains an unknown key: a close spelling in the same
// object, or the place where that exact key belongs.
func unknownField(key string, t reflect.Type, field string) string {
	msg := fmt.Sprintf("unknown field %q", key)
	if s := jsonfile.Closest(key, fieldNames(t)); s != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", s)
	}
	var where []string
	findField(reflect.TypeFor[Config](), "", key, 0, &where)
	where = slices.DeleteFunc(where, func(p string) bool { return p == joinPath(field, key) })
	if len(where) > 0 {
		slices.SortFunc(where, func(a, b string) int { return len(a) - len(b) })
		return msg + fmt.Sprintf(" (did you mean %q?)", where[0])
	}
	if len(fieldNames(t)) <= 8 {
		return msg + " (known: " + strings.Join(fieldNames(t), ", ") + ")"
	}
	return msg
}

// findField collects the paths where a key is a field, through structs and
// map values (map keys shown as <name>).
func findField(t reflect.Type, path, key string, depth int, out *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if depth > 6 {
		return
	}
	switch t.Kind() {
	case reflect.Map:
		findField(t.Elem(), path+".<name>", key, depth+1, out)
	case reflect.Struct:
		for _, name := range fieldNames(t) {
			f, _ := fieldByName(t, name)
			p := path + "." + name
			if path == "" {
				p = name
			}
			if name == key {
				*out = append(*out, p)
			}
			findField(t.Field(f.index).Type, p, key, depth+1, out)
		}
	}
}
