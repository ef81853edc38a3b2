// Package serving is the model server of `ragops serve`: it embeds query and document text
// with a model folder through package embedder (the same code path as the build Jobs and the
// Evaluation Jobs: tokenizer, prefixes, pooling and normalisation of the folder's ragops.json)
// and speaks two wire protocols.
//
// Weaviate's text2vec-transformers inference API, as the pinned Weaviate v1.37.6 calls it
// (usecases/modulecomponents/clients/transformers/transformers.go, types vecRequest and
// vecRequestConfig; modules/text2vec-transformers/clients/startup.go and meta.go):
//
//	POST /vectors   {"text": "...", "dims": 0, "vector": null, "error": "",
//	                 "config": {"pooling_strategy": "masked_mean", "task_type": "query"|"passage",
//	                            "dimensions": 384}}
//	             -> 200 {"text": "...", "dims": 384, "dim": 384, "vector": [...]}
//	             -> 4xx/5xx {"error": "..."} (Weaviate parses the body as JSON on every status
//	                and reports "fail with status N: <error>")
//	GET  /meta              -> 200 model name, folder hash, dimensions, pooling, prefixes
//	GET  /.well-known/live  -> 204 while the process runs
//	GET  /.well-known/ready -> 204 once the model is loaded and warmed up, 503 before
//
// POST /query/vectors and POST /passage/vectors (specs.QueryPath, specs.PassagePath; a
// collection's queryInferenceUrl and passageInferenceUrl as ragops wires them) embed every
// text as a query or a passage whatever the request's task_type (a conflicting one is 400), so
// a request that lacks task_type cannot be taken for the other task. On /vectors,
// task_type "query" embeds with the folder's query prefix (embedder.Model.EmbedQueries),
// "passage" (Weaviate's name; "document" and an empty value mean the same) with the document
// prefix (embedder.Model.EmbedTexts). pooling_strategy and dimensions are checked against the
// folder: a collection configured for another pooling or width gets 400 instead of vectors of
// another space. "/vectors/" (the path of Weaviate's Python reference server) is served too.
//
// OpenAI's embeddings API, in the shape TEI, vLLM and Infinity serve it (so OpenAI embedding
// clients work with a base URL):
//
//	POST /v1/embeddings {"input": "text" | ["text", ...], "model": "<name>",
//	                     "encoding_format": "float"|"base64", "dimensions": 384,
//	                     "input_type": "query"|"passage"|"document"}
//	  -> 200 {"object": "list", "model": "<name>",
//	          "data": [{"object": "embedding", "index": 0, "embedding": [...] | "<base64>"}],
//	          "usage": {"prompt_tokens": N, "total_tokens": N}}
//	  -> 4xx/5xx {"error": {"message": "...", "type": "...", "code": "..."}}
//
// input_type (NVIDIA NIM's field; OpenAI has none) picks the prefix; it defaults to query,
// since documents are embedded by the build. model must be empty or the folder's model name
// (or its hash); another name is 404, so an app configured for another model fails loudly.
//
// Requests are tokenized on their own goroutines as they arrive, then queued and
// micro-batched: a free worker takes everything queued, up to Options.MaxBatchTexts texts and
// Options.MaxBatchTokens tokens, and runs it at once, so the requests that arrive while a
// batch runs make up the next batch and the model runs batches back to back under load. No
// timer holds a batch while the model is idle; only when the queue is empty and requests are
// received and being parsed and tokenized does a batch wait for them, at most
// Options.BatchWindow. The embedder pads each ONNX Runtime batch to its longest sequence.
// The queue holds at most
// Options.QueueSize texts; a request that does not fit is answered 429 with Retry-After at
// once. Options.WeaviateReserve of those places (a quarter by default) are open to Weaviate's
// paths only, so apps calling /vectors or /v1/embeddings cannot starve nearText queries. Bodies over Options.MaxRequestBytes are answered 413 naming the limit; malformed JSON,
// an empty text and unknown task types 400.
//
// Prometheus metrics (GET /metrics, client_golang, a registry per Server):
//
//	ragops_serve_request_duration_seconds{handler,code,method}  histogram
//	ragops_serve_batch_size                                     histogram, texts per inference batch
//	ragops_serve_batch_tokens                                   histogram, tokens per inference batch
//	ragops_serve_queue_depth                                    gauge, texts waiting for a batch
//	ragops_serve_rejected_total{reason}                         counter (queue_full|too_large|bad_request|wrong_model)
//	ragops_serve_texts_total{task}                              counter (query|document), texts embedded
//	ragops_serve_ready                                          gauge, 1 when ready
//
// plus the Go and process collectors (resident memory: process_resident_memory_bytes).
//
// Run's listener bounds reading a request (Config.ReadTimeout, 30 s; headers 10 s) and idle
// keep-alive connections (Config.IdleTimeout, 2 minutes).
//
// Run loads a folder, serves and drains on context cancellation (SIGTERM in `ragops serve`):
// readiness turns 503, the listener closes, queued and running requests complete, then the
// model is closed.
package serving
