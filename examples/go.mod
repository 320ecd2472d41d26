module github.com/devkit-go/devkit/examples

go 1.26.0
