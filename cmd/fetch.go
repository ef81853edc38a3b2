package cmd

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/ragops/ragops/internal/fetch"
)

func newFetchCommand() *cobra.Command {
	var url, sum, dest string
	c := &cobra.Command{
		Use:   "fetch",
		Short: "Download an archive or file, check its SHA-256 and unpack it (a model init step)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := os.MkdirAll(dest, 0o755); err != nil {
				return err
			}
			return fetch.Fetch(c.Context(), url, dest, fetch.Options{SHA256: sum, RequireSHA256: true})
		},
	}
	f := c.Flags()
	f.StringVar(&url, "url", "", "http(s) URL of the archive")
	f.StringVar(&sum, "sha256", "", "expected SHA-256 (hex) of the download")
	f.StringVar(&dest, "dest", "", "folder to unpack into")
	_ = c.MarkFlagRequired("url")
	_ = c.MarkFlagRequired("sha256")
	_ = c.MarkFlagRequired("dest")
	return c
}
