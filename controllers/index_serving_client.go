package controllers

// The model server HTTP client: the manager's reads of a server's /meta.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// serverModelHash reads a model server's /meta (its modelHash); a variable so tests can point
// it at a server on the local host.
var serverModelHash = func(ctx context.Context, endpoint string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/meta", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
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
