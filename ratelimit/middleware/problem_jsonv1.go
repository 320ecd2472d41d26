//go:build !goexperiment.jsonv2

package middleware

// invalidUTF8 is what encoding/json writes for a byte that is not UTF-8: the
// classic encoder escapes U+FFFD.
const invalidUTF8 = `\ufffd`
