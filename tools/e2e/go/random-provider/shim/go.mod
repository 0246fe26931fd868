module github.com/terraform-providers/terraform-provider-random/shim

go 1.26.8
