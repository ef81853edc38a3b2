package controllers

// The model server HTTP client: the manager's reads of a server's /meta.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
