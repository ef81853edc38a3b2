package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/fault"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// RetryableError is a transient failure: the server is unreachable, the call timed out, or the
// server answered 5xx/429 (gRPC Unavailable, DeadlineExceeded, ResourceExhausted, Aborted).
// Repeating the same call later may succeed. Match it with [IsRetryable] or errors.As.
type RetryableError struct {
	// Op is the operation, e.g. "upsert", "search", "count".
	Op string
	// Collection is the collection or alias the call addressed ("" for server-wide calls).
	Collection string
	// Err is the underlying client or server error.
	Err error
}

func (e *RetryableError) Error() string {
	return fmt.Sprintf("vectorstore: %s %s: retryable: %v", e.Op, e.Collection, e.Err)
}

func (e *RetryableError) Unwrap() error { return e.Err }

// CollectionNotFoundError is a permanent failure: the collection (or alias) does not exist.
type CollectionNotFoundError struct {
	Op         string
	Collection string
	// Err is the server's answer, when there was one.
	Err error
}

func (e *CollectionNotFoundError) Error() string {
	msg := fmt.Sprintf("vectorstore: %s: collection %s does not exist", e.Op, e.Collection)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *CollectionNotFoundError) Unwrap() error { return e.Err }

// DimensionError is a permanent failure: a vector's length differs from the collection's.
// Expected is the collection's dimension (0 when the server did not say and the collection
// does not record it), Actual the offending vector's length.
type DimensionError struct {
	Op         string
	Collection string
	Expected   int
	Actual     int
	// DocID and Ordinal name the offending chunk on upsert ("" and -1 for queries).
	DocID   string
	Ordinal int
	// Err is the server's answer, nil when the client caught the mismatch before sending.
	Err error
}

func (e *DimensionError) Error() string {
	where := ""
	if e.DocID != "" {
		where = fmt.Sprintf(" (document %q chunk %d)", e.DocID, e.Ordinal)
	}
	msg := fmt.Sprintf("vectorstore: %s %s: vector dimension mismatch%s: collection has %d, got %d",
		e.Op, e.Collection, where, e.Expected, e.Actual)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *DimensionError) Unwrap() error { return e.Err }

// ObjectFailure is one chunk the server refused in a batch.
type ObjectFailure struct {
	DocID   string
	Ordinal int
	// ID is the chunk's object UUID.
	ID string
	// Message is the server's per-object error text.
	Message string
}

// BatchError reports chunks the server refused (per-object errors in a batch reply) that were
// not transient, or still failed after the retries. It is permanent.
type BatchError struct {
	Collection string
	// Failed lists the refused chunks, at most maxReportedFailures of them.
	Failed []ObjectFailure
	// Total is the number of refused chunks (can exceed len(Failed)).
	Total int
}

const maxReportedFailures = 20

func (e *BatchError) Error() string {
	if len(e.Failed) == 0 {
		return fmt.Sprintf("vectorstore: upsert %s: %d objects failed", e.Collection, e.Total)
	}
	f := e.Failed[0]
	return fmt.Sprintf("vectorstore: upsert %s: %d objects failed; first: document %q chunk %d: %s",
		e.Collection, e.Total, f.DocID, f.Ordinal, f.Message)
}

// CollectionInUseError is returned by [Store.DeleteCollection] when aliases still point at the
// collection; repoint or delete them first.
type CollectionInUseError struct {
	Collection string
	Aliases    []string
}

func (e *CollectionInUseError) Error() string {
	return fmt.Sprintf("vectorstore: delete collection %s: still the target of alias(es) %s",
		e.Collection, strings.Join(e.Aliases, ", "))
}

// ServerError is any other permanent failure answered by the server (a 4xx, a GraphQL error,
// an invalid request).
type ServerError struct {
	Op         string
	Collection string
	// Status is the HTTP status, or 0 for gRPC and GraphQL errors.
	Status int
	Err    error
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("vectorstore: %s %s: %v", e.Op, e.Collection, e.Err)
}

