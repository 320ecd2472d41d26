package cmdutil

import (
	"encoding/json"
	"io"
)

// WriteJSON writes v as indented JSON followed by a newline: the --json
// output of every command, stable for scripts.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
