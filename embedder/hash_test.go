package embedder

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// FolderHash covers exactly the folder contract: it equals an independent sha256sum of the
// documented stream (name, NUL, size, NUL, bytes per file in name order), ignores files
// outside the contract and changes with one byte of the tokenizer.
func TestFolderHash(t *testing.T) {
	src := modelDir(t)
	dir := t.TempDir()
	cfg, err := ReadConfig(src)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{ConfigFile, ModelFile, TokenizerFile}
	for _, f := range cfg.Precisions {
		names = append(names, f)
	}
	for _, n := range names {
		// The large graphs are linked, the small files copied so that one can change.
		if strings.HasSuffix(n, ".onnx") {
			if err := os.Symlink(filepath.Join(src, n), filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := FolderHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The same stream built by the shell: LC_ALL=C sorts names bytewise, stat -L follows links.
	script := `cd "$1" && for f in $(printf '%s\n' ` + strings.Join(names, " ") + ` | LC_ALL=C sort -u); do
		printf '%s\0%s\0' "$f" "$(stat -L -c %s "$f")"; cat "$f"; done | sha256sum | cut -d' ' -f1`
	out, err := exec.Command("bash", "-c", script, "bash", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := HashPrefix + strings.TrimSpace(string(out)); got != want {
		t.Fatalf("FolderHash %s, sha256sum of the documented stream %s", got, want)
	}
	if srcHash, err := FolderHash(src); err != nil || srcHash != got {
		t.Fatalf("the original folder (with references and markers beside the contract) hashes to %s (%v), its copy to %s", srcHash, err, got)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, _ := FolderHash(dir); h != got {
		t.Errorf("a file outside the contract changed the hash")
	}
	tokPath := filepath.Join(dir, TokenizerFile)
	b, _ := os.ReadFile(tokPath)
	b[len(b)-2] ^= ' ' ^ '\n'
	os.WriteFile(tokPath, b, 0o644)
	if h, _ := FolderHash(dir); h == got {
		t.Errorf("one changed byte of %s kept the hash", TokenizerFile)
	}
	os.Remove(filepath.Join(dir, ModelFile))
	if _, err := FolderHash(dir); err == nil || !strings.Contains(err.Error(), ModelFile) {
		t.Errorf("a folder without %s: %v", ModelFile, err)
	}
}
