package endpoint

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/ragops/ragops/query"
	"github.com/ragops/ragops/vectorstore"
)

// SearchPath is the search route: POST /v1/indexes/{index}/search with a JSON Request and a
// bearer token; the answer is a JSON Response.
const SearchPath = "/v1/indexes/{index}/search"

// Response is a search's answer.
type Response struct {
	// Results are the hits, best first.
	Results []Result `json:"results"`
}

// Result is one hit (query.Result: document, span, text, score) and, when asked, its
// neighbouring chunks (Request.Neighbours) or its section (Request.Section) in ordinal order.
type Result = query.Expanded

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Error string `json:"error"`
}

// Server is the HTTP endpoint.
type Server struct {
	Authorizer *Authorizer
	Resolver   Resolver
	Searcher   Searcher
	// Log receives one line per refused or failed request; nil discards.
	Log *slog.Logger
}

// Handler returns the endpoint's routes: SearchPath, and /healthz (no token).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+SearchPath, s.search)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return mux
}

// search authenticates first (nothing about the Index is told to a caller without an
// identity), then resolves the Index, then searches with the grant.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tok, err := bearer(r)
	if err != nil {
		s.fail(ctx, w, err)
		return
	}
	g, err := s.Authorizer.Authorize(ctx, tok)
	if err != nil {
		s.fail(ctx, w, err)
		return
	}
	var req Request
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.fail(ctx, w, &BadRequestError{Err: err})
		return
	}
	t, err := s.Resolver.Resolve(ctx, r.PathValue("index"))
	if err != nil {
		s.fail(ctx, w, err)
		return
	}
	hits, err := s.Searcher.Search(ctx, g, t, req)
	if err != nil {
		s.fail(ctx, w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	res := Response{Results: make([]Result, len(hits))}
	for i, h := range hits {
		res.Results[i].Result = query.Results([]vectorstore.Hit{h.Hit})[0]
		res.Results[i].Rank = i + 1
		if h.Neighbours != nil {
			res.Results[i].Neighbours = query.Results(h.Neighbours)
		}
		if h.Section != nil {
			res.Results[i].Section = query.Results(h.Section)
		}
	}
	_ = json.NewEncoder(w).Encode(res)
}

// Status returns the HTTP status of an error: 401 unauthenticated, 400 bad request, 404 an
// Index not served, 503 an authenticator or group resolver that failed, 500 anything else
// (a filter that could not be built, a search that failed).
func Status(err error) int {
	var ua *UnauthenticatedError
	var br *BadRequestError
	var ns *NotServedError
	var ge *GroupError
	var be *BackendError
	switch {
	case errors.As(err, &ua):
		return http.StatusUnauthorized
	case errors.As(err, &br):
		return http.StatusBadRequest
	case errors.As(err, &ns):
		return http.StatusNotFound
	case errors.As(err, &ge), errors.As(err, &be):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func (s *Server) fail(ctx context.Context, w http.ResponseWriter, err error) {
	code := Status(err)
	if s.Log != nil {
		s.Log.InfoContext(ctx, "request refused", "status", code, "error", err)
	}
	msg := err.Error()
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ragops"`)
	}
	if code >= 500 {
		// Details stay in the log: a failing backend's message is not the caller's business.
		msg = http.StatusText(code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(ErrorResponse{Error: msg})
}
