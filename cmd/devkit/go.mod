module github.com/devkit-go/devkit/cmd/devkit

go 1.26

require (
	github.com/devkit-go/devkit/kvstore v0.0.0
	github.com/devkit-go/devkit/ratelimit v0.0.0
	github.com/devkit-go/devkit/supervisor v0.0.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
)

replace (
	github.com/devkit-go/devkit/kvstore => ../../kvstore
	github.com/devkit-go/devkit/ratelimit => ../../ratelimit
	github.com/devkit-go/devkit/supervisor => ../../supervisor
)
