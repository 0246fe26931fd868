// Command pulumi-resource-random is the Random resource provider the e2e deploys with. Its schema
// and bridge metadata are generated at build time by ./tfgen into cmd/ (ignored), hence the
// embeds: a provider answers GetSchema from the schema it was built with.
package main

import (
	"context"
	_ "embed"

	pf "github.com/pulumi/pulumi-terraform-bridge/v3/pkg/pf/tfbridge"

	"ai-platform/tools/e2e/go/random-provider/random"
)

//go:embed cmd/schema.json
var schema []byte

//go:embed cmd/bridge-metadata.json
var metadata []byte

func main() {
	pf.Main(context.Background(), "random", random.Provider(metadata),
		pf.ProviderMetadata{PackageSchema: schema})
}
