# ragops Makefile. `make help` lists the targets.
SHELL := /usr/bin/env bash
BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-12s %s\n", $$1, $$2}'

$(CONTROLLER_GEN): hack/tools/controllergen/go.mod
	hack/build-tools.sh controller-gen

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code for api/.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC under config/ (and their copies in charts/ragops/files).
	$(CONTROLLER_GEN) crd:allowDangerousTypes=true rbac:roleName=ragops-manager-role webhook paths=./api/... paths=./controllers/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	@# The Helm chart renders the same CRDs and ClusterRole (test/packaging compares them).
	rm -f charts/ragops/files/crds/*.yaml && cp config/crd/bases/*.yaml charts/ragops/files/crds/
	cp config/rbac/role.yaml charts/ragops/files/manager-role.yaml

.PHONY: tools
tools: ## Build the pinned control plane, etcd, controller-gen, Weaviate and Helm into bin/ (cached).
	hack/build-tools.sh all

.PHONY: build
build: ## Build bin/ragops.
	go build -ldflags "-X github.com/ragops/ragops/internal/version.Version=$(VERSION)" -o $(BIN)/ragops .

.PHONY: test
test: ## Run every test against real servers (prepares what they need first).
	hack/test.sh

.PHONY: lint
lint: ## gofmt, go vet, and a check that generated files are up to date.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	hack/verify-generated.sh

.PHONY: demo
demo: ## Run the main job end to end on a local cluster (SciFact, five strategies).
	hack/demo.sh up

.PHONY: demo-qmsum
demo-qmsum: ## The same on QMSum meetings (long transcripts: fixed, recursive and late chunking).
	RAGOPS_DEMO_DATASET=qmsum hack/demo.sh up

.PHONY: demo-legalnl
demo-legalnl: ## The same on Dutch law (legalqa-nl, mE5): eight strategies incl. heading-aware, dense/BM25/hybrid; a seeded 27-law subset unless RAGOPS_DEMO_DOCS=all.
	RAGOPS_DEMO_DATASET=legalqa-nl hack/demo.sh up

.PHONY: demo-experiment
demo-experiment: ## The archive's study as one Experiment on legalqa-nl (27-law subset): nine strategies x dense/hybrid, screening round, leaderboard and Pareto chart.
	RAGOPS_DEMO_DATASET=legalqa-nl \
		RAGOPS_DEMO_SAMPLES=config/samples/demo-legalnl/00-data.yaml,config/samples/demo-legalnl/10-strategies.yaml,config/samples/demo-experiment \
		RAGOPS_DEMO_DIR=.cache/demo-experiment hack/demo.sh up

.PHONY: demo-access
demo-access: ## Per-document access: one question (Dutch council motions, MiniLM) through the access endpoint as two personas and with a date range; fails on a leak.
	RAGOPS_DEMO_DATASET=council hack/demo.sh up

.PHONY: demo-models
demo-models: ## SciFact per model (e5-small-v2, its int8, bge-small-en-v1.5): fixed-507, sentence-128 and late, dense and hybrid (hours on 2 cores).
	RAGOPS_DEMO_MODELS=e5-small-v2,e5-small-v2-int8,bge-small-en-v1.5 RAGOPS_DEMO_SAMPLES=config/samples/demo-models \
		RAGOPS_DEMO_NAMESPACE=ragops-demo-models RAGOPS_DEMO_DIR=.cache/demo-models hack/demo.sh up

.PHONY: demo-qmsum-models
demo-qmsum-models: ## QMSum's 35 val meetings per model (e5-small-v2, its int8, bge-small-en-v1.5): fixed-256, recursive-256 and late, dense and hybrid.
	RAGOPS_DEMO_DATASET=qmsum RAGOPS_DEMO_DOCS=judged RAGOPS_DEMO_MODELS=e5-small-v2,e5-small-v2-int8,bge-small-en-v1.5 \
		RAGOPS_DEMO_SAMPLES=config/samples/demo-qmsum-models RAGOPS_DEMO_NAMESPACE=ragops-demo-qmsum-models \
		RAGOPS_DEMO_DIR=.cache/demo-qmsum-models hack/demo.sh up

.PHONY: demo-down
demo-down: ## Stop the demo's cluster, Weaviate and operator (any dataset).
	hack/demo.sh down
