// Package version holds the ragops build version, set at link time with
// -ldflags "-X github.com/ragops/ragops/internal/version.Version=v0.1.0".
package version

// Version of this build; "dev" when not set at link time.
var Version = "dev"
