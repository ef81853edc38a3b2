package beir

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing/fstest"
)

// ConfigMapQrelsKey returns the ConfigMap key that holds qrels/<split>.tsv. ConfigMap keys
// may not contain '/', so the folder becomes a prefix: "qrels-test.tsv".
func ConfigMapQrelsKey(split string) string { return "qrels-" + split + ".tsv" }

var qrelsKey = regexp.MustCompile(`^qrels-([-._a-zA-Z0-9]+)\.tsv$`)

// ConfigMapFS turns a ConfigMap's data (key -> file contents) into a data set root for Load.
// Keys are corpus.jsonl, queries.jsonl, query_spans.jsonl and qrels-<split>.tsv (see
// ConfigMapQrelsKey); a key that is already a path such as "qrels/test.tsv" is taken as is.
// Any other key is an error naming it, so a misspelt key is not silently ignored.
func ConfigMapFS(data map[string]string) (fs.FS, error) {
	m := fstest.MapFS{}
	for key, val := range data {
		name := key
		switch {
		case key == CorpusFile, key == QueriesFile, key == QuerySpansFile:
		case qrelsKey.MatchString(key):
			name = path.Join(QrelsDir, qrelsKey.FindStringSubmatch(key)[1]+".tsv")
		case strings.HasPrefix(key, QrelsDir+"/") && strings.HasSuffix(key, ".tsv") && fs.ValidPath(key):
		default:
			return nil, fmt.Errorf("beir: ConfigMap key %q is not one of %s, %s, %s, qrels-<split>.tsv",
				key, CorpusFile, QueriesFile, QuerySpansFile)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("beir: ConfigMap keys give %s twice", name)
		}
		m[name] = &fstest.MapFile{Data: []byte(val), Mode: 0o444}
	}
	return m, nil
}

// FetchOptions configure Fetch.
type FetchOptions struct {
	// Client does the GET; nil means http.DefaultClient.
	Client *http.Client
	// SHA256 is the archive's expected SHA-256, 64 hex digits; required.
	SHA256 string
	// MaxBytes bounds the archive and, separately, the extracted total; 0 means 8 GiB.
	MaxBytes int64
}

// Fetch downloads a data set archive (tar.gz/tgz or zip, told apart by their magic bytes),
// checks its SHA-256, and extracts it under dir, which must exist and be empty or absent.
// It returns the folder inside dir that holds corpus.jsonl: the archive root or its single
// top-level folder, as BEIR's own zips have (scifact/corpus.jsonl). Entries that would land
// outside dir, links and devices are errors; so is a checksum mismatch, which names both sums.
func Fetch(ctx context.Context, url, dir string, opts FetchOptions) (string, error) {
	want := strings.ToLower(strings.TrimSpace(opts.SHA256))
	if len(want) != 64 || strings.Trim(want, "0123456789abcdef") != "" {
		return "", fmt.Errorf("beir: fetch %s: sha256 %q is not 64 hex digits (a checksum is required)", url, opts.SHA256)
	}
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = 8 << 30
	}
	client := opts.Client
	if client == nil {
		client = http.DefaultClient
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("beir: %w", err)
	}
	archive, err := os.CreateTemp(dir, ".download-*")
	if err != nil {
		return "", fmt.Errorf("beir: %w", err)
	}
	defer os.Remove(archive.Name())
	defer archive.Close()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("beir: fetch %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("beir: fetch %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("beir: fetch %s: HTTP status %s", url, resp.Status)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(archive, h), io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return "", fmt.Errorf("beir: fetch %s: %w", url, err)
	}
	if n > limit {
		return "", fmt.Errorf("beir: fetch %s: archive larger than %d bytes", url, limit)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return "", fmt.Errorf("beir: fetch %s: sha256 mismatch: got %s, want %s", url, got, want)
	}
	if _, err := archive.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("beir: %w", err)
	}
	dest := filepath.Join(dir, "data")
	if err := os.RemoveAll(dest); err != nil {
		return "", fmt.Errorf("beir: %w", err)
	}
	magic := make([]byte, 4)
	if _, err := io.ReadFull(archive, magic); err != nil {
		return "", fmt.Errorf("beir: fetch %s: archive too short: %w", url, err)
	}
	if _, err := archive.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("beir: %w", err)
	}
	switch {
	case magic[0] == 0x1f && magic[1] == 0x8b:
		err = extractTarGz(archive, dest, limit)
	case string(magic) == "PK\x03\x04":
		err = extractZip(archive, n, dest, limit)
	default:
		err = fmt.Errorf("not a gzip or zip archive (first bytes %x)", magic)
	}
	if err != nil {
		return "", fmt.Errorf("beir: fetch %s: %w", url, err)
	}
	root, err := findRoot(dest)
	if err != nil {
		return "", fmt.Errorf("beir: fetch %s: %w", url, err)
	}
	return root, nil
}

// findRoot returns dest if it holds corpus.jsonl, else its only subfolder that does.
func findRoot(dest string) (string, error) {
	if _, err := os.Stat(filepath.Join(dest, CorpusFile)); err == nil {
		return dest, nil
	}
	entries, err := os.ReadDir(dest)
	if err != nil {
		return "", err
	}
	var found []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(dest, e.Name(), CorpusFile)); err == nil {
				found = append(found, filepath.Join(dest, e.Name()))
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("archive has no %s at its root or in a top-level folder", CorpusFile)
	default:
		return "", fmt.Errorf("archive has %d top-level folders with %s; want one", len(found), CorpusFile)
	}
}

// safeJoin maps an archive entry name to a path under dest, refusing escapes.
func safeJoin(dest, name string) (string, error) {
	clean := path.Clean(strings.TrimPrefix(strings.ReplaceAll(name, "\\", "/"), "./"))
	if clean == "." {
		return dest, nil
	}
	if !fs.ValidPath(clean) {
		return "", fmt.Errorf("entry %q would be written outside the destination", name)
	}
	return filepath.Join(dest, filepath.FromSlash(clean)), nil
}

func writeEntry(target string, r io.Reader, budget *int64) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, *budget+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	*budget -= n
	if *budget < 0 {
		return errors.New("extracted data exceeds the size limit")
	}
	return nil
}

func extractTarGz(r io.Reader, dest string, limit int64) error {
	gz, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return err
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	budget := limit
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target, err := safeJoin(dest, hdr.Name)
		if err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeEntry(target, tr, &budget); err != nil {
				return fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
		case tar.TypeXGlobalHeader:
		default:
			return fmt.Errorf("entry %q: type %q is not a file or folder", hdr.Name, hdr.Typeflag)
		}
	}
}

func extractZip(r io.ReaderAt, size int64, dest string, limit int64) error {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return err
	}
	budget := limit
	for _, zf := range zr.File {
		target, err := safeJoin(dest, zf.Name)
		if err != nil {
			return err
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case mode.IsRegular():
			rc, err := zf.Open()
			if err != nil {
				return fmt.Errorf("entry %q: %w", zf.Name, err)
			}
			err = writeEntry(target, rc, &budget)
			rc.Close()
			if err != nil {
				return fmt.Errorf("entry %q: %w", zf.Name, err)
			}
		default:
			return fmt.Errorf("entry %q: mode %v is not a file or folder", zf.Name, mode)
		}
	}
	return nil
}
