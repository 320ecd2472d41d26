package cmdutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes v as indented JSON followed by a newline: the --json
// output of every command, stable for scripts.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// JSONObject is the one JSON object holding the members of every part, in
// order: a library's report (in the library's own schema) with what a
// command adds to it (a verdict), as one flat object. Each part must
// encode as an object; a name two parts both give is an error, not a
// silent overwrite.
func JSONObject(parts ...any) ([]byte, error) {
	var b bytes.Buffer
	seen := map[string]bool{}
	b.WriteByte('{')
	for _, p := range parts {
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(raw, &members); err != nil {
			return nil, fmt.Errorf("cmdutil: %T does not encode as a JSON object: %w", p, err)
		}
		for name := range members {
			if seen[name] {
				return nil, fmt.Errorf("cmdutil: two parts of one JSON object name %q", name)
			}
			seen[name] = true
		}
		if inner := bytes.TrimSpace(raw[1 : len(raw)-1]); len(inner) > 0 {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.Write(inner)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
