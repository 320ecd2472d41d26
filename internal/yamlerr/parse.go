//go:build !devkit_sup_monitor

package yamlerr

// Reading YAML: left out of a build with the devkit_sup_monitor tag
// (devkit-sup-monitor, which reads no YAML and whose every linked package
// costs memory in each supervised process's monitor); the error type stays.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Parse reads the one YAML document of file into a node tree. It returns the
// document's root (never a DocumentNode or an alias), or nil for a file
// without a document. A syntax error is an *Error at the line of the mistake,
// and a second document is refused rather than ignored.
func Parse(file string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, Syntax(file, data, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, Syntax(file, data, err)
	default:
		return nil, &Error{File: file, Line: next.Line, Msg: "a second YAML document (after ---) is not read; keep one document per file"}
	}
	root := Deref(&doc)
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, nil
		}
		root = Deref(root.Content[0])
	}
	return root, nil
}

// Deref follows aliases to the node they name.
func Deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// syntaxWindow is how far past a failing prefix Syntax looks for a longer
// one that parses again: a prefix cut inside a multi-line construct (a flow
// list, a quoted string) fails until the construct closes.
const syntaxWindow = 32

// Syntax turns a yaml.v3 syntax error ("yaml: line 3: ...") into an *Error.
// yaml.v3 reports the line where the enclosing construct began (a block
// mapping's first key, so often line 1), not where the mistake is; the line
// is found instead as the first one whose addition makes the document
// unparsable for good: one past the longest prefix of whole lines that
// still parses. The field is the path that line's key would have had.
// Every prefix past the mistake fails, so the boundary is found by
// bisection (then a short look further, past constructs that close later):
// some tens of parses, not one per line.
func Syntax(file string, data []byte, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &Error{File: file, Msg: msg}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if l, cerr := strconv.Atoi(n); cerr == nil {
				e.Line, e.Msg = l, after
			}
		}
	}
	ends := lineEnds(data)
	lines := len(ends) - 1
	parses := func(k int) bool {
		var n yaml.Node
		return yaml.Unmarshal(data[:ends[k]], &n) == nil
	}
	lo, hi := 0, lines // invariant: the prefix of lo lines parses, that of hi lines fails
	if parses(hi) {
		return e // the whole document parses: not a syntax error of ours to place
	}
	for {
		for hi-lo > 1 {
			if mid := lo + (hi-lo)/2; parses(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		further := 0
		for k := hi + 1; k < min(lines, hi+syntaxWindow); k++ {
			if parses(k) {
				further = k
				break
			}
		}
		if further == 0 {
			break
		}
		lo, hi = further, lines
	}
	if lo+1 >= e.Line {
		var prefix yaml.Node
		if yaml.Unmarshal(data[:ends[lo]], &prefix) == nil {
			e.Line = lo + 1
			e.Field = fieldOfLine(&prefix, data[ends[lo]:ends[lo+1]])
		}
	}
	return e
}

// lineEnds returns the offsets where each line of data ends, after a leading 0.
func lineEnds(data []byte) []int {
	ends := []int{0}
	for i, c := range data {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	if ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	return ends
}

// fieldOfLine guesses the path of a line that follows the (parsed) prefix
// of a document: it descends through the last entry of each mapping whose
// keys are indented less than the line, and the last item of each list
// (unless the line begins a new item), then adds the line's own key.
func fieldOfLine(prefix *yaml.Node, line []byte) string {
	text := strings.TrimRight(string(line), "\r\n")
	body := strings.TrimLeft(text, " ")
	col := len(text) - len(body) + 1
	field := ""
	n := Deref(prefix)
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = Deref(n.Content[0])
	}
	for n != nil {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			if len(n.Content) >= 2 {
				k := n.Content[len(n.Content)-2]
				if k.Column < col {
					field, next = Join(field, k.Value), Deref(n.Content[len(n.Content)-1])
				}
			}
		case yaml.SequenceNode:
			last := len(n.Content) - 1
			switch {
			case last < 0:
			case strings.HasPrefix(body, "-") && col < n.Content[last].Column:
				field = Index(field, last+1) // the line begins a new item
			default: // the line continues the last item
				field, next = Index(field, last), Deref(n.Content[last])
			}
		}
		n = next
	}
	body = strings.TrimLeft(strings.TrimPrefix(body, "-"), " ")
	key, after, ok := strings.Cut(body, ":")
	isKey := ok && key != "" && (after == "" || after[0] == ' ' || after[0] == '\t') // not http://...
	if isKey && !strings.ContainsAny(key, "[]{},#&*!|>'\"%@`") {
		field = Join(field, strings.TrimSpace(key))
	}
	return field
}

