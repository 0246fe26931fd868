// Command pulumi-tfgen-random writes the provider's Pulumi schema and bridge metadata
// (`schema --out DIR`); the build runs it before compiling the provider, which embeds both.
package main

import (
	"os"

	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/pf/tfgen"

	"ai-platform/tools/e2e/go/random-provider/random"
)

func main() {
	info := random.Provider(nil)
	// Descriptions come from the Terraform provider's docs/. Left unset, the bridge looks for the
	// module from ./provider (upstream's layout), so the build passes the module's folder.
	info.UpstreamRepoPath = os.Getenv("TERRAFORM_PROVIDER_RANDOM_DIR")
	tfgen.Main("random", info)
}
