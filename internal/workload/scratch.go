package workload

import (
	"k8s.io/apimachinery/pkg/api/resource"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/fetch"
)

// Scratch volume sizing: a worker's /tmp (plan.ScratchVolume) holds what it fetches of remote
// sources plus the readers' temporary files. Its emptyDir gets a sizeLimit, so that a fetch
// larger than planned is refused by the worker naming the volume and limit (or the pod is
// evicted by the kubelet naming them) instead of filling the node's disk.
const (
	// ScratchBase is the room, in bytes, of a worker that fetches nothing: 2 GiB.
	ScratchBase int64 = 2 << 30
	// ScratchHeadroom multiplies a Corpus's status.bytes (its selected documents): an HTTP
	// archive and its unpacked files are both on disk while it unpacks, a Git clone holds
	// its objects and its checkout, and either may hold files the selection leaves out.
	ScratchHeadroom = 3
	// ScratchUnknown is the room, in bytes, of a remote source of unknown size (a Corpus not
	// yet scanned, an HTTP dataset): the fetch's own caps, a download and its unpacked files
	// of fetch.DefaultMaxBytes each.
	ScratchUnknown int64 = 2 * fetch.DefaultMaxBytes
)

// Fetches records that the worker fetches a remote source of about bytes (its selected
// documents) into /tmp; bytes <= 0 means unknown (ScratchUnknown).
func (w *Workload) Fetches(bytes int64) {
	if bytes <= 0 {
		w.fetched += ScratchUnknown
		return
	}
	w.fetched += ScratchHeadroom * bytes
}

// fetchesCorpus records the fetch of a Corpus with a remote source (HTTP, S3, Git), sized by
// its last scan's status.bytes; a PVC or ConfigMap Corpus is mounted, not fetched.
func (w *Workload) fetchesCorpus(c *ragopsv1alpha1.Corpus) {
	if c.Spec.HTTP == nil && c.Spec.S3 == nil && c.Spec.Git == nil {
		return
	}
	if c.Status.Revision == "" { // never scanned: its size is not known
		w.Fetches(0)
		return
	}
	w.Fetches(max(c.Status.Bytes, 1))
}

// ScratchLimit is the sizeLimit of the worker's /tmp emptyDir: ScratchBase plus the room of
// every remote source it fetches (Fetches).
func (w *Workload) ScratchLimit() *resource.Quantity {
	return resource.NewQuantity(ScratchBase+w.fetched, resource.BinarySI)
}
