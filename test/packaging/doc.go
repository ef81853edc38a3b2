// Package packaging holds the tests of what ships: the Dockerfile (checked without a Docker
// engine), the kustomize configuration under config/ (rendered with the kustomize Go API and
// applied with server-side dry-run to a real kube-apiserver), the least privilege of the
// generated ClusterRole (the real `ragops manager` binary, impersonating its ServiceAccount,
// through a full reconcile of every kind), the manager's Prometheus endpoint, and the
// documentation (README.md as a front door; the relative links of README.md, BENCHMARKS.md
// and docs/).
//
// The package has no non-test code. Its tests need prepared parts, found through environment
// variables; without them they skip, and with RAGOPS_REQUIRE_ALL=1 (CI) they fail naming the
// script that prepares them:
//
//   - KUBEBUILDER_ASSETS (default bin/): etcd and kube-apiserver, from hack/build-tools.sh.
//   - RAGOPS_WEAVIATE_BIN (default bin/weaviate-server): from hack/build-tools.sh weaviate.
//   - RAGOPS_ONNXRUNTIME_LIB: the ONNX Runtime CPU library, from hack/provision-onnxruntime.sh.
//   - RAGOPS_MODEL_DIR: an exported model folder, from hack/export-model/export.sh.
//
// The tests build the ragops binary themselves (go build with cgo, as the Dockerfile does).
package packaging
