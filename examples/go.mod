module github.com/devkit-go/devkit/examples

go 1.26.0

require (
	github.com/devkit-go/devkit/kvstore v0.0.0
	github.com/devkit-go/devkit/ratelimit v0.0.0
	github.com/devkit-go/devkit/supervisor v0.0.0
)

require (
	github.com/google/btree v1.1.3 // indirect
	golang.org/x/sys v0.50.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace (
	github.com/devkit-go/devkit/kvstore => ../kvstore
	github.com/devkit-go/devkit/ratelimit => ../ratelimit
	github.com/devkit-go/devkit/supervisor => ../supervisor
)
