module github.com/devkit-go/devkit/examples

go 1.26.0

require github.com/devkit-go/devkit/kvstore v0.0.0

require (
	github.com/google/btree v1.1.3 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/devkit-go/devkit/kvstore => ../kvstore
