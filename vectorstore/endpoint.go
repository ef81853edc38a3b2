package vectorstore

import (
	"fmt"
	"net"
	"net/url"
)

// EndpointConfig returns the Config for a Weaviate endpoint given as an HTTP URL
// (http(s)://host[:port]) and an optional gRPC host:port; the gRPC address defaults to the
// URL's host with port 50051, the HTTP port to 80 or 443.
//
// Errors: the URL does not parse, has no host, or a scheme other than http and https.
func EndpointConfig(rawURL, grpcAddress, apiKey string) (Config, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return Config{}, fmt.Errorf("weaviate url %q: want http(s)://host[:port]", rawURL)
	}
	httpHost := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		httpHost = net.JoinHostPort(u.Hostname(), port)
	}
	if grpcAddress == "" {
		grpcAddress = net.JoinHostPort(u.Hostname(), "50051")
	}
	return Config{HTTPHost: httpHost, GRPCHost: grpcAddress, Scheme: u.Scheme, APIKey: apiKey}, nil
}
