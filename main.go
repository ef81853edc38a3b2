// Command ragops is the ragops operator and its workers: one binary, one image, with the
// subcommands manager, embed, evaluate and version.
package main

import (
	"os"

	"github.com/ragops/ragops/cmd"
)

func main() {
	if err := cmd.NewRoot().Execute(); err != nil {
		os.Exit(1)
	}
}
