// Package monitoring holds the end-to-end tests of what a platform team monitors ragops with:
// the chart's PrometheusRule and Grafana dashboard, loaded into a real Prometheus server that
// scrapes a real manager.
//
// The manager is the `ragops manager` command (cmd.NewRoot, what main.go runs; the test
// binary runs itself as it, with the arguments of the chart's Deployment) against an envtest
// kube-apiserver and a real Weaviate. No kubelet runs there, so the tests play the worker
// Jobs: they write the chunks an embedder pod would write into Weaviate and mark the Jobs
// Complete or Failed, as test/packaging and the controllers' tests do, and the model server
// Deployment's readiness. A real model server (`ragops serve`, the same way) answers the
// workload's query load. Prometheus scrapes the manager's /metrics the way the chart's
// ServiceMonitor says (honorLabels, path, interval) and the model server's as a PodMonitor
// would, and evaluates the rendered PrometheusRule's groups as its rule file.
//
// The package has no non-test code. Its tests need prepared parts, found through environment
// variables; without them they skip, and with RAGOPS_REQUIRE_ALL=1 (CI) they fail naming
// the script that prepares them:
//
//   - RAGOPS_PROMETHEUS: the prometheus server, from hack/prepare.d/promtool.sh.
//   - KUBEBUILDER_ASSETS (default bin/): etcd and kube-apiserver, from hack/build-tools.sh.
//   - RAGOPS_WEAVIATE_BIN (default bin/weaviate-server): from hack/build-tools.sh weaviate.
//   - bin/helm: from hack/build-tools.sh helm.
//   - RAGOPS_MODEL_DIR and RAGOPS_ONNXRUNTIME_LIB: a model folder and ONNX Runtime, for the
//     model server (hack/prepare.d/embedder.sh, hack/provision-onnxruntime.sh).
package monitoring
