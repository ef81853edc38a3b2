// Package fetch downloads one file over HTTP, checks its SHA-256 and unpacks it under a
// folder: the one download-verify-unpack path of corpora (an HTTP source), data sets (an
// Evaluation's dataset.http) and model folders (`ragops fetch`). Archives are told apart by
// their first bytes, not their names: tar, gzip-compressed tar and zip are unpacked; a
// gzip-compressed file is decompressed; anything else is stored under its URL's base name.
// An entry that would land outside the folder, a link, a device, a download or an
// unpacked total above the limit are errors that name it.
package fetch

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// DefaultMaxBytes bounds a download, and separately what it unpacks to, when
// Options.MaxBytes is 0: 16 GiB.
const DefaultMaxBytes = 16 << 30

// Options configure Fetch.
type Options struct {
	// Client does the GET; nil means http.DefaultClient.
	Client *http.Client
	// Header is sent with the GET (an Authorization from a mounted Secret, say).
	Header http.Header
	// SHA256 is the file's expected SHA-256 in hex; empty skips the check unless
	// RequireSHA256 is set.
	SHA256 string
	// RequireSHA256 refuses to fetch without SHA256.
	RequireSHA256 bool
	// MaxBytes bounds the download and, separately, the unpacked total; 0 means
	// DefaultMaxBytes.
	MaxBytes int64
	// Space bounds the download and the unpacked total together (both are on disk while it
	// unpacks): the room of the volume dir is on; 0 means no bound. SpaceName names that
	// volume and its limit in the error (a worker's scratch volume, say).
	Space     int64
	SpaceName string
	// IfNoneMatch (an ETag) and IfModifiedSince (an HTTP date) make the GET conditional: a
	// 304 Not Modified answer is ErrNotModified, with nothing downloaded or written.
	IfNoneMatch, IfModifiedSince string
}

// ErrNotModified is the answer to a conditional fetch whose file has not changed (HTTP 304).
var ErrNotModified = errors.New("not modified since the last fetch")

// Validators are the cache validators of a fetched file's response (empty when it sent none).
type Validators struct {
	ETag, LastModified string
}

// Fetch downloads rawURL into dir (created when missing), checks its SHA-256 and unpacks it
// there (see the package doc). The URL appears in errors with its password redacted.
//
// Errors: a SHA256 that is not 64 hex digits, none when required, a non-2xx status, a
// checksum mismatch naming both digests ("sha256 mismatch: got X, want Y"), a download or
// unpacked total over MaxBytes, both together over Space (naming SpaceName), an entry that escapes dir, a link or device entry.
func Fetch(ctx context.Context, rawURL, dir string, o Options) error {
	_, err := FetchValidated(ctx, rawURL, dir, o)
	return err
}

