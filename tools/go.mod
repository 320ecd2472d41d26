module github.com/devkit-go/devkit/tools

go 1.26.0

require (
	github.com/google/licensecheck v0.3.1
	gopkg.in/yaml.v3 v3.0.1
)
