package vectorstore

import (
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"strings"

	pb "github.com/weaviate/weaviate/grpc/generated/protocol/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// Receive limit of a search reply. weaviate-go-client v5.7.3 dials gRPC without options
// (weaviate/connection/grpc.go, createClient), so its replies are capped at grpc-go's default
// 4 MiB: about 1,600 hits of 512-token Dutch chunk text, where the evaluator's retrieval
// loop asks for up to 10,000. Searches therefore go over the Store's own connection with a
// per-call limit of searchReplyBase plus searchHitBytes per requested hit.
const (
	// searchReplyBase is the room for a reply's envelope, and the floor (grpc-go's default).
	searchReplyBase = 4 << 20
	// searchHitBytes is the room per hit: the chunk text (a 65,536-character chunk, the
	// ChunkingStrategy maximum, is 64 KiB of ASCII), its other properties and metadata.
	searchHitBytes = 80 << 10
)

// searchRecvLimit returns the receive limit in bytes of a search for limit hits, at most
// math.MaxInt32 (grpc-go's bound).
func searchRecvLimit(limit int) int {
	return int(min(int64(searchReplyBase)+int64(limit)*searchHitBytes, math.MaxInt32))
}

// dialSearch returns a lazily connecting gRPC client of Weaviate's search service at host
// (host:port; without a port, 80, or 443 when secured). Secured dials TLS with tc; the
// https bridge (grpcTLSBridge) is a plain local address, so it is dialed unsecured.
func dialSearch(host string, secured bool, tc *tls.Config) (*grpc.ClientConn, error) {
	if !strings.Contains(host, ":") {
		if secured {
			host += ":443"
		} else {
			host += ":80"
		}
	}
	creds := insecure.NewCredentials()
	if secured {
		creds = credentials.NewTLS(tc)
	}
	conn, err := grpc.NewClient(host, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("vectorstore: gRPC client for %s: %w", host, err)
	}
	return conn, nil
}

// searchGRPC sends req over the Store's search connection with the Store's timeout, API key
// and a receive limit that fits req.Limit hits (searchRecvLimit).
func (s *Store) searchGRPC(ctx context.Context, req *pb.SearchRequest) (*pb.SearchReply, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if s.cfg.APIKey != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+s.cfg.APIKey)
	}
	return pb.NewWeaviateClient(s.search).Search(ctx, req, grpc.MaxCallRecvMsgSize(searchRecvLimit(int(req.Limit))))
}
