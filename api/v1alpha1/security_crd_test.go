package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
)

// Every reference to a Corpus, ChunkingStrategy, Index, ConfigMap, Secret or PVC is refused at
// admission when it names another namespace (a namespace given in the reference, or a name
// that is not an object name, such as "other/x"), and the new security fields are checked:
// caBundle needs https and exactly one source, S3 identity excludes static keys and needs its
// webIdentity block.
func TestCrossNamespaceReferencesAndSecuritySpecsAreRefused(t *testing.T) {
	const cross = "cross-namespace references are not allowed"
	cases := []struct {
		name   string
		sample string
		edits  []mutation
		want   []string
	}{
		{"index corpusRef namespace", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.corpusRef.namespace", "other-team")},
			[]string{"spec.corpusRef.namespace", cross}},
		{"index strategyRef namespace", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.strategyRef.namespace", "other-team")},
			[]string{"spec.strategyRef.namespace", cross}},
		{"index corpusRef name with a slash", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.corpusRef.name", "other-team/raadsbesluiten")},
			[]string{"spec.corpusRef.name", "should match"}},
		{"index model pvc namespace", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.model.pvc.namespace", "other-team")},
			[]string{"spec.model.pvc.namespace", cross}},
		{"index weaviate api key secret namespace", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.weaviate.apiKeySecretRef.namespace", "other-team")},
			[]string{"spec.weaviate.apiKeySecretRef.namespace", cross}},
		{"index gate dataset configMap namespace", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.rollout.gate.evaluation.dataset.configMap.namespace", "other-team")},
			[]string{"spec.rollout.gate.evaluation.dataset.configMap.namespace", cross}},
		{"corpus s3 secretRef namespace", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.s3.secretRef.namespace", "other-team")},
			[]string{"spec.s3.secretRef.namespace", cross}},
		{"corpus configMap namespace", "ragops_v1alpha1_corpus.yaml",
			[]mutation{del("spec.s3"), set("spec.configMap", map[string]any{"name": "docs", "namespace": "other-team"})},
			[]string{"spec.configMap.namespace", cross}},
		{"corpus pvc namespace", "ragops_v1alpha1_corpus.yaml",
			[]mutation{del("spec.s3"), set("spec.pvc", map[string]any{"claimName": "docs", "namespace": "other-team"})},
			[]string{"spec.pvc.namespace", cross}},
		{"corpus http headers secret namespace", "ragops_v1alpha1_corpus.yaml",
			[]mutation{del("spec.s3"), set("spec.http", map[string]any{"url": "https://example.org/a.tar", "headersSecretRef": map[string]any{"name": "h", "namespace": "other-team"}})},
			[]string{"spec.http.headersSecretRef.namespace", cross}},
		{"corpus git secret namespace", "ragops_v1alpha1_corpus.yaml",
			[]mutation{del("spec.s3"), set("spec.git", map[string]any{"url": "https://example.org/r.git", "secretRef": map[string]any{"name": "g", "namespace": "other-team"}})},
			[]string{"spec.git.secretRef.namespace", cross}},
		{"evaluation indexRef namespace", "ragops_v1alpha1_evaluation.yaml",
			[]mutation{set("spec.indexRef.namespace", "other-team")},
			[]string{"spec.indexRef.namespace", cross}},
		{"evaluation rerank model pvc namespace", "ragops_v1alpha1_evaluation.yaml",
			[]mutation{set("spec.rerank.model.pvc.namespace", "other-team")},
			[]string{"spec.rerank.model.pvc.namespace", cross}},
		{"caBundle on an http url", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.weaviate.caBundle", map[string]any{"configMapKeyRef": map[string]any{"name": "ca", "key": "ca.crt"}})},
			[]string{"spec.weaviate.caBundle", "caBundle needs an https:// url"}},
		{"caBundle with two sources", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.weaviate.url", "https://weaviate.weaviate.svc:8443"), set("spec.weaviate.caBundle", map[string]any{
				"configMapKeyRef": map[string]any{"name": "ca", "key": "ca.crt"}, "secretKeyRef": map[string]any{"name": "ca", "key": "ca.crt"}})},
			[]string{"spec.weaviate.caBundle", "exactly one of configMapKeyRef and secretKeyRef"}},
		{"caBundle secret in another namespace", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.weaviate.url", "https://weaviate.weaviate.svc:8443"), set("spec.weaviate.caBundle", map[string]any{
				"secretKeyRef": map[string]any{"name": "ca", "key": "ca.crt", "namespace": "cert-manager"}})},
			[]string{"spec.weaviate.caBundle.secretKeyRef.namespace", cross}},
		{"s3 identity and static keys", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.s3.identity", map[string]any{"type": "IAM"})},
			[]string{"spec.s3.identity", "set secretRef or identity, not both"}},
		{"s3 web identity without its block", "ragops_v1alpha1_corpus.yaml",
			[]mutation{del("spec.s3.secretRef"), set("spec.s3.identity", map[string]any{"type": "WebIdentity"})},
			[]string{"spec.s3.identity.webIdentity", "webIdentity is required when type is WebIdentity"}},
		{"s3 web identity token lifetime too short", "ragops_v1alpha1_corpus.yaml",
			[]mutation{del("spec.s3.secretRef"), set("spec.s3.identity", map[string]any{"type": "WebIdentity",
				"webIdentity": map[string]any{"stsEndpoint": "https://sts.amazonaws.com", "expirationSeconds": int64(60)}})},
			[]string{"spec.s3.identity.webIdentity.expirationSeconds", "greater than or equal to 600"}},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := loadSample(t, tc.sample)
			ensureNamespace(t, u.GetNamespace())
			u.SetName("sec-" + strings.ReplaceAll(tc.name, " ", "-"))
			for _, e := range tc.edits {
				e(u.Object)
			}
			requireRejected(t, ctx, u, tc.want)
		})
	}

	// The same references without a namespace, and the identity and CA settings done right,
	// are accepted.
	ok := []struct {
		sample string
		edits  []mutation
	}{
		{"ragops_v1alpha1_corpus.yaml", []mutation{del("spec.s3.secretRef"), set("spec.s3.identity", map[string]any{"type": "WebIdentity",
			"webIdentity": map[string]any{"stsEndpoint": "https://sts.eu-west-1.amazonaws.com", "roleARN": "arn:aws:iam::123456789012:role/ragops"}})}},
		{"ragops_v1alpha1_corpus.yaml", []mutation{del("spec.s3.secretRef"), set("spec.s3.identity", map[string]any{"type": "IAM"})}},
		{"ragops_v1alpha1_index.yaml", []mutation{set("spec.weaviate.url", "https://weaviate.weaviate.svc:8443"),
			set("spec.weaviate.caBundle", map[string]any{"configMapKeyRef": map[string]any{"name": "weaviate-ca", "key": "ca.crt"}})}},
	}
	for i, tc := range ok {
		u := loadSample(t, tc.sample)
		u.SetName("sec-ok-" + string(rune('a'+i)))
		for _, e := range tc.edits {
			e(u.Object)
		}
		if err := env.Client.Create(ctx, u); err != nil {
			t.Errorf("%s %d rejected: %v", tc.sample, i, err)
			continue
		}
		_ = env.Client.Delete(ctx, u)
	}
}
