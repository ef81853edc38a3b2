package beir

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing/fstest"

	"github.com/ragops/ragops/internal/fetch"
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
// checks its SHA-256, and extracts it under dir (package internal/fetch, into dir/data,
// replaced on every call). It returns the folder inside that holds queries.jsonl (corpus.jsonl
// is optional): the archive root or its single top-level folder, as BEIR's own zips have
// (scifact/queries.jsonl).
// Entries that would land outside dir, links and devices are errors; so is a checksum
// mismatch, which names both sums, and a missing checksum.
func Fetch(ctx context.Context, url, dir string, opts FetchOptions) (string, error) {
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = 8 << 30
	}
	dest := filepath.Join(dir, "data")
	if err := os.RemoveAll(dest); err != nil {
		return "", fmt.Errorf("beir: %w", err)
	}
	if err := fetch.Fetch(ctx, url, dest, fetch.Options{Client: opts.Client, SHA256: opts.SHA256, RequireSHA256: true, MaxBytes: limit}); err != nil {
		return "", fmt.Errorf("beir: %w", err)
	}
	root, err := findRoot(dest)
	if err != nil {
		return "", fmt.Errorf("beir: fetch %s: %w", url, err)
	}
	return root, nil
}

// findRoot returns dest if it holds queries.jsonl, else its only subfolder that does.
func findRoot(dest string) (string, error) {
	if _, err := os.Stat(filepath.Join(dest, QueriesFile)); err == nil {
		return dest, nil
	}
	entries, err := os.ReadDir(dest)
	if err != nil {
		return "", err
	}
	var found []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(dest, e.Name(), QueriesFile)); err == nil {
				found = append(found, filepath.Join(dest, e.Name()))
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("archive has no %s at its root or in a top-level folder", QueriesFile)
	default:
		return "", fmt.Errorf("archive has %d top-level folders with %s; want one", len(found), QueriesFile)
	}
}
