module github.com/devkit-go/devkit/ratelimit

go 1.26
