// Package ratelimit is devkit's multi-tenant HTTP rate limiter: atomic checks
// of one or several limits per request against Redis (single node or
// cluster) or an in-process store.
//
// The implementation lands with the rate limiter issue; this package exists
// so the module builds and tests on its own from the start.
package ratelimit
