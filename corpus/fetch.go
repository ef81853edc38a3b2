package corpus

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// MaxDownloadBytes bounds an HTTP source: 16 GiB.
const MaxDownloadBytes = 16 << 30

// fetchHTTP downloads src into dir and unpacks it when it is a tar, tar.gz or zip archive.
func fetchHTTP(ctx context.Context, src ragopsv1alpha1.HTTPSource, dir string) (string, error) {
	headers, err := readHeaders(plan.HeadersDir)
	if err != nil {
		return "", err
	}
	return Fetch(ctx, src.URL, src.SHA256, headers, dir)
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

// Fetch downloads rawURL into dir, checks its SHA-256 when want is not empty, and unpacks
// tar, tar.gz and zip archives (by content, not name); any other file is stored under its URL
// base name. It returns dir.
//
// Errors: a non-2xx status, a checksum mismatch naming both digests, an archive entry that
// escapes dir, a download over MaxDownloadBytes.
func Fetch(ctx context.Context, rawURL, want string, headers http.Header, dir string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("url %q: %w", rawURL, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return "", err
	}
	for k, v := range headers {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("download %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("download %s: HTTP %s", u.Redacted(), resp.Status)
	}
	tmp, err := os.CreateTemp(dir, ".download-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, MaxDownloadBytes+1))
	if err != nil {
		return "", fmt.Errorf("download %s: %w", u.Redacted(), err)
	}
	if n > MaxDownloadBytes {
		return "", fmt.Errorf("download %s: larger than %d bytes", u.Redacted(), int64(MaxDownloadBytes))
	}
	if got := hex.EncodeToString(h.Sum(nil)); want != "" && !strings.EqualFold(got, want) {
		return "", fmt.Errorf("download %s: sha256 %s, want %s", u.Redacted(), got, want)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	if err := unpack(tmp, n, dir, path.Base(u.Path)); err != nil {
		return "", fmt.Errorf("unpack %s: %w", u.Redacted(), err)
	}
	return dir, nil
}

func unpack(f *os.File, size int64, dir, name string) error {
	br := bufio.NewReader(f)
	head, _ := br.Peek(512)
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		inner := bufio.NewReader(zr)
		h, _ := inner.Peek(512)
		if len(h) >= 262 && string(h[257:262]) == "ustar" {
			return untar(inner, dir)
		}
		return writeFile(filepath.Join(dir, strings.TrimSuffix(name, ".gz")), inner)
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		zr, err := zip.NewReader(f, size)
		if err != nil {
			return err
		}
		for _, zf := range zr.File {
			if zf.FileInfo().IsDir() {
				continue
			}
			dst, err := within(dir, zf.Name)
			if err != nil {
				return err
			}
			rc, err := zf.Open()
			if err != nil {
				return err
			}
			err = writeFile(dst, rc)
			rc.Close()
			if err != nil {
				return err
			}
		}
		return nil
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		return untar(br, dir)
	}
	if name == "" || name == "/" || name == "." {
		name = "document"
	}
	return writeFile(filepath.Join(dir, name), br)
}

func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		dst, err := within(dir, hdr.Name)
		if err != nil {
			return err
		}
		if err := writeFile(dst, tr); err != nil {
			return err
		}
	}
}

// within joins an archive entry name to dir, refusing absolute names and names that climb
// out of it ("../").
func within(dir, name string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(name))
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("archive entry %q escapes the destination", name)
	}
	return filepath.Join(dir, clean), nil
}

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
