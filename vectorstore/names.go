package vectorstore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// MaxNameLength is the longest collection or alias name Weaviate accepts
// (class names match ^[A-Z][_0-9A-Za-z]{0,254}$).
const MaxNameLength = 255

var (
	// k8sNameRe accepts Kubernetes object names (DNS-1123 subdomains and labels).
	k8sNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	// revisionRe accepts revision identifiers (content hashes, generation numbers).
	revisionRe = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9._]{0,127}$`)
	// classNameRe is Weaviate's class name rule.
	classNameRe = regexp.MustCompile(`^[A-Z][_0-9A-Za-z]{0,254}$`)
)

// AliasName returns the Weaviate alias for the Index namespace/index:
//
//	Rag_<namespace>_<index>_<h>
//
// where '-' and '.' become '_' and <h> is the first 8 hex digits of SHA-256("namespace/index"),
// which keeps distinct Kubernetes names distinct after the lossy character mapping ("a-b"/"c" and
// "a"/"b-c" both read Rag_a_b_c). Long names are shortened in the readable part only; the result
// always matches Weaviate's class-name rule and is at most [MaxNameLength] bytes. Queries go
// through the alias; it points at one revision collection (see [CollectionName]).
//
// Errors: namespace or index empty or not a Kubernetes name (lowercase alphanumerics, '-', '.').
func AliasName(namespace, index string) (string, error) {
	if err := checkK8sName("namespace", namespace); err != nil {
		return "", err
	}
	if err := checkK8sName("index", index); err != nil {
		return "", err
	}
	return indexBase(namespace, index, ""), nil
}

// CollectionName returns the Weaviate collection that holds one revision of the Index
// namespace/index:
//
//	Rag_<namespace>_<index>_<h>_<revision>
//
// with the same mapping and hash as [AliasName] (h covers the revision too). The revision is a
// content hash or similar identifier (at most 128 letters, digits, '-', '.', '_').
//
// Errors: an argument is empty or has characters outside those sets.
func CollectionName(namespace, index, revision string) (string, error) {
	if err := checkK8sName("namespace", namespace); err != nil {
		return "", err
	}
	if err := checkK8sName("index", index); err != nil {
		return "", err
	}
	if !revisionRe.MatchString(revision) {
		return "", fmt.Errorf("revision %q: want at most 128 letters, digits, '-', '.', '_' starting with a letter or digit", revision)
	}
	return indexBase(namespace, index, revision), nil
}

// ValidateName reports whether name is acceptable to Weaviate as a collection or alias name.
func ValidateName(name string) error {
	if !classNameRe.MatchString(name) {
		return fmt.Errorf("collection or alias name %q: want an upper-case letter followed by at most 254 of [A-Za-z0-9_]", name)
	}
	return nil
}

func checkK8sName(what, v string) error {
	if len(v) > 253 || !k8sNameRe.MatchString(v) {
		return fmt.Errorf("%s %q is not a Kubernetes name (lowercase letters, digits, '-', '.'; at most 253 characters)", what, v)
	}
	return nil
}

func indexBase(namespace, index, revision string) string {
	key := namespace + "/" + index
	if revision != "" {
		key += "/" + revision
	}
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:4])
	ns, ix, rev := sanitize(namespace), sanitize(index), sanitize(revision)
	fixed := len("Rag___") + len(h)
	if rev != "" {
		fixed += 1 + len(rev)
	}
	// Shorten the readable namespace and index parts to fit; the hash keeps names unique.
	for fixed+len(ns)+len(ix) > MaxNameLength {
		if len(ix) >= len(ns) {
			ix = ix[:len(ix)-1]
		} else {
			ns = ns[:len(ns)-1]
		}
	}
	name := "Rag_" + ns + "_" + ix + "_" + h
	if rev != "" {
		name += "_" + rev
	}
	return name
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		default:
			return '_'
		}
	}, s)
}
