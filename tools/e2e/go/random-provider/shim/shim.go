// Package shim exposes the Random Terraform provider, whose constructor lives in an internal
// package. Go lets only import paths under the provider's module path import it, hence this
// module's path; no published module has it, so ../go.mod replaces it with this folder.
package shim

import (
	"github.com/hashicorp/terraform-plugin-framework/provider"

	random "github.com/terraform-providers/terraform-provider-random/internal/provider"
)

// NewProvider is the plugin-framework provider the bridge wraps.
func NewProvider() provider.Provider { return random.New() }
