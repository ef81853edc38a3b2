// Package crd embeds the CustomResourceDefinitions that controller-gen writes to
// config/crd/bases (`make manifests`), so the ragops binary can validate manifests offline
// against the very schemas a cluster installs.
package crd

import "embed"

// Bases holds bases/<group>_<plural>.yaml, one CustomResourceDefinition per file.
//
//go:embed bases/*.yaml
var Bases embed.FS
