package corpus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/ragops/ragops/internal/plan"
)

// s3Downloads is how many objects an S3 source downloads at once.
const s3Downloads = 4

// fetchS3 lists the objects of src.S3 under its prefix and downloads the selected ones into
// dir (emptied first), each at its key relative to the prefix. It returns dir, the objects
// listed but not downloaded (opts.Listing), sorted by path, and the source fields of each
// downloaded object by path (its listed LastModified, and the user metadata the GET's
// response headers carry: no request beyond the download).
//
// opts.Keep leaves out, before any download, the objects whose relative path it does not keep
// (a build shard's other documents); a BEIR file is downloaded whatever Keep says.
// opts.Unchanged leaves out the objects it knows at their listing identity, returned as
// listed with their known raw hash; get downloads one of those later, by path, when a walk
// needs its bytes after all, and returns its source fields. With
// opts.Listing only BEIR files are downloaded; every other selected object is returned with a
// hash of its listing metadata.
//
// Credentials are those of s3Credentials: static keys from the environment, or temporary
// keys from the workload's identity (src.S3.Identity). Objects are selected by
// src.Include/src.Exclude before they are downloaded. An object over src.MaxDocumentBytes
// (not a BEIR file, whose limit applies per line) is not downloaded: a sparse file of its
// size stands in for it so that Walk reports it as TooLarge like any oversized file.
//
// Errors: only one of the two keys set, a web identity without its token file, a bad endpoint, a refused listing or download
// (wrong credentials, missing bucket), a key that escapes dir or collides with another, a
// selection over MaxDownloadBytes in total, or over the worker's scratch volume (Scratch),
// naming it and its limit, before anything is downloaded.
func fetchS3(ctx context.Context, src plan.Source, dir string, opts OpenOptions) (_ string, _ []listedObject, _ map[string]*s3Object,
	get func(ctx context.Context, rel string) (*s3Object, error), err error) {
	s3 := src.S3
	name := "s3://" + s3.Bucket + "/" + s3.Prefix
	creds, err := s3Credentials(s3)
	if err != nil {
		return "", nil, nil, nil, fmt.Errorf("source %s: %w", name, err)
	}
	client, err := minio.New(s3.Endpoint, &minio.Options{
		Creds:  creds,
		Secure: !s3.Insecure,
		Region: s3.Region,
	})
	if err != nil {
		return "", nil, nil, nil, fmt.Errorf("source %s: endpoint %q: %w", name, s3.Endpoint, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", nil, nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, nil, nil, err
	}
	probe := &Source{spec: src}
	space, spaceName := Scratch()
	var (
		todo   []download
		objs   = map[string]*s3Object{}
		listed []listedObject
		dests  = map[string]string{} // cleaned relative path -> key
		total  int64
		known  = map[string]minio.ObjectInfo{} // left out as opts.Unchanged said: path -> as listed
		asked  []listedS3                      // waiting for opts.Unchanged
	)
	// take plans the download of an object (or a stand-in for one too large).
	take := func(obj minio.ObjectInfo, clean, ident string, beir bool) error {
		if max := src.MaxDocumentBytes; max > 0 && obj.Size > max && !beir {
			if err := placeholder(filepath.Join(dir, filepath.FromSlash(clean)), obj.Size); err != nil {
				return fmt.Errorf("source %s: object %q: %w", name, obj.Key, err)
			}
			return nil
		}
		total += obj.Size
		if total > MaxDownloadBytes {
			return fmt.Errorf("source %s: selected objects exceed %d bytes", name, int64(MaxDownloadBytes))
		}
		if space > 0 && total > space {
			return fmt.Errorf("source %s: the objects to download exceed %s (%d bytes and more)", name, spaceName, total)
		}
		o := &s3Object{modified: obj.LastModified, listing: ident, size: obj.Size}
		objs[clean] = o
		todo = append(todo, download{key: obj.Key, size: obj.Size, dst: filepath.Join(dir, filepath.FromSlash(clean)), obj: o})
		return nil
	}
	// ask asks opts.Unchanged about the waiting objects, and takes those it does not know.
	ask := func() error {
		if len(asked) == 0 {
			return nil
		}
		listings := make(map[string]string, len(asked))
		for _, a := range asked {
			listings[a.rel] = a.ident
		}
		hashes := opts.Unchanged(ctx, listings)
		for _, a := range asked {
			if h, ok := hashes[a.rel]; ok {
				listed = append(listed, listedObject{rel: a.rel, size: a.obj.Size, hash: h, listing: a.ident, known: true})
				known[a.rel] = a.obj
				continue
			}
			if err := take(a.obj, a.rel, a.ident, false); err != nil {
				return err
			}
		}
		asked = asked[:0]
		return nil
	}
	for obj := range client.ListObjects(ctx, s3.Bucket, minio.ListObjectsOptions{Prefix: s3.Prefix, Recursive: true}) {
		if obj.Err != nil {
			return "", nil, nil, nil, fmt.Errorf("source %s: list objects at %s: %w", name, s3.Endpoint, obj.Err)
		}
		if strings.HasSuffix(obj.Key, "/") { // folder marker
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(obj.Key, s3.Prefix), "/")
		if rel == "" { // the prefix names one object
			rel = path.Base(obj.Key)
		}
		clean := path.Clean(rel)
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
			return "", nil, nil, nil, fmt.Errorf("source %s: object key %q escapes the prefix", name, obj.Key)
		}
		ok, err := selected(src, clean)
		if err != nil {
			return "", nil, nil, nil, fmt.Errorf("source %s: %w", name, err)
		}
		if !ok {
			continue
		}
		if other, dup := dests[clean]; dup {
			return "", nil, nil, nil, fmt.Errorf("source %s: object keys %q and %q both map to %s", name, other, obj.Key, clean)
		}
		dests[clean] = obj.Key
		beir := probe.isBEIR(clean)
		if !beir && opts.Keep != nil && !opts.Keep(clean) {
			continue // another shard's document
		}
		ident := listingHash(obj.Key, obj.ETag, obj.Size)
		if !beir && opts.Listing {
			listed = append(listed, listedObject{rel: clean, size: obj.Size, hash: ident, listing: ident})
			continue
		}
		if !beir && opts.Unchanged != nil {
			if asked = append(asked, listedS3{obj: obj, rel: clean, ident: ident}); len(asked) >= UnchangedBatch {
				if err := ask(); err != nil {
					return "", nil, nil, nil, err
				}
			}
			continue
		}
		if err := take(obj, clean, ident, beir); err != nil {
			return "", nil, nil, nil, err
		}
	}
	if err := ask(); err != nil {
		return "", nil, nil, nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s3Downloads)
	for _, d := range todo {
		g.Go(func() error {
			if err := d.run(gctx, client, s3.Bucket); err != nil {
				return fmt.Errorf("source %s: object %q: %w", name, d.key, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", nil, nil, nil, err
	}
	get = func(ctx context.Context, rel string) (*s3Object, error) {
		obj, ok := known[rel]
		if !ok {
			return nil, fmt.Errorf("source %s: %s was not listed as known unchanged", name, rel)
		}
		d := download{key: obj.Key, size: obj.Size, dst: filepath.Join(dir, filepath.FromSlash(rel)),
			obj: &s3Object{modified: obj.LastModified, listing: listingHash(obj.Key, obj.ETag, obj.Size), size: obj.Size}}
		if err := d.run(ctx, client, s3.Bucket); err != nil {
			return nil, fmt.Errorf("source %s: object %q: %w", name, d.key, err)
		}
		return d.obj, nil
	}
	return dir, listed, objs, get, nil
}

// UnchangedBatch is how many S3 objects a listing asks OpenOptions.Unchanged about at once.
const UnchangedBatch = 500

// listedS3 is an S3 object as listed, waiting for OpenOptions.Unchanged: its path relative to
// the prefix and its listing identity (listingHash).
type listedS3 struct {
	obj        minio.ObjectInfo
	rel, ident string
}

// listedObject is an S3 object listed but not downloaded: its path relative to the prefix,
// listed size in bytes, its document hash (the listing hash; with known, the raw hash
// OpenOptions.Unchanged returned) and listing identity.
type listedObject struct {
	rel     string
	size    int64
	hash    string
	listing string
	known   bool
}

// listingHash is a document hash (16 hex digits, as hashOf) of an object's listing metadata:
// key, ETag and size. An object rewritten with other bytes gets another ETag (the MD5 of a
// single-part upload, of the parts' MD5s for a multipart one), so the hash changes with the
// content; it is not the hash of the bytes, so only listings compare with it.
func listingHash(key, etag string, size int64) string {
	return hashOf([]byte(fmt.Sprintf("s3\x00%s\x00%s\x00%d", key, strings.Trim(etag, `"`), size)))
}

// s3Object holds the source fields of a downloaded object: its listed LastModified and its
// user metadata (x-amz-meta-* headers of the GET, names without the prefix, lower-cased).
type s3Object struct {
	modified time.Time
	meta     map[string]string
	// listing is the object's listing identity (listingHash), size its listed size in bytes.
	listing string
	size    int64
}

// download is one object to fetch: its key, listed size in bytes, destination file and
// where its source fields go.
type download struct {
	key  string
	size int64
	dst  string
	obj  *s3Object
}

// run writes the object to d.dst, checks that its size is the listed one and records the
// user metadata of the GET's response in d.obj (Stat after the read sends no request).
func (d download) run(ctx context.Context, client *minio.Client, bucket string) error {
	r, err := client.GetObject(ctx, bucket, d.key, minio.GetObjectOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	cr := &countingReader{r: r}
	if err := writeFile(d.dst, cr); err != nil {
		return err
	}
	if cr.n != d.size {
		return fmt.Errorf("downloaded %d bytes, listed as %d", cr.n, d.size)
	}
	if d.obj == nil {
		return nil
	}
	info, err := r.Stat()
	if err != nil {
		return err
	}
	for k, v := range info.UserMetadata {
		if d.obj.meta == nil {
			d.obj.meta = map[string]string{}
		}
		d.obj.meta[strings.ToLower(k)] = v
	}
	return nil
}

// placeholder creates a sparse file of size bytes at dst, standing in for an object too large
// to download; Walk reports it TooLarge from its size and never reads it.
func placeholder(dst string, size int64) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	return errors.Join(f.Truncate(size), f.Close())
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