func (e *ServerError) Unwrap() error { return e.Err }

// IsRetryable reports whether err (or an error it wraps) is a [*RetryableError].
func IsRetryable(err error) bool {
	var r *RetryableError
	return errors.As(err, &r)
}

var (
	// hnsw/insert.go: "new node has a vector with length %v. Existing nodes have vectors with length %v"
	insertDimRe = regexp.MustCompile(`vector with length (\d+)\. Existing nodes have vectors with length (\d+)`)
	// distancer.ErrVectorLength and quantizers: "vector lengths don't match[: a vs b]"
	queryDimRe = regexp.MustCompile(`vector lengths don't match(?:: (\d+) vs (\d+))?`)
	// "could not find class X in schema", `class "X" not found in schema`, "collection not found",
	// and GraphQL's answer for an unknown class: `Cannot query field "X" on type "AggregateObjectsObj"`.
	notFoundRe = regexp.MustCompile(`could not find class|class "?[A-Za-z0-9_]+"? not found|collection not found|no such (class|collection)|alias .* not found|Cannot query field "[A-Za-z0-9_]+" on type "(Aggregate|Get)`)
)

// classify turns a client/server error into the package's typed errors. It never returns nil
// for a non-nil err.
func classify(op, collection string, err error) error {
	if err == nil {
		return nil
	}
	var (
		r  *RetryableError
		nf *CollectionNotFoundError
		de *DimensionError
		se *ServerError
	)
	if errors.As(err, &r) || errors.As(err, &nf) || errors.As(err, &de) || errors.As(err, &se) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("vectorstore: %s %s: %w", op, collection, err)
	}
	msg := err.Error()
	if m := insertDimRe.FindStringSubmatch(msg); m != nil {
		actual, _ := strconv.Atoi(m[1])
		expected, _ := strconv.Atoi(m[2])
		return &DimensionError{Op: op, Collection: collection, Expected: expected, Actual: actual, Ordinal: -1, Err: err}
	}
	if queryDimRe.MatchString(msg) {
		return &DimensionError{Op: op, Collection: collection, Ordinal: -1, Err: err}
	}
	if notFoundRe.MatchString(msg) {
		return &CollectionNotFoundError{Op: op, Collection: collection, Err: err}
	}
	if transient(err) {
		return &RetryableError{Op: op, Collection: collection, Err: err}
	}
	st := 0
	var wce *fault.WeaviateClientError
	if errors.As(err, &wce) {
		st = wce.StatusCode
		if st == http.StatusNotFound {
			return &CollectionNotFoundError{Op: op, Collection: collection, Err: err}
		}
	}
	return &ServerError{Op: op, Collection: collection, Status: st, Err: err}
}

// transient reports network failures, timeouts, 5xx/429 and the retryable gRPC codes.
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.OK {
		switch s.Code() {
		case codes.ResourceExhausted:
			// grpc-go's own refusal of a reply above the receive limit recurs on every try.
			return !strings.Contains(s.Message(), "message larger than max")
		case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted:
			return true
		case codes.Unknown, codes.Internal:
			return transientMessage(s.Message())
		}
		return false
	}
	var wce *fault.WeaviateClientError
	if errors.As(err, &wce) {
		if wce.StatusCode >= 500 || wce.StatusCode == http.StatusTooManyRequests {
			return true
		}
		if wce.StatusCode <= 0 && wce.DerivedFromError != nil {
			// No HTTP answer at all: connection refused/reset, DNS, timeout.
			return true
		}
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	return transientMessage(err.Error())
}

// transientMessage recognises transient conditions in per-object error texts and wrapped
// messages that lost their type.
func transientMessage(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"connection refused", "connection reset", "broken pipe", "deadline exceeded",
		"timeout", "too many requests", "unavailable", "eof", "shutting down", "not ready", "leader not found"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
