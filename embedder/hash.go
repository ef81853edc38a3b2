package embedder

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// TokenizerFile is the Hugging Face tokenizer of a model folder.
const TokenizerFile = "tokenizer.json"

// HashPrefix starts every FolderHash.
const HashPrefix = "sha256:"

// FolderHash returns the content hash of the model folder dir, "sha256:" and 64 lowercase hex
// digits: SHA-256 over the files of the folder contract in byte order of their names
// (ragops.json, tokenizer.json, model.onnx and every precision variant ragops.json names),
// each written as its name, a NUL byte, its size in decimal, a NUL byte and its bytes. Files
// outside the contract (a README, a cache) do not count, so a copy of the folder with extra
// files keeps its hash; any change to the weights, tokenizer, prefixes or pooling changes it.
// The model server reports it (GET /meta) so that a collection is only wired to a server of
// the model its vectors came from.
//
// Errors: an unreadable or invalid ragops.json (ReadConfig), a missing or unreadable file of
// the contract (naming it).
func FolderHash(dir string) (string, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return "", err
	}
	names := []string{ConfigFile, TokenizerFile, ModelFile}
	for _, f := range cfg.Precisions {
		names = append(names, f)
	}
	sort.Strings(names)
	h := sha256.New()
	prev := ""
	for _, n := range names {
		if n == prev {
			continue
		}
		prev = n
		if err := hashFile(h, filepath.Join(dir, n), n); err != nil {
			return "", err
		}
	}
	return HashPrefix + hex.EncodeToString(h.Sum(nil)), nil
}

// hashFile writes name, NUL, size, NUL and the bytes of path into w.
func hashFile(w io.Writer, path, name string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("embedder: model folder hash: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("embedder: model folder hash: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("embedder: model folder hash: %s is not a regular file", path)
	}
	io.WriteString(w, name+"\x00"+strconv.FormatInt(fi.Size(), 10)+"\x00")
	n, err := io.Copy(w, f)
	if err != nil {
		return fmt.Errorf("embedder: model folder hash: reading %s: %w", path, err)
	}
	if n != fi.Size() {
		return fmt.Errorf("embedder: model folder hash: %s changed while it was read (%d of %d bytes)", path, n, fi.Size())
	}
	return nil
}
