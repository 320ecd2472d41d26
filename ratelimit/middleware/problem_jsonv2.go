//go:build goexperiment.jsonv2

package middleware

// invalidUTF8 is what encoding/json writes for a byte that is not UTF-8: the
// encoder built on encoding/json/v2 (the default from Go 1.27) writes U+FFFD
// itself, unescaped.
const invalidUTF8 = "\ufffd"
