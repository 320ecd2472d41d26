module github.com/devkit-go/devkit/ratelimit/benchcmp

go 1.26.0

toolchain go1.27.3

require (
	github.com/devkit-go/devkit/ratelimit v0.0.0
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/redis/go-redis/v9 v9.23.0
	github.com/ulule/limiter/v3 v3.11.2
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/devkit-go/devkit/internal v0.0.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace (
	github.com/devkit-go/devkit/internal => ../../internal
	github.com/devkit-go/devkit/ratelimit => ../
)
