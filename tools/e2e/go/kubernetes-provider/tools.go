//go:build tools

// Package tools pins the Kubernetes provider the e2e runs. Its main package embeds a generated
// schema that the module lacks, so the build copies main.go into cmd/ (ignored) and generates it.
package tools

import (
	_ "github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	_ "github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)
