module github.com/devkit-go/devkit/tools

go 1.26.0

toolchain go1.27.3

require (
	github.com/google/licensecheck v0.3.1
	gopkg.in/yaml.v3 v3.0.1
)