// Decode fills v (a pointer) from the node n of file, field by field, so that
// every mistake names its line and field: unknown keys (listing the known
// ones), duplicate keys, a value of the wrong shape or type, and errors of
// yaml.Unmarshaler fields. Struct fields are named by their yaml tags. It
// returns every mistake found, or nil.
func Decode(file string, n *yaml.Node, v any) Errors {
	d := &decoder{file: file}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return Errors{{File: file, Msg: fmt.Sprintf("yamlerr.Decode needs a non-nil pointer, got %T", v)}}
	}
	if n = Deref(n); n != nil {
		d.value(n, "", rv.Elem())
	}
	return d.errs
}

// maxValues bounds the values one Decode fills: aliases let a small file
// name a huge tree ("billion laughs"), as yaml.v3's own decoder also refuses.
const maxValues = 1 << 18

type decoder struct {
	file   string
	errs   Errors
	values int
}

func (d *decoder) fail(n *yaml.Node, field, format string, a ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: n.Line, Field: field, Msg: fmt.Sprintf(format, a...)})
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func (d *decoder) value(n *yaml.Node, field string, v reflect.Value) {
	n = Deref(n)
	if d.values++; d.values > maxValues {
		if d.values == maxValues+1 {
			d.fail(n, field, "the document expands to more than %d values through aliases; write it out without them", maxValues)
		}
		return
	}
	if v.CanAddr() && v.Addr().Type().Implements(unmarshalerType) {
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.fail(n, field, "%s", unmarshalerMessage(err))
		}
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // absent: the zero value
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		d.value(n, field, p.Elem())
		v.Set(p)
	case reflect.Struct:
		d.structure(n, field, v)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.fail(n, field, "must be a mapping")
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		d.pairs(n, field, func(k, val *yaml.Node, f string) {
			key := reflect.New(v.Type().Key()).Elem()
			if err := k.Decode(key.Addr().Interface()); err != nil {
				d.fail(k, f, "%q is not a valid key here", k.Value)
				return
			}
			elem := reflect.New(v.Type().Elem()).Elem()
			d.value(val, f, elem)
			v.SetMapIndex(key, elem)
		})
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, field, "must be a list")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.value(item, Index(field, i), s.Index(i))
		}
		v.Set(s)
	default:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, field, "must be a single value")
			return
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.fail(n, field, "%q is not %s", n.Value, kindName(v.Kind()))
		}
	}
}

func (d *decoder) structure(n *yaml.Node, field string, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, field, "must be a mapping")
		return
	}
	t := v.Type()
	index := map[string]int{}
	var names []string
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		index[name] = i
		names = append(names, name)
	}
	d.pairs(n, field, func(k, val *yaml.Node, f string) {
		i, ok := index[k.Value]
		if !ok {
			d.fail(k, f, "unknown field (want %s)", strings.Join(names, ", "))
			return
		}
		d.value(val, f, v.Field(i))
	})
}

// pairs calls fn for each key of a mapping: merged (<<) keys first, so that
// the mapping's own keys override them, and refuses a key given twice.
func (d *decoder) pairs(n *yaml.Node, field string, fn func(k, v *yaml.Node, f string)) {
	var own [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag != "!!merge" {
			own = append(own, [2]*yaml.Node{k, v})
			continue
		}
		v = Deref(v)
		merged := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			merged = v.Content
		}
		for _, m := range merged {
			if m = Deref(m); m.Kind != yaml.MappingNode {
				d.fail(m, field, "a merge (<<) takes a mapping or a list of mappings")
				continue
			}
			d.pairs(m, field, fn)
		}
	}
	var seen []string
	for _, kv := range own {
		k := kv[0]
		f := Join(field, k.Value)
		if slices.Contains(seen, k.Value) {
			d.fail(k, f, "duplicate key")
			continue
		}
		seen = append(seen, k.Value)
		fn(k, kv[1], f)
	}
}

// unmarshalerMessage is the message of a yaml.Unmarshaler's error without
// yaml.v3's "line N:" prefixes (the Error carries the line).
func unmarshalerMessage(err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(err.Error(), "yaml: ")
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		if rest, ok := strings.CutPrefix(m, "line "); ok {
			if _, after, ok := strings.Cut(rest, ": "); ok {
				m = after
			}
		}
		msgs[i] = m
	}
	return strings.Join(msgs, "; ")
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer (in range)"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer (in range)"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	}
	return "a " + k.String()
}
