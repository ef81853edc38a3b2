package controllers

// The model server HTTP client: the manager's reads of a server's /meta.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// ModelServerClient reads what a model server reports about itself.
type ModelServerClient interface {
	// ModelHash returns the content hash of the model folder the server at endpoint (a base
	// URL) loaded, as its /meta reports it. Errors: the server cannot be reached or answers
	// other than 200 with JSON.
	ModelHash(ctx context.Context, endpoint string) (string, error)
}

// HTTPModelServerClient is the ModelServerClient of a manager: GET endpoint/meta with a
// 3-second deadline and a 1 MiB body limit. Client nil means http.DefaultClient.
type HTTPModelServerClient struct {
	Client *http.Client
}

// ModelHash implements ModelServerClient.
func (c HTTPModelServerClient) ModelHash(ctx context.Context, endpoint string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/meta", nil)
	if err != nil {
		return "", err
	}
	hc := c.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s/meta: %s", endpoint, resp.Status)
	}
	var m struct {
		ModelHash string `json:"modelHash"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&m); err != nil {
		return "", fmt.Errorf("GET %s/meta: %w", endpoint, err)
	}
	return m.ModelHash, nil
}

// modelHashCache keeps the model hash each model server reported, per endpoint, with the
// resourceVersion of its Deployment as the manager's cache held it then. A reading is reused
// while that Deployment has not changed (any change of its pods' readiness, as a restart
// with another model folder brings, moves the resourceVersion) and is younger than the
// reconciler's DriftInterval: the Indexes sharing one server read its /meta once per change,
// not once per reconcile each (issue 56). Only successful readings are kept. The zero value
// is ready to use; it is safe for concurrent reconciles.
type modelHashCache struct {
	m sync.Map // endpoint -> modelHashReading
}

type modelHashReading struct {
	version, hash string
	at            time.Time
}

// load returns the hash read from endpoint while its Deployment had resourceVersion version,
// when that reading is younger than ttl.
func (c *modelHashCache) load(endpoint, version string, ttl time.Duration, now time.Time) (string, bool) {
	v, ok := c.m.Load(endpoint)
	if !ok {
		return "", false
	}
	r := v.(modelHashReading)
	if r.version != version || now.Sub(r.at) >= ttl {
		return "", false
	}
	return r.hash, true
}

// store records hash, read from endpoint at now while its Deployment had resourceVersion
// version.
func (c *modelHashCache) store(endpoint, version, hash string, now time.Time) {
	c.m.Store(endpoint, modelHashReading{version: version, hash: hash, at: now})
}
