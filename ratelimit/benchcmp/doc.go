// Package benchcmp benchmarks devkit's Redis limiter side by side with
// go-redis/redis_rate and ulule/limiter on the same redis-server in the same
// run. It is a module of its own so that the ratelimit module never depends
// on them:
//
//	cd ratelimit/benchcmp && GOWORK=off go test -run '^$' -bench . -benchtime=2s
package benchcmp
