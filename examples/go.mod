module github.com/devkit-go/devkit/examples

go 1.26.0

toolchain go1.27.3

require (
	github.com/devkit-go/devkit/kvstore v0.0.0
	github.com/devkit-go/devkit/ratelimit v0.0.0
	github.com/devkit-go/devkit/supervisor v0.0.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/devkit-go/devkit/internal v0.0.0 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pandatix/go-abnf v0.5.5 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.74.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	github.com/tidwall/btree v1.8.2 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace (
	github.com/devkit-go/devkit/internal => ../internal
	github.com/devkit-go/devkit/kvstore => ../kvstore
	github.com/devkit-go/devkit/ratelimit => ../ratelimit
	github.com/devkit-go/devkit/supervisor => ../supervisor
)
