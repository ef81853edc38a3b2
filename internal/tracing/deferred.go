package tracing

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of deferred spans (StartDeferred, Keep).
const (
	keyDeferred = attribute.Key("ragops.deferred")
	keyWork     = attribute.Key("ragops.work")
)

// StartDeferred starts a span whose export waits for its end: it and the spans started under
// it in this process are exported only when work was done under it (Keep) or it ends with an
// error status; otherwise all are dropped. A reconcile's span is one: a reconcile that found
// nothing to do leaves no trace.
func StartDeferred(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return Start(ctx, name, append(opts, trace.WithAttributes(keyDeferred.Bool(true)))...)
}

// Keep records on ctx's span that it did work (what: "job created", "status"), so the deferred
// span above it is exported.
func Keep(ctx context.Context, what string) {
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		s.SetAttributes(keyWork.String(what))
	}
}

// deferring is a span processor that holds the spans of each deferred span's subtree until
// the deferred span ends, then passes them all to next or drops them all (StartDeferred).
type deferring struct {
	next sdktrace.SpanProcessor
	mu   sync.Mutex
	// group maps a held span (a deferred span or one under it) to its deferred span's group.
	group map[trace.SpanID]*heldGroup
}

type heldGroup struct {
	root  trace.SpanID
	ended []sdktrace.ReadOnlySpan
	keep  bool
}

func newDeferring(next sdktrace.SpanProcessor) *deferring {
	return &deferring{next: next, group: map[trace.SpanID]*heldGroup{}}
}

func (d *deferring) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	id := s.SpanContext().SpanID()
	d.mu.Lock()
	if g := d.group[trace.SpanContextFromContext(parent).SpanID()]; g != nil && trace.SpanContextFromContext(parent).IsValid() {
		d.group[id] = g
	} else {
		for _, a := range s.Attributes() {
			if a.Key == keyDeferred {
				d.group[id] = &heldGroup{root: id}
				break
			}
		}
	}
	d.mu.Unlock()
	d.next.OnStart(parent, s)
}

func (d *deferring) OnEnd(s sdktrace.ReadOnlySpan) {
	id := s.SpanContext().SpanID()
	d.mu.Lock()
	g := d.group[id]
	if g == nil {
		d.mu.Unlock()
		d.next.OnEnd(s)
		return
	}
	delete(d.group, id)
	g.ended = append(g.ended, s)
	if s.Status().Code == codes.Error {
		g.keep = true
	}
	for _, a := range s.Attributes() {
		if a.Key == keyWork {
			g.keep = true
		}
	}
	if id != g.root {
		d.mu.Unlock()
		return
	}
	// The deferred span ended: spans of its subtree still running are no longer held.
	for k, other := range d.group {
		if other == g {
			delete(d.group, k)
		}
	}
	d.mu.Unlock()
	if g.keep {
		for _, e := range g.ended {
			d.next.OnEnd(e)
		}
	}
}

func (d *deferring) Shutdown(ctx context.Context) error   { return d.next.Shutdown(ctx) }
func (d *deferring) ForceFlush(ctx context.Context) error { return d.next.ForceFlush(ctx) }