// FetchValidated fetches as Fetch does and returns the response's validators (ETag,
// Last-Modified), which a later fetch passes as Options.IfNoneMatch and IfModifiedSince.
// Errors: Fetch's, and ErrNotModified (wrapped, naming the URL) for a conditional fetch the
// server answers with 304 Not Modified.
func FetchValidated(ctx context.Context, rawURL, dir string, o Options) (Validators, error) {
	var v Validators
	u, err := url.Parse(rawURL)
	if err != nil {
		return v, fmt.Errorf("url %q: %w", rawURL, err)
	}
	shown := u.Redacted()
	want := strings.ToLower(strings.TrimSpace(o.SHA256))
	switch {
	case want == "" && o.RequireSHA256:
		return v, fmt.Errorf("fetch %s: no sha256 (a checksum is required)", shown)
	case want != "" && (len(want) != 64 || strings.Trim(want, "0123456789abcdef") != ""):
		return v, fmt.Errorf("fetch %s: sha256 %q is not 64 hex digits", shown, o.SHA256)
	}
	limit := o.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	client := o.Client
	if client == nil {
		client = http.DefaultClient
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return v, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return v, fmt.Errorf("fetch %s: %w", shown, err)
	}
	for k, vals := range o.Header {
		req.Header[k] = vals
	}
	if o.IfNoneMatch != "" {
		req.Header.Set("If-None-Match", o.IfNoneMatch)
	}
	if o.IfModifiedSince != "" {
		req.Header.Set("If-Modified-Since", o.IfModifiedSince)
	}
	resp, err := client.Do(req)
	if err != nil {
		return v, fmt.Errorf("fetch %s: %w", shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && (o.IfNoneMatch != "" || o.IfModifiedSince != "") {
		return v, fmt.Errorf("fetch %s: %w", shown, ErrNotModified)
	}
	v = Validators{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
	if resp.StatusCode/100 != 2 {
		return v, fmt.Errorf("fetch %s: HTTP %s", shown, resp.Status)
	}
	tmp, err := os.CreateTemp(dir, ".download-*")
	if err != nil {
		return v, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	readMax := limit // stop writing at the first bound passed
	if o.Space > 0 && o.Space < readMax {
		readMax = o.Space
	}
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, readMax+1))
	if err != nil {
		return v, fmt.Errorf("fetch %s: %w", shown, err)
	}
	if n > limit {
		return v, fmt.Errorf("fetch %s: larger than %d bytes", shown, limit)
	}
	if o.Space > 0 && n > o.Space {
		return v, fmt.Errorf("fetch %s: the download (over %d bytes) exceeds %s", shown, o.Space, o.SpaceName)
	}
	if got := hex.EncodeToString(h.Sum(nil)); want != "" && got != want {
		return v, fmt.Errorf("fetch %s: sha256 mismatch: got %s, want %s", shown, got, want)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return v, err
	}
	un := unpacker{dir: dir, budget: limit}
	if o.Space > 0 && o.Space-n < limit {
		un.budget, un.space = o.Space-n, o.SpaceName
	}
	if err := un.unpack(tmp, n, path.Base(u.Path)); err != nil {
		return v, fmt.Errorf("fetch %s: unpack: %w", shown, err)
	}
	return v, nil
}

// unpacker writes entries under dir while budget (bytes) lasts; space, when set, names the
// volume whose room (less the download) the budget is.
type unpacker struct {
	dir    string
	budget int64
	space  string
}

func (u *unpacker) unpack(f *os.File, size int64, name string) error {
	br := bufio.NewReader(f)
	head, _ := br.Peek(512)
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		defer zr.Close()
		inner := bufio.NewReader(zr)
		if h, _ := inner.Peek(512); isTar(h) {
			return u.untar(inner)
		}
		return u.write(strings.TrimSuffix(strings.TrimSuffix(name, ".gz"), ".tgz"), inner)
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return u.unzip(f, size)
	case isTar(head):
		return u.untar(br)
	}
	if name == "" || name == "/" || name == "." {
		name = "document"
	}
	return u.write(name, br)
}

func isTar(head []byte) bool { return len(head) >= 262 && string(head[257:262]) == "ustar" }

func (u *unpacker) untar(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			target, err := u.within(hdr.Name)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := u.write(hdr.Name, tr); err != nil {
				return err
			}
		case tar.TypeXGlobalHeader:
		default:
			return fmt.Errorf("entry %q: type %q is not a file or folder", hdr.Name, hdr.Typeflag)
		}
	}
}

func (u *unpacker) unzip(r io.ReaderAt, size int64) error {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return err
	}
	for _, zf := range zr.File {
		switch mode := zf.Mode(); {
		case mode.IsDir():
			target, err := u.within(zf.Name)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case mode.IsRegular():
			rc, err := zf.Open()
			if err != nil {
				return fmt.Errorf("entry %q: %w", zf.Name, err)
			}
			err = u.write(zf.Name, rc)
			rc.Close()
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q: mode %v is not a file or folder", zf.Name, mode)
		}
	}
	return nil
}

// within maps an entry name to a path under dir, refusing absolute names and names that climb
// out of it.
func (u *unpacker) within(name string) (string, error) {
	clean := path.Clean(strings.TrimPrefix(strings.ReplaceAll(name, "\\", "/"), "./"))
	if clean == "." {
		return u.dir, nil
	}
	if !fs.ValidPath(clean) {
		return "", fmt.Errorf("entry %q escapes the destination: it would be written outside the destination", name)
	}
	return filepath.Join(u.dir, filepath.FromSlash(clean)), nil
}

// write stores one entry, charging its bytes to the budget.
func (u *unpacker) write(name string, r io.Reader) error {
	target, err := u.within(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.Create(target)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, u.budget+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	u.budget -= n
	if u.budget < 0 && u.space != "" {
		return fmt.Errorf("entry %q: the download and its unpacked data exceed %s", name, u.space)
	}
	if u.budget < 0 {
		return fmt.Errorf("entry %q: the unpacked data exceeds the size limit", name)
	}
	return nil
}
