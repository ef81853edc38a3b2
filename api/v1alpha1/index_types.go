package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IndexSpec binds a Corpus, a ChunkingStrategy and an embedding model to a Weaviate target.
// +kubebuilder:validation:XValidation:rule="!has(self.compression) || !has(self.vectorIndex) || self.vectorIndex.type != 'flat' || self.compression.type in ['None', 'BQ', 'RQ']",fieldPath=".compression.type",reason=FieldValueForbidden,message="a flat vector index supports compression None, BQ or RQ only (PQ and SQ need hnsw)"
// +kubebuilder:validation:XValidation:rule="!has(self.compression) || !has(self.compression.rescoreLimit) || self.compression.type != 'BQ' || (has(self.vectorIndex) && self.vectorIndex.type == 'flat')",fieldPath=".compression.rescoreLimit",reason=FieldValueForbidden,message="BQ takes rescoreLimit on a flat vector index only"
type IndexSpec struct {
	// CorpusRef names the Corpus to index. Immutable: the revision hash leaves the corpus out
	// (its content changes are incremental syncs), so another Corpus under the same revision
	// would mix two corpora in the served collection with no gate; index it with a new Index.
	// +kubebuilder:validation:XValidation:rule="self.name == oldSelf.name",message="spec.corpusRef.name is immutable: create a new Index for another Corpus (its revisions are built and gated on their own)"
	CorpusRef LocalObjectReference `json:"corpusRef"`
	// StrategyRef names the ChunkingStrategy that cuts the documents.
	StrategyRef LocalObjectReference `json:"strategyRef"`
	// Model is the embedding model.
	Model ModelSpec `json:"model"`
	// Embedder configures the embedding Jobs.
	// +optional
	// +kubebuilder:default={device: "cpu", shards: 1, threads: 1}
	Embedder EmbedderSpec `json:"embedder,omitempty"`
	// Weaviate is where vectors are written. Its url is immutable: the revisions' collections
	// and the alias live in that cluster, and cleanup and pruning reach them there; to move
	// an Index, create one on the new cluster and delete the old one.
	// +kubebuilder:validation:XValidation:rule="self.url == oldSelf.url",message="spec.weaviate.url is immutable: the revisions' collections live in that cluster; create a new Index on the new cluster and delete this one"
	Weaviate WeaviateSpec `json:"weaviate"`
	// VectorIndex configures the collection's vector index.
	// +optional
	// +kubebuilder:default={type: "hnsw", distance: "cosine", efConstruction: 128, maxConnections: 32}
	VectorIndex VectorIndexSpec `json:"vectorIndex,omitempty"`
	// Replication keeps copies of each shard on several Weaviate nodes and sets the
	// consistency level of the embedder's writes and the Evaluations' reads. The factor and
	// asyncEnabled are part of the revision.
	// +optional
	Replication *ReplicationSpec `json:"replication,omitempty"`
	// Sharding splits the collection over several Weaviate nodes; part of the revision.
	// +optional
	Sharding *ShardingSpec `json:"sharding,omitempty"`
	// Compression quantizes the vectors the index searches (less memory, some recall);
	// part of the revision.
	// +optional
	Compression *CompressionSpec `json:"compression,omitempty"`
	// Sample builds the Index on a seeded subset of its Corpus instead of all of it (an
	// Experiment's screening round, a quick look at a large corpus); part of the revision.
	// +optional
	Sample *DocumentSample `json:"sample,omitempty"`
	// Rollout says when a newly built revision takes the alias.
	// +optional
	// +kubebuilder:default={policy: "Immediate", revisionHistoryLimit: 3}
	Rollout RolloutSpec `json:"rollout,omitempty"`
	// Suspend stops new builds; the active revision keeps serving.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// Serving runs the model server (ragops serve) that embeds query text for the revisions'
	// collections, so apps query through the alias with no model of their own.
	// +optional
	// +kubebuilder:default={enabled: true, replicas: 1, device: "cpu"}
	Serving ServingSpec `json:"serving,omitempty"`
}

// DocumentSample is a seeded subset of a corpus: every document a dataset judges, plus each
// other document with probability Fraction. A document is in or out by a hash of (seed, its
// ID) alone, so every shard, build and Index with the same sample draws the same documents,
// and a larger fraction keeps a superset.
type DocumentSample struct {
	// Fraction of the unjudged documents kept, in (0, 1].
	// +kubebuilder:validation:XValidation:rule="self > 0.0 && self <= 1.0",message="fraction must be in (0, 1]"
	Fraction float64 `json:"fraction"`
	// Seed of the draw.
	// +optional
	// +kubebuilder:default=1
	Seed int64 `json:"seed,omitempty"`
	// Judged keeps every document the dataset's qrels split names (corpus-id column), so
	// that an Evaluation on this dataset finds all its relevant documents.
	// +optional
	Judged *DatasetSource `json:"judged,omitempty"`
}

