package formats

import (
	"context"
	"io"
	"sync"

	"github.com/ragops/ragops/reader"
)

// Lazy starts the readers (PDFium takes seconds to compile its WebAssembly module) only
// when the first document needs them: a build of Markdown files, or a preview of one text
// file, never pays for it. The zero value with Options set is ready; Close it when done.
type Lazy struct {
	Options Options

	once sync.Once
	r    *Readers
	err  error
}

// Start starts the readers once; every later call returns the first call's error.
func (l *Lazy) Start(ctx context.Context) error {
	l.once.Do(func() { l.r, l.err = New(ctx, l.Options) })
	return l.err
}

// Read reads data as a document, starting the readers first (see Start for its error).
func (l *Lazy) Read(ctx context.Context, data []byte) (reader.Document, error) {
	if err := l.Start(ctx); err != nil {
		return reader.Document{}, err
	}
	return l.r.Read(ctx, data)
}

// ReadAt reads the document of size bytes in r (reader.Mux.ReadAt: a PDF without a copy
// of the file in memory), starting the readers first.
func (l *Lazy) ReadAt(ctx context.Context, r io.ReaderAt, size int64) (reader.Document, error) {
	if err := l.Start(ctx); err != nil {
		return reader.Document{}, err
	}
	return l.r.ReadAt(ctx, r, size)
}

// Close stops the readers if they were started.
func (l *Lazy) Close() error {
	if l.r == nil {
		return nil
	}
	return l.r.Close()
}
