module github.com/devkit-go/devkit/tools

go 1.26.0