// ServingSpec configures the model servers of an Index's revisions: one Deployment and
// Service per (model folder, precision) in the Index's namespace, shared by every revision
// and Index that uses it, so a collection's model server URL never changes. Where Indexes
// sharing a server ask for another device, replicas, resources or scheduling, the oldest
// Index's settings apply and the others' ServingSettingsApplied condition says so; a
// precision override applies only when every Index sharing the server asks it. A change
// updates the Deployment in place; replicas a HorizontalPodAutoscaler sets are kept.
type ServingSpec struct {
	// Enabled runs model servers for the kept revisions; false builds and serves as without
	// them (apps embed their queries themselves).
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
	// Replicas of each model server Deployment; above 1 a PodDisruptionBudget keeps one
	// replica up through voluntary disruptions.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Replicas int32 `json:"replicas,omitempty"`
	// Device runs the model server on the CPU or an NVIDIA GPU (nvidia.com/gpu: 1 per pod).
	// +optional
	// +kubebuilder:default=cpu
	Device Device `json:"device,omitempty"`
	// Precision of the served model; empty serves each revision in the precision it was
	// embedded in (fp16 and fp32 vectors differ by cosine < 0.001).
	// +optional
	Precision Precision `json:"precision,omitempty"`
	// Resources of the model server container; unset CPU and memory requests default to
	// 500m and 512Mi (a CPU request is needed by a HorizontalPodAutoscaler).
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// NodeSelector of the model server pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations of the model server pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// ServingEnabled reports whether spec.serving.enabled is true or unset.
func (s ServingSpec) ServingEnabled() bool { return s.Enabled == nil || *s.Enabled }

// ConditionServingReady is an Index condition, informational like UnderReplicated (not part
// of Ready): True when the model server of the revision behind the alias (or of the desired
// revision while none serves) has ready replicas and serves the revision's model, and
// Weaviate has the text2vec-transformers module to call it (else False with reason
// TransformersModuleMissing, naming what to set).
const ConditionServingReady = "ServingReady"

// ConditionServingSettingsApplied is an Index condition, informational: True when every model
// server of the Index runs its spec.serving settings; False (reason SharedServerSettings) when
// a server it shares with older Indexes runs their replicas, device, resources or placement,
// or not its precision override, naming which.
const ConditionServingSettingsApplied = "ServingSettingsApplied"

// ConditionWeaviateReader is an Index condition, informational, for an Index whose Corpus has
// spec.access: True (reason Provisioned) when the operator provisioned a Weaviate RBAC role
// that reads only this Index's collections and alias and a database user holding it, whose
// key the access endpoint uses (Secret <index>-weaviate-reader); False with reason
// RBACNotEnforced when Weaviate has no RBAC (any client that reaches it reads every
// collection: only the NetworkPolicy keeps direct reads out), or ProvisioningFailed naming
// the error (the key that provisions must manage roles and users; docs/security.md).
const ConditionWeaviateReader = "WeaviateReaderProvisioned"

// ServingStatus is the model server of the revision behind the alias (of the desired revision
// while none serves): where apps that embed through the OpenAI embeddings API send their
// queries, and what they get.
type ServingStatus struct {
	// Endpoint is the model server's base URL inside the cluster, e.g.
	// http://ragops-serve-1a2b3c4d5e.docs.svc:8080.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Deployment names the model server's Deployment.
	// +optional
	Deployment string `json:"deployment,omitempty"`
	// Revision is the revision the endpoint serves.
	// +optional
	Revision string `json:"revision,omitempty"`
	// ReadyReplicas of the Deployment.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// ModelHash is the content hash (embedder.FolderHash, "sha256:...") of the model folder
	// the server loaded, as its /meta reports it; empty until it was read.
	// +optional
	ModelHash string `json:"modelHash,omitempty"`
}

// ModelSpec names an embedding (or reranking) model folder: model.onnx, tokenizer.json and
// ragops-model.json.
// +kubebuilder:validation:XValidation:rule="[has(self.pvc), has(self.http), has(self.imagePath)].filter(x, x).size() == 1",message="exactly one model source must be set: pvc, http or imagePath"
type ModelSpec struct {
	// Name identifies the model, e.g. all-minilm-l6-v2; part of the revision hash.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`
	// PVC holds the model folder.
	// +optional
	PVC *PVCSource `json:"pvc,omitempty"`
	// HTTP fetches the model folder as an archive in an init step; sha256 is required.
	// +optional
	// +kubebuilder:validation:XValidation:rule="has(self.sha256)",message="http model sources need sha256"
	HTTP *HTTPSource `json:"http,omitempty"`
	// ImagePath is a folder inside the worker image that holds the model.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="imagePath must be absolute"
	ImagePath string `json:"imagePath,omitempty"`
}

// Device is where the model runs.
// +kubebuilder:validation:Enum=cpu;cuda
type Device string

// Devices.
const (
	DeviceCPU  Device = "cpu"
	DeviceCUDA Device = "cuda"
)

// Precision is the numeric format the embedding model runs in.
// +kubebuilder:validation:Enum=fp32;fp16
type Precision string

// Precisions.
const (
	// PrecisionFP32 runs the model folder's model.onnx.
	PrecisionFP32 Precision = "fp32"
	// PrecisionFP16 runs the folder's half-precision variant (ragops.json "precisions",
	// written by hack/export-model/fp16.py): fused attention, fp16 weights and activations,
	// for the CUDA execution provider's tensor cores.
	PrecisionFP16 Precision = "fp16"
)

// EmbedderSpec configures the embedding Jobs.
type EmbedderSpec struct {
	// Device runs the model on the CPU or an NVIDIA GPU (requests nvidia.com/gpu: 1 per pod).
	// +optional
	// +kubebuilder:default=cpu
	Device Device `json:"device,omitempty"`
	// Precision selects the model's fp32 graph or its fp16 variant. fp16 embeddings differ
	// from fp32 ones by cosine < 0.001, so a change builds a new revision. A model folder
	// without the variant fails the build with a message naming the file to export.
	// +optional
	// +kubebuilder:default=fp32
	Precision Precision `json:"precision,omitempty"`
	// AllowCPUFallback lets a cuda build run on the CPU when no CUDA provider loads.
	// +optional
	AllowCPUFallback bool `json:"allowCPUFallback,omitempty"`
	// Shards is the number of pods of the Indexed Job (completions = parallelism); pod i
	// embeds the documents whose hash falls in shard i.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Shards int32 `json:"shards,omitempty"`
	// Threads is ONNX Runtime's intra-op thread count per pod.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	Threads int32 `json:"threads,omitempty"`
	// BatchTokens is the token budget of one inference batch (padding included). Unset, the
	// embedder picks it per device: the model's positions (at least 512) on cpu, where small
	// batches measured fastest, and 8192 on cuda. Indexes created while the default was
	// 8192 keep that value until it is changed; it is not part of the revision, so changing
	// it re-embeds nothing.
	// +optional
	// +kubebuilder:validation:Minimum=512
	// +kubebuilder:validation:Maximum=1048576
	BatchTokens int32 `json:"batchTokens,omitempty"`
	// Template holds image, resources and scheduling of the embedder pods.
	// +optional
	Template JobTemplate `json:"template,omitempty"`
}

// WeaviateSpec is a Weaviate endpoint.
// +kubebuilder:validation:XValidation:rule="!has(self.caBundle) || self.url.startsWith('https://')",fieldPath=".caBundle",reason=FieldValueForbidden,message="caBundle needs an https:// url"
type WeaviateSpec struct {
	// URL of Weaviate's HTTP API, e.g. http://weaviate.weaviate:8080.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url"`
	// GRPCAddress is host:port of Weaviate's gRPC API; empty means the URL's host, port 50051.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	GRPCAddress string `json:"grpcAddress,omitempty"`
	// APIKeySecretRef names the Secret key holding the API key.
	// +optional
	APIKeySecretRef *SecretKeySelector `json:"apiKeySecretRef,omitempty"`
	// CABundle names the PEM CA certificates that sign Weaviate's serving certificate (an
	// https:// url), trusted instead of the system roots for both HTTP and gRPC. The manager
	// reads it; worker pods mount it read-only.
	// +optional
	CABundle *CABundleSource `json:"caBundle,omitempty"`
}

// VectorIndexType is Weaviate's vector index type.
// +kubebuilder:validation:Enum=hnsw;flat
type VectorIndexType string

// VectorIndexSpec configures a revision collection's vector index.
type VectorIndexSpec struct {
	// Type hnsw (approximate, fast queries) or flat (exact, fast imports).
	// +optional
	// +kubebuilder:default=hnsw
	Type VectorIndexType `json:"type,omitempty"`
	// Distance metric.
	// +optional
	// +kubebuilder:default=cosine
	// +kubebuilder:validation:Enum=cosine;dot;l2-squared
	Distance string `json:"distance,omitempty"`
	// EfConstruction of HNSW.
	// +optional
	// +kubebuilder:default=128
	// +kubebuilder:validation:Minimum=4
	// +kubebuilder:validation:Maximum=4096
	EfConstruction int32 `json:"efConstruction,omitempty"`
	// MaxConnections of HNSW.
	// +optional
	// +kubebuilder:default=32
	// +kubebuilder:validation:Minimum=4
	// +kubebuilder:validation:Maximum=2048
	MaxConnections int32 `json:"maxConnections,omitempty"`
	// Ef of HNSW at query time; 0 means Weaviate's dynamic ef.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	Ef int32 `json:"ef,omitempty"`
}

// ConsistencyLevel is how many replicas of a shard must acknowledge a write or answer a read:
// ONE, QUORUM (a majority, factor/2 + 1) or ALL.
// +kubebuilder:validation:Enum=ONE;QUORUM;ALL
type ConsistencyLevel string

// Consistency levels.
const (
	ConsistencyOne    ConsistencyLevel = "ONE"
	ConsistencyQuorum ConsistencyLevel = "QUORUM"
	ConsistencyAll    ConsistencyLevel = "ALL"
)

// ReplicationSpec is the replication of a revision collection (Weaviate replication with
// tunable consistency). With factor 3 and QUORUM writes and reads, one node can be lost without
// failing a build or an Evaluation, and every read sees every acknowledged write.
type ReplicationSpec struct {
	// Factor is the number of copies of each shard, each on another node; at most the number
	// of Weaviate nodes (collection creation fails otherwise). Part of the revision.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=15
	Factor int32 `json:"factor,omitempty"`
	// AsyncEnabled turns on asynchronous replication: replicas compare hash trees in the
	// background and repair objects one of them missed, e.g. while its node was down. Part of
	// the revision.
	// +optional
	AsyncEnabled bool `json:"asyncEnabled,omitempty"`
	// WriteConsistency of the embedder's writes and deletes.
	// +optional
	// +kubebuilder:default=QUORUM
	WriteConsistency ConsistencyLevel `json:"writeConsistency,omitempty"`
	// ReadConsistency of Evaluation searches.
	// +optional
	// +kubebuilder:default=QUORUM
	ReadConsistency ConsistencyLevel `json:"readConsistency,omitempty"`
}

// ShardingSpec is the sharding of a revision collection.
type ShardingSpec struct {
	// DesiredCount is the number of shards (each held by factor nodes); without sharding,
	// Weaviate makes one shard per node.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	DesiredCount int32 `json:"desiredCount"`
}

// CompressionType is a vector quantizer of Weaviate 1.37.
// +kubebuilder:validation:Enum=None;PQ;BQ;SQ;RQ
type CompressionType string

// Compression types.
const (
	// CompressionNone keeps float32 vectors (4 bytes per dimension).
	CompressionNone CompressionType = "None"
	// CompressionPQ is product quantization (Jégou et al. 2011): one byte per segment after
	// training on trainingLimit vectors per shard; hnsw only.
	CompressionPQ CompressionType = "PQ"
	// CompressionBQ is binary quantization: one bit per dimension.
	CompressionBQ CompressionType = "BQ"
	// CompressionSQ is scalar quantization: one byte per dimension after training on
	// trainingLimit vectors per shard; hnsw only.
	CompressionSQ CompressionType = "SQ"
	// CompressionRQ is rotational quantization: a random rotation, then bits (8 or 1) per
	// dimension; no training.
	CompressionRQ CompressionType = "RQ"
)

// CompressionSpec quantizes a revision collection's vectors. Unset numbers take Weaviate's
// defaults (RQ 8 bits, PQ segments from the dimensions, training limit 100,000).
// +kubebuilder:validation:XValidation:rule="!has(self.bits) || self.type == 'RQ'",fieldPath=".bits",reason=FieldValueForbidden,message="bits applies to RQ only"
// +kubebuilder:validation:XValidation:rule="!has(self.segments) || self.type == 'PQ'",fieldPath=".segments",reason=FieldValueForbidden,message="segments applies to PQ only"
// +kubebuilder:validation:XValidation:rule="!has(self.trainingLimit) || self.type in ['PQ', 'SQ']",fieldPath=".trainingLimit",reason=FieldValueForbidden,message="trainingLimit applies to PQ and SQ only"
// +kubebuilder:validation:XValidation:rule="!has(self.rescoreLimit) || self.type in ['SQ', 'RQ', 'BQ']",fieldPath=".rescoreLimit",reason=FieldValueForbidden,message="rescoreLimit applies to SQ, RQ and BQ (flat) only"
type CompressionSpec struct {
	// Type None, PQ, BQ, SQ or RQ.
	// +optional
	// +kubebuilder:default=None
	Type CompressionType `json:"type,omitempty"`
	// Bits per dimension of RQ: 8 (4x smaller than float32) or 1 (32x smaller).
	// +optional
	// +kubebuilder:validation:Enum=1;8
	Bits int32 `json:"bits,omitempty"`
	// Segments of PQ: one byte each; must divide the model's dimensions.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	Segments int32 `json:"segments,omitempty"`
	// TrainingLimit is how many vectors per shard PQ or SQ collect before training and
	// compressing; vectors stay uncompressed until then.
	// +optional
	// +kubebuilder:validation:Minimum=1000
	// +kubebuilder:validation:Maximum=10000000
	TrainingLimit int32 `json:"trainingLimit,omitempty"`
	// RescoreLimit is how many candidates found with compressed vectors are re-ranked with
	// the uncompressed ones (more is closer to uncompressed recall, slower).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	RescoreLimit int32 `json:"rescoreLimit,omitempty"`
}

// ConditionUnderReplicated is an Index condition, True (abnormal) while a shard of the active
// revision's collection has fewer ready replicas than the replication factor (a node is down
// or has not rejoined); reason ShardsUnderReplicated, or ReplicasHealthy when False.
const ConditionUnderReplicated = "UnderReplicated"

// ReplicaHealth is the replication state of one shard of the active revision's collection.
type ReplicaHealth struct {
	// Shard is Weaviate's shard name.
	Shard string `json:"shard"`
	// ReadyReplicas is the number of live nodes that hold a loaded replica.
	ReadyReplicas int32 `json:"readyReplicas"`
	// Nodes are those nodes.
	// +optional
	// +listType=set
	Nodes []string `json:"nodes,omitempty"`
}

// ReplicationStatus is the replication and shard health of the active revision's collection,
// read from Weaviate's nodes API.
type ReplicationStatus struct {
	// Factor is the replication factor wanted.
	Factor int32 `json:"factor"`
	// Shards is the number of shards of the collection.
	Shards int32 `json:"shards"`
	// UnderReplicatedShards counts shards with fewer ready replicas than the factor, those
	// with none included.
	UnderReplicatedShards int32 `json:"underReplicatedShards"`
	// Replicas lists the shards that have a ready replica.
	// +optional
	// +listType=map
	// +listMapKey=shard
	Replicas []ReplicaHealth `json:"replicas,omitempty"`
	// UpdateTime is when the nodes API was read.
	// +optional
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`
}

// RolloutPolicy says when a built revision takes the alias.
// +kubebuilder:validation:Enum=Immediate;EvaluationGated
type RolloutPolicy string

// Rollout policies.
const (
	// RolloutImmediate moves the alias as soon as a revision is built.
	RolloutImmediate RolloutPolicy = "Immediate"
	// RolloutEvaluationGated moves the alias only when the gate's Evaluation passes.
	RolloutEvaluationGated RolloutPolicy = "EvaluationGated"
)

// RolloutSpec is the blue/green rollout of revisions.
// +kubebuilder:validation:XValidation:rule="self.policy != 'EvaluationGated' || has(self.gate)",fieldPath=".gate",reason=FieldValueRequired,message="gate is required when policy is EvaluationGated"
type RolloutSpec struct {
	// Policy Immediate or EvaluationGated.
	// +optional
	// +kubebuilder:default=Immediate
	Policy RolloutPolicy `json:"policy,omitempty"`
	// Gate is the Evaluation a candidate revision must pass.
	// +optional
	Gate *RolloutGate `json:"gate,omitempty"`
	// RevisionHistoryLimit is how many revisions (the active one included) keep their
	// collections, so a revert moves the alias back without re-embedding.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	RevisionHistoryLimit int32 `json:"revisionHistoryLimit,omitempty"`
}

// RolloutGate evaluates a candidate revision before it takes the alias. The controller
// creates an Evaluation named <index>-gate-<revision> with these parameters.
// +kubebuilder:validation:XValidation:rule="has(self.minRecall) || has(self.maxRegression)",message="a gate needs minRecall, maxRegression or both"
type RolloutGate struct {
	// Evaluation parameters of the gating Evaluation.
	Evaluation EvaluationParameters `json:"evaluation"`
	// MinRecall is the lowest recall@10 the candidate may have, in [0, 1].
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= 0.0 && self <= 1.0",message="minRecall must be between 0 and 1"
	MinRecall *float64 `json:"minRecall,omitempty"`
	// MaxRegression is how far the candidate's recall@10 may fall below the active
	// revision's, in [0, 1] (absolute). With the per-query results of both gating
	// Evaluations it is a non-inferiority test at confidence (see Confidence); without those
	// of the active revision, a comparison of the two means.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= 0.0 && self <= 1.0",message="maxRegression must be between 0 and 1"
	MaxRegression *float64 `json:"maxRegression,omitempty"`
	// Confidence of the maxRegression test (default 0.95): the candidate passes when the
	// lower bound of this two-sided interval of its paired recall@10 difference from the
	// active revision, over the gate dataset's queries, is at or above -maxRegression (a tie,
	// within 1e-9, passes: maxRegression 0 passes an identical candidate).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= 0.5 && self <= 0.999",message="confidence must be between 0.5 and 0.999"
	Confidence *float64 `json:"confidence,omitempty"`
}

// RevisionPhase is the life-cycle phase of one revision.
// +kubebuilder:validation:Enum=Building;Gating;Ready;Active;Failed;Rejected;Superseded
type RevisionPhase string

// Revision phases.
const (
	RevisionBuilding RevisionPhase = "Building"
	RevisionGating   RevisionPhase = "Gating"
	RevisionReady    RevisionPhase = "Ready"
	RevisionActive   RevisionPhase = "Active"
	RevisionFailed   RevisionPhase = "Failed"
	RevisionRejected RevisionPhase = "Rejected"
	// RevisionSuperseded: the spec moved to another revision before this one's build
	// finished; its Job was stopped. Coming back to it builds it anew (next attempt).
	RevisionSuperseded RevisionPhase = "Superseded"
)

// RevisionStatus is one built (or building) revision and its collection.
type RevisionStatus struct {
	// Name is the revision hash.
	Name string `json:"name"`
	// Collection is the Weaviate collection holding its chunks.
	Collection string `json:"collection"`
	// Phase of the revision.
	Phase RevisionPhase `json:"phase"`
	// CorpusRevision is the Corpus content revision last synced into it.
	// +optional
	CorpusRevision string `json:"corpusRevision,omitempty"`
	// Documents embedded.
	// +optional
	Documents int64 `json:"documents,omitempty"`
	// Chunks stored.
	// +optional
	Chunks int64 `json:"chunks,omitempty"`
	// Tokens the revision's chunks are embedded from, special tokens included. Documents a
	// resumed build found complete from an earlier Job are counted by tokenizing them, so the
	// figure does not depend on how often the build was interrupted.
	// +optional
	Tokens int64 `json:"tokens,omitempty"`
	// StoredBytes the build wrote for the revision's chunks: their UTF-8 text plus their
	// float32 vectors (4 bytes x dimensions), whatever compression the index then applies;
	// index structures and other properties not counted. Set by the full build; a sync
	// leaves it as the build found it.
	// +optional
	StoredBytes int64 `json:"storedBytes,omitempty"`
	// TruncatedChunks counts chunks cut to the model's positions before embedding: their
	// text after the cut is searchable by BM25 but absent from the vector. Over 1% of Chunks
	// the Ready message says so.
	// +optional
	TruncatedChunks int64 `json:"truncatedChunks,omitempty"`
	// TokensPerSecond embedded by the build's last Job, over all shards (documents it resumed
	// excluded).
	// +optional
	TokensPerSecond int64 `json:"tokensPerSecond,omitempty"`
	// Skipped counts documents left out, by reason (Encrypted, Corrupt, Empty, NoTextLayer, TooLarge, OCRFailed, ...).
	// +optional
	Skipped map[string]int64 `json:"skipped,omitempty"`
	// InvalidMetadata counts the documents of the last build or sync written with a declared
	// metadata field (Corpus spec.metadata.fields) left unset because its value did not parse,
	// by "<field>/<reason>" (reasons InvalidValue, InvalidSidecar). The documents are indexed.
	// +optional
	InvalidMetadata map[string]int64 `json:"invalidMetadata,omitempty"`
	// OCR counts the pages read by OCR in the revision's last build or corpus sync (documents
	// found unchanged or in the extraction cache run no OCR and count none).
	// +optional
	OCR *OCRStatus `json:"ocr,omitempty"`
	// Reads counts how the revision's last build or corpus sync came by its documents' text:
	// extracted, found unchanged, or taken from the Corpus's extraction cache.
	// +optional
	Reads *DocumentReads `json:"reads,omitempty"`
	// GateRecall is the gating Evaluation's recall@10 of this revision, rounded to 4 decimals.
	// +optional
	GateRecall *float64 `json:"gateRecall,omitempty"`
	// GateHash is the hash of spec.rollout.gate that GateRecall was measured (and, for a
	// Rejected revision, the decision was made) under. A changed gate measures and decides
	// again: lowering minRecall or fixing the gate's dataset re-runs a Rejected revision's gate.
	// +optional
	GateHash string `json:"gateHash,omitempty"`
	// ServedTime is when the revision last took the alias. A revision that served before
	// takes the alias back without a gate (a revert); one that never served is gated.
	// +optional
	ServedTime *metav1.Time `json:"servedTime,omitempty"`
	// GateMessage is the gate's last maxRegression decision on this revision: the paired
	// difference from the active revision with its interval and the verdict, or why the two
	// means were compared instead.
	// +optional
	GateMessage string `json:"gateMessage,omitempty"`
	// Message explains a Failed or Rejected phase.
	// +optional
	Message string `json:"message,omitempty"`
	// Reason is the Index's Stalled reason for a Failed revision (BuildFailed,
	// ModelLimitExceeded, ModelChanged, IncompleteCollection), kept while it stays Failed.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Model is the model the revision's vectors were embedded with, recorded when its first
	// build starts. Evaluations of the revision embed their queries with it, so a revision
	// measured while spec.model names another model is still queried in its own vector space.
	// Revisions recorded before this field have none; their Evaluations use spec.model.
	// Only the controller writes it, so its schema is left out (spec.model's validation rules,
	// repeated per revision, would exceed the API server's CEL cost budget).
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Model *ModelSpec `json:"model,omitempty"`
	// Strategy is the ChunkingStrategy spec the revision was built with, recorded at its
	// first build: corpus syncs into the revision cut with it also while the Index's strategy
	// names another revision (the active revision keeps syncing during a rollout). Schemaless
	// like model, for the same reason.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Strategy *ChunkingStrategySpec `json:"strategy,omitempty"`
	// SyncAttempt numbers fresh runs of a corpus sync into the revision (automatic retries of
	// a failed one; a running sync is not stopped when the Corpus moves on, the next follows
	// it); sync Jobs after the first are named ...-a<attempt>.
	// +optional
	SyncAttempt int32 `json:"syncAttempt,omitempty"`
	// SyncFailures counts the consecutive failed syncs of the current corpus revision; they
	// are retried automatically with exponential back-off (30 s doubling, at most 5 times).
	// +optional
	SyncFailures int32 `json:"syncFailures,omitempty"`
	// Precision the revision's vectors were embedded in (spec.embedder.precision at its first
	// build); Evaluations of the revision embed their queries in it.
	// +optional
	Precision Precision `json:"precision,omitempty"`
	// ModelHash is the content hash of the model folder the revision was embedded with
	// ("sha256:" and 64 hex digits, embedder.FolderHash), recorded when its first build
	// completes. Later builds, re-runs and corpus syncs into the revision refuse a folder with
	// another hash (ModelChanged): vectors of two models never mix in one collection; a
	// model server whose folder has another hash is not wired to it (ServingReady names both).
	// +optional
	ModelHash string `json:"modelHash,omitempty"`
	// ServerImage is the worker image the revision's model server runs when its model is an
	// imagePath (a folder inside that image), recorded when its first build starts: an
	// operator upgrade does not change the model its queries are embedded with. Empty for
	// other models, and for revisions recorded before this field (their server runs the
	// operator's current image).
	// +optional
	ServerImage string `json:"serverImage,omitempty"`
	// CreationTime is when the build started.
	// +optional
	CreationTime *metav1.Time `json:"creationTime,omitempty"`
	// CompletionTime is when the build finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Attempt numbers the builds of this revision: empty or 1 for the first, one more for each
	// rebuild after its collection was lost from Weaviate. Builds after the first run as Jobs
	// named <index>-<revision>-build-<attempt>.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`
	// IncompleteRuns counts the re-runs of this revision's build (or of its current corpus
	// sync) started because, once every shard had reported, the collection held another
	// number of chunks or documents than the shards reported. Re-runs resume: only missing
	// documents are embedded again. After 3 the build fails (the sync stalls) naming the counts.
	// +optional
	IncompleteRuns int32 `json:"incompleteRuns,omitempty"`
	// ContentKey identifies what the revision's chunks and vectors are made of (strategy,
	// model, precision, corpus format, sample; not the vector index, compression, sharding or
	// replication): two revisions with the same key on the same corpus revision hold the same
	// objects. Recorded when the revision is created; empty for revisions from before the field.
	// +optional
	ContentKey string `json:"contentKey,omitempty"`
	// CopyFrom names the kept revision whose stored objects (text, properties and vectors)
	// fill this one: only how vectors are stored differs, so nothing is embedded. Empty for a
	// revision built from the documents (also after a copy that did not hold up fell back to one).
	// +optional
	CopyFrom string `json:"copyFrom,omitempty"`
}

// OCRStatus counts pages read by OCR (Corpus spec.ocr).
type OCRStatus struct {
	// Pages read by OCR.
	// +optional
	Pages int64 `json:"pages,omitempty"`
	// SecondPass counts pages whose first pass had a mean word confidence under
	// minConfidence and were recognised a second time.
	// +optional
	SecondPass int64 `json:"secondPass,omitempty"`
	// LowConfidence counts pages still under minConfidence after the second pass.
	// +optional
	LowConfidence int64 `json:"lowConfidence,omitempty"`
}

// DocumentReads counts how a build or corpus sync came by its documents' text, summed over
// its shards.
type DocumentReads struct {
	// Extracted counts documents whose format reader ran (PDFium, OCR, office, markup),
	// whether it read or skipped them: the extraction cache's misses, or every document read
	// without a cache.
	// +optional
	Extracted int64 `json:"extracted,omitempty"`
	// Unchanged counts documents of a sync whose raw bytes hashed as the revision holds them:
	// neither extracted nor embedded.
	// +optional
	Unchanged int64 `json:"unchanged,omitempty"`
	// CacheHits counts documents whose extraction came from the Corpus's extraction cache.
	// +optional
	CacheHits int64 `json:"cacheHits,omitempty"`
	// CacheMisses counts documents looked up in the extraction cache and not found there (or
	// found corrupt): they were extracted and stored.
	// +optional
	CacheMisses int64 `json:"cacheMisses,omitempty"`
	// PlanMilliseconds is the longest shard's time to plan: open the corpus, read what the
	// collection holds of its documents and list them.
	// +optional
	PlanMilliseconds int64 `json:"planMilliseconds,omitempty"`
	// BytesFetched is the bytes read from the Corpus's source, summed over the shards: the
	// objects an S3 source downloaded, and for other sources the bytes of the files each
	// shard read (hashed or extracted), each file once a shard. A sync of an S3 Corpus
	// downloads only the objects whose listing (ETag, size) changed.
	// +optional
	BytesFetched int64 `json:"bytesFetched,omitempty"`
}

// BuildProgress is the progress of the running build.
type BuildProgress struct {
	// Revision being built.
	Revision string `json:"revision"`
	// DocumentsDone so far, over all shards.
	DocumentsDone int64 `json:"documentsDone"`
	// DocumentsTotal to embed.
	DocumentsTotal int64 `json:"documentsTotal"`
	// Chunks written so far.
	// +optional
	Chunks int64 `json:"chunks,omitempty"`
	// ShardsSucceeded of the Indexed Job.
	// +optional
	ShardsSucceeded int32 `json:"shardsSucceeded,omitempty"`
	// UpdateTime is when these figures were read.
	// +optional
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`
}

// IndexStatus is the observed state of an Index.
type IndexStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Reconciling, Stalled, DeletionBlocked.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Revision is the hash of everything in the spec that changes vectors (the desired revision).
	// +optional
	Revision string `json:"revision,omitempty"`
	// ActiveRevision is the revision the alias points at.
	// +optional
	ActiveRevision string `json:"activeRevision,omitempty"`
	// Alias is the Weaviate alias queries go through.
	// +optional
	Alias string `json:"alias,omitempty"`
	// Chunks in the active revision.
	// +optional
	Chunks int64 `json:"chunks,omitempty"`
	// Progress is a display string of the current build, e.g. "3120/5183 (60%)".
	// +optional
	Progress string `json:"progress,omitempty"`
	// Build holds the running build's figures.
	// +optional
	Build *BuildProgress `json:"build,omitempty"`
	// Revisions kept, newest first.
	// +optional
	// +listType=map
	// +listMapKey=name
	Revisions []RevisionStatus `json:"revisions,omitempty"`
	// Replication is the replication and shard health of the active revision's collection.
	// +optional
	Replication *ReplicationStatus `json:"replication,omitempty"`
	// LastHandledRetry is the value of the ragops.dev/retry annotation last acted on: a new
	// value rebuilds a Failed revision once.
	// +optional
	LastHandledRetry string `json:"lastHandledRetry,omitempty"`
	// Serving is the model server of the revision behind the alias.
	// +optional
	Serving *ServingStatus `json:"serving,omitempty"`
}

// Index is a Corpus chunked by a ChunkingStrategy, embedded and stored in Weaviate,
// served through an alias that points at the active revision.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=indexes,singular=index,shortName=idx,categories=rag
// +kubebuilder:printcolumn:name="Corpus",type=string,JSONPath=`.spec.corpusRef.name`
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.strategyRef.name`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.activeRevision`
// +kubebuilder:printcolumn:name="Chunks",type=integer,JSONPath=`.status.chunks`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Index struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IndexSpec   `json:"spec"`
	Status IndexStatus `json:"status,omitempty"`
}

// IndexList is a list of Index.
// +kubebuilder:object:root=true
type IndexList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Index `json:"items"`
}

func init() { SchemeBuilder.Register(&Index{}, &IndexList{}) }
