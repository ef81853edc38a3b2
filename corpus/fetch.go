package corpus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/fetch"
	"github.com/ragops/ragops/internal/plan"
)

// MaxDownloadBytes bounds an HTTP source (the download, and separately what it unpacks
// to) and an S3 selection: 16 GiB.
const MaxDownloadBytes = fetch.DefaultMaxBytes

// ErrNotModified is the error of an Open whose HTTP source's archive has not changed since
// the validators of OpenOptions (HTTP 304 Not Modified): nothing was downloaded.
var ErrNotModified = fetch.ErrNotModified

// fetchHTTP downloads src into dir and unpacks it when it is a tar, tar.gz or zip archive,
// conditionally when opts has validators, and returns the response's validators.
func fetchHTTP(ctx context.Context, src ragopsv1alpha1.HTTPSource, dir string, opts OpenOptions) (fetch.Validators, error) {
	headers, err := readHeaders(plan.HeadersDir)
	if err != nil {
		return fetch.Validators{}, err
	}
	space, spaceName := Scratch()
	return fetch.FetchValidated(ctx, src.URL, dir, fetch.Options{Header: headers, SHA256: src.SHA256, MaxBytes: MaxDownloadBytes,
		Space: space, SpaceName: spaceName, IfNoneMatch: opts.IfNoneMatch, IfModifiedSince: opts.IfModifiedSince})
}

// readHeaders reads one HTTP header per file of dir (a mounted Secret); a missing dir means none.
func readHeaders(dir string) (http.Header, error) {
	h := http.Header{}
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return h, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), "..") {
			continue
		}
		v, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		h.Set(e.Name(), strings.TrimSpace(string(v)))
	}
	return h, nil
}

// Fetch downloads rawURL into dir with headers, checks its SHA-256 when want is not empty,
// and unpacks it (package internal/fetch: tar, tar.gz and zip by content; any other file
// under its URL base name). It returns dir.
//
// Errors: a non-2xx status, a checksum mismatch naming both digests, an archive entry that
// escapes dir, a link or device entry, a download or unpacked total over MaxDownloadBytes,
// both together over the worker's scratch volume (see Scratch), naming it and its limit.
func Fetch(ctx context.Context, rawURL, want string, headers http.Header, dir string) (string, error) {
	space, spaceName := Scratch()
	if err := fetch.Fetch(ctx, rawURL, dir, fetch.Options{Header: headers, SHA256: want, MaxBytes: MaxDownloadBytes, Space: space, SpaceName: spaceName}); err != nil {
		return "", err
	}
	return dir, nil
}

// Scratch returns the size limit in bytes of the worker's scratch volume, from
// plan.EnvScratchBytes (0 when unset or unreadable: no bound), and how errors name it:
// `scratch volume "tmp" (sizeLimit N bytes, X GiB; RAGOPS_SCRATCH_BYTES)`.
func Scratch() (int64, string) {
	n, err := strconv.ParseInt(os.Getenv(plan.EnvScratchBytes), 10, 64)
	if err != nil || n <= 0 {
		return 0, ""
	}
	return n, fmt.Sprintf("scratch volume %q (sizeLimit %d bytes, %.1f GiB; %s)",
		plan.ScratchVolume, n, float64(n)/(1<<30), plan.EnvScratchBytes)
}

// scratchError adds the scratch volume and its limit to an error of a fetch that ran out of
// space (ENOSPC); other errors are returned as they are.
func scratchError(err error) error {
	if err == nil || !errors.Is(err, syscall.ENOSPC) {
		return err
	}
	if _, name := Scratch(); name != "" {
		return fmt.Errorf("%w: no space left on %s", err, name)
	}
	return fmt.Errorf("%w: no space left on scratch volume %q", err, plan.ScratchVolume)
}

// writeFile writes r to dst, creating its folder.
func writeFile(dst string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
