// Package random maps the Random Terraform provider onto Pulumi names: one module, "index", and
// every resource random_X named RandomX, which are the tokens and property names the pulumi-random
// SDKs of the stamped release were generated for. The released plugin's main package is not a
// module anyone serves, so this is the bridge configuration it amounts to, written for the e2e.
package random

import (
	"context"
	"fmt"

	pf "github.com/pulumi/pulumi-terraform-bridge/v3/pkg/pf/tfbridge"
	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge"
	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/terraform-providers/terraform-provider-random/shim"
)

// Version is set by the linker to the pulumi-random release this build stands for; the engine
// and the schema report it.
var Version string

// Provider is the bridge configuration. metadata is the bridge-metadata.json that tfgen wrote
// next to the schema (the provider binary embeds it), or nil when tfgen itself runs: the e2e
// has no alias history to carry, so tfgen starts from none and records the current tokens.
func Provider(metadata []byte) tfbridge.ProviderInfo {
	info := tfbridge.ProviderInfo{
		P:            pf.ShimProvider(shim.NewProvider()),
		Name:         "random",
		Version:      Version,
		Description:  "A Pulumi package to safely use randomness in Pulumi programs.",
		License:      "Apache-2.0",
		MetadataInfo: tfbridge.NewProviderMetadata(metadata),
		Resources: map[string]*tfbridge.ResourceInfo{
			// The only resource without an "id" attribute.
			"random_bytes": {ComputeID: bytesID},
		},
		// Runtime behaviour of the released plugin, so that plans and the state it writes
		// are the same as with it.
		EnableAccurateBridgePreview: true,
		EnableRawStateDelta:         true,
	}
	info.MustComputeTokens(tokens.SingleModule("random_", "index",
		func(module, name string) (string, error) {
			return tokens.MakeStandard("random")(module, "Random"+name)
		}))
	info.MustApplyAutoAliases()
	return info
}

// bytesID is the base64 result, as the released plugin names a RandomBytes (imports take it).
func bytesID(_ context.Context, state resource.PropertyMap) (resource.ID, error) {
	value, ok := state["base64"]
	if ok && value.IsSecret() {
		value = value.SecretValue().Element
	}
	if !ok || !value.IsString() {
		return "", fmt.Errorf("random_bytes: the state has no base64 string to name it by")
	}
	return resource.ID(value.StringValue()), nil
}
