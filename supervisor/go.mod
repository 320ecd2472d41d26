module github.com/devkit-go/devkit/supervisor

go 1.26
