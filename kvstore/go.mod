module github.com/devkit-go/devkit/kvstore

go 1.26.0
