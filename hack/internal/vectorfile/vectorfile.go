// Package vectorfile reads and writes the document vector cache of the hack/ tools: float32
// little-endian, one row of dim values per document, rows in corpus order, no header.
// hack/scifact-model writes it; hack/bench-cluster reads it.
package vectorfile

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// Read returns the n rows of dim values in path.
//
// Errors: os.ErrNotExist (wrapped) when path is missing; a size other than n*dim*4 bytes.
func Read(path string, n, dim int) ([][]float32, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(raw) != n*dim*4 {
		return nil, fmt.Errorf("%s: %d bytes, want %d documents x %d x 4", path, len(raw), n, dim)
	}
	out := make([][]float32, n)
	for i := range out {
		out[i] = make([]float32, dim)
		for k := range out[i] {
			out[i][k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[(i*dim+k)*4:]))
		}
	}
	return out, nil
}

// Write writes vecs to path (creating its folder) through a temporary file and a rename, so a
// reader never sees a partial cache.
func Write(path string, vecs [][]float32) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var buf []byte
	for _, v := range vecs {
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
