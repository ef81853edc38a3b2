package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DocumentFormat selects how documents are read.
// +kubebuilder:validation:Enum=Auto;Text;Markdown;HTML;PDF;DOCX;ODT;BEIR
type DocumentFormat string

// Document formats. Auto sniffs each file's media type from its content.
const (
	FormatAuto     DocumentFormat = "Auto"
	FormatText     DocumentFormat = "Text"
	FormatMarkdown DocumentFormat = "Markdown"
	FormatHTML     DocumentFormat = "HTML"
	FormatPDF      DocumentFormat = "PDF"
	FormatDOCX     DocumentFormat = "DOCX"
	FormatODT      DocumentFormat = "ODT"
	FormatBEIR     DocumentFormat = "BEIR"
)

// CorpusSpec says where a corpus's documents live and how to read them.
// +kubebuilder:validation:XValidation:rule="[has(self.s3), has(self.pvc), has(self.configMap), has(self.http), has(self.git)].filter(x, x).size() == 1",message="exactly one source must be set: s3, pvc, configMap, http or git"
type CorpusSpec struct {
	// S3 reads objects from an S3-compatible bucket.
	// +optional
	S3 *S3Source `json:"s3,omitempty"`
	// PVC reads files from a folder on a PersistentVolumeClaim.
	// +optional
	PVC *PVCSource `json:"pvc,omitempty"`
	// ConfigMap reads each data key of a ConfigMap as one document (small corpora).
	// +optional
	ConfigMap *LocalObjectReference `json:"configMap,omitempty"`
	// HTTP fetches an archive (tar, tar.gz, zip) or a single file.
	// +optional
	HTTP *HTTPSource `json:"http,omitempty"`
	// Git clones a repository at a ref.
	// +optional
	Git *GitSource `json:"git,omitempty"`

	// Format of the documents; Auto sniffs each one from its content.
	// +optional
	// +kubebuilder:default=Auto
	Format DocumentFormat `json:"format,omitempty"`
	// Include lists glob patterns (path.Match syntax, matched against the path relative to the
	// source root); empty means every file.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=512
	Include []string `json:"include,omitempty"`
	// Exclude lists glob patterns removed after Include.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=512
	Exclude []string `json:"exclude,omitempty"`
	// MaxDocumentBytes skips (and counts, reason TooLarge) documents larger than this.
	// The default, 512 MiB, admits a 300-page scanned dossier: a page scanned at 300 DPI
	// is about 300-500 KB as JPEG in grey (the repository's scan fixtures at 200 DPI are
	// 140-230 KB a page), so 300 pages are about 150 MB, and 512 MiB leaves room for
	// colour scans (about 1.7 MiB a page). Files are read whole, so a build pod's memory
	// must hold the largest admitted document; OCR runs one page at a time.
	// +optional
	// +kubebuilder:default=536870912
	// +kubebuilder:validation:Minimum=1
	MaxDocumentBytes int64 `json:"maxDocumentBytes,omitempty"`
	// Interval between source resyncs.
	// +optional
	// +kubebuilder:default="1h"
	Interval metav1.Duration `json:"interval,omitempty"`
	// Suspend stops resyncs.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// OCR configures text recognition (Tesseract) of scanned PDF pages and of image
	// documents (PNG, JPEG, TIFF).
	// +optional
	// +kubebuilder:default={}
	OCR *OCRSpec `json:"ocr,omitempty"`
	// Metadata declares the document fields that become properties of every chunk of the
	// document in the Index collections (filterable in Weaviate; numbers and dates also by
	// range). See docs/metadata.md.
	// +optional
	Metadata *MetadataSpec `json:"metadata,omitempty"`
	// Access maps documents to the groups that may read them through the query endpoint
	// (docs/security.md); unset, the Corpus has no access rules and no endpoint serves it.
	// +optional
	Access *AccessSpec `json:"access,omitempty"`
}

// MetadataSpec declares which document fields become chunk properties, and where sidecar
// files are.
type MetadataSpec struct {
	// Fields become chunk properties, in this order.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Fields []MetadataField `json:"fields,omitempty"`
	// SidecarSuffix names a document's sidecar file: the document's path with this suffix
	// appended (report.pdf -> report.pdf.meta.json). It holds one JSON or YAML mapping whose
	// top-level keys fields read with from.sidecar. Files ending in it are not documents.
	// +optional
	// +kubebuilder:default=".meta.json"
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^\.[A-Za-z0-9._-]+$`
	SidecarSuffix string `json:"sidecarSuffix,omitempty"`
}

// MetadataFieldType is the Weaviate data type of a metadata property.
// +kubebuilder:validation:Enum=text;text[];int;number;boolean;date
type MetadataFieldType string

// Metadata field types (Weaviate data types). Values are parsed from their source: text as
// is; int and number from JSON numbers or decimal strings; boolean from true/false; date from
// RFC 3339, a date (2006-01-02, midnight UTC) or a year (2006, 1 January UTC); text[] from a
// list or a single value.
const (
	MetadataText      MetadataFieldType = "text"
	MetadataTextArray MetadataFieldType = "text[]"
	MetadataInt       MetadataFieldType = "int"
	MetadataNumber    MetadataFieldType = "number"
	MetadataBoolean   MetadataFieldType = "boolean"
	MetadataDate      MetadataFieldType = "date"
)

// MetadataField is one chunk property taken from each document.
// +kubebuilder:validation:XValidation:rule="[has(self.from.reader), has(self.from.source), has(self.from.path), has(self.from.sidecar)].filter(x, x).size() == 1",fieldPath=".from",message="from must set exactly one of reader, source, path, sidecar"
// +kubebuilder:validation:XValidation:rule="!has(self.from.path) || self.from.path.contains('{' + self.name + '}')",fieldPath=".from.path",message="from.path must capture the field: it must contain {<name>}"
type MetadataField struct {
	// Name of the property: a Weaviate property name starting lower-case (a lower-case letter
	// or _, then letters, digits and _; Weaviate lower-cases a first capital), not one of
	// ragops's own chunk properties.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[_a-z][_0-9A-Za-z]*$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['text', 'docId', 'chunkOrdinal', 'start', 'end', 'headingPath', 'revision', 'pageStart', 'pageEnd', 'docHash', 'metaHash', 'groups', 'accessGroups', 'accessKey', 'id', '_id', '_additional'])",message="name is one of ragops's own chunk properties"
	Name string `json:"name"`
	// Type of the property.
	Type MetadataFieldType `json:"type"`
	// From says where the value comes from.
	From MetadataSource `json:"from"`
}

// MetadataSource is where a metadata field's value comes from: exactly one of its fields.
type MetadataSource struct {
	// Reader is a key of the fields the format reader returns: title, author, created,
	// modified, meta.<name>, frontmatter.<key> (docs/metadata.md).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Reader string `json:"reader,omitempty"`
	// Source is a key of the source's fields: source.path, source.size, source.modified,
	// source.s3.<name>, source.git.commit.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.startsWith('source.')",message="source fields start with source."
	Source string `json:"source,omitempty"`
	// Path is a pattern matched against the start of the document's path: segments
	// separated by /, each literal text, * (any text within a segment) and {name} captures
	// (one segment's text, or its part between literals). The field takes its own capture:
	// moties/{year}/ gives year 2019 for moties/2019/a.pdf. A pattern ending in / matches
	// any path below; otherwise the whole path. A path that does not match sets nothing.
	// +optional
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=512
	Path string `json:"path,omitempty"`
	// Sidecar is a top-level key of the document's sidecar file (spec.metadata.sidecarSuffix).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Sidecar string `json:"sidecar,omitempty"`
}

// OCRMode says which pages are read by OCR.
// +kubebuilder:validation:Enum=Auto;Always;Never
type OCRMode string

// The OCR modes.
const (
	// OCRAuto reads by OCR the PDF pages without a text layer that hold images, and image
	// documents.
	OCRAuto OCRMode = "Auto"
	// OCRAlways reads every PDF page by OCR, ignoring its text layer, and image documents.
	OCRAlways OCRMode = "Always"
	// OCRNever reads nothing by OCR: PDFs without a text layer are skipped as NoTextLayer
	// and images as Unsupported.
	OCRNever OCRMode = "Never"
)

// OCRSpec configures text recognition of scanned pages (reader/ocr: Tesseract 5 through its
// command line). A page whose mean word confidence is under MinConfidence is recognised a
// second time from a cleaned-up image, keeping the better pass.
type OCRSpec struct {
	// Mode says which pages are read by OCR.
	// +optional
	// +kubebuilder:default=Auto
	Mode OCRMode `json:"mode,omitempty"`
	// Languages are Tesseract language codes (ISO 639-2/T, with a script suffix for some:
	// chi_sim), tried together in this order. The worker image carries nld and eng.
	// +optional
	// +kubebuilder:default={"nld","eng"}
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:Pattern=`^[a-z]{3}(_[a-z]+)?$`
	// +kubebuilder:validation:items:MaxLength=16
	Languages []string `json:"languages,omitempty"`
	// DPI is the resolution (pixels per inch) PDF pages are rendered at for OCR; 300 suits
	// body text of 8 points and up. Pages over 60 megapixels are rendered at a lower DPI.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=72
	// +kubebuilder:validation:Maximum=600
	DPI int32 `json:"dpi,omitempty"`
	// MinConfidence (0-100): pages whose mean word confidence is under it get a second
	// pass; pages still under it after that are counted in the revision's status.
	// +optional
	// +kubebuilder:default=70
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MinConfidence int32 `json:"minConfidence,omitempty"`
}

// S3Source is a bucket of an S3-compatible object store.
// +kubebuilder:validation:XValidation:rule="!(has(self.secretRef) && has(self.identity))",fieldPath=".identity",reason=FieldValueForbidden,message="set secretRef or identity, not both"
type S3Source struct {
	// Endpoint host[:port] of the object store, e.g. s3.eu-west-1.amazonaws.com or minio.minio:9000.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Endpoint string `json:"endpoint"`
	// Bucket name.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	Bucket string `json:"bucket"`
	// Prefix limits the sync to keys under it.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Prefix string `json:"prefix,omitempty"`
	// Region of the bucket.
	// +optional
	Region string `json:"region,omitempty"`
	// Insecure uses plain HTTP.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
	// SecretRef names a Secret with keys accesskey and secretkey.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// Identity gets temporary credentials from the workload's identity instead of static keys.
	// +optional
	Identity *S3Identity `json:"identity,omitempty"`
}

// S3IdentityType is how an S3 source obtains temporary credentials.
// +kubebuilder:validation:Enum=WebIdentity;IAM
type S3IdentityType string

// S3 identity types.
const (
	// S3IdentityWebIdentity exchanges a projected ServiceAccount token (audience-bound, mounted
	// by ragops) at an STS endpoint (AssumeRoleWithWebIdentity) for temporary keys.
	S3IdentityWebIdentity S3IdentityType = "WebIdentity"
	// S3IdentityIAM uses minio-go's IAM chain: AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN
	// (EKS IRSA webhook), AWS_CONTAINER_CREDENTIALS_FULL_URI with its token file (EKS Pod
	// Identity), the ECS task endpoint, then EC2 instance metadata.
	S3IdentityIAM S3IdentityType = "IAM"
)

// S3Identity says how an S3 source gets temporary credentials from the pod's identity.
// +kubebuilder:validation:XValidation:rule="self.type != 'WebIdentity' || has(self.webIdentity)",fieldPath=".webIdentity",reason=FieldValueRequired,message="webIdentity is required when type is WebIdentity"
// +kubebuilder:validation:XValidation:rule="self.type == 'WebIdentity' || !has(self.webIdentity)",fieldPath=".webIdentity",reason=FieldValueForbidden,message="webIdentity may only be set when type is WebIdentity"
type S3Identity struct {
	// Type WebIdentity or IAM.
	Type S3IdentityType `json:"type"`
	// WebIdentity configures the token exchange (type WebIdentity).
	// +optional
	WebIdentity *S3WebIdentity `json:"webIdentity,omitempty"`
	// STSEndpoint overrides the IAM chain's STS endpoint (type IAM; default
	// https://sts.<AWS_REGION>.amazonaws.com).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://')",message="stsEndpoint must start with http:// or https://"
	STSEndpoint string `json:"stsEndpoint,omitempty"`
}

// S3WebIdentity is an AssumeRoleWithWebIdentity exchange of the pod's ServiceAccount token
// (the Job template's serviceAccountName, else "default"), projected with Audience.
type S3WebIdentity struct {
	// STSEndpoint URL of the STS service, e.g. https://sts.eu-west-1.amazonaws.com or a MinIO
	// server's URL.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://')",message="stsEndpoint must start with http:// or https://"
	STSEndpoint string `json:"stsEndpoint"`
	// RoleARN is the role to assume (AWS requires it; MinIO derives the policy from the token).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	RoleARN string `json:"roleARN,omitempty"`
	// Audience of the projected token, as the STS service expects it.
	// +optional
	// +kubebuilder:default="sts.amazonaws.com"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Audience string `json:"audience,omitempty"`
	// ExpirationSeconds of the projected token (the kubelet renews it at 80%).
	// +optional
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=600
	// +kubebuilder:validation:Maximum=86400
	ExpirationSeconds int64 `json:"expirationSeconds,omitempty"`
}

// GitSource is a folder of a Git repository at a ref.
type GitSource struct {
	// URL of the repository (https:// or ssh://).
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://') || self.startsWith('ssh://')",message="url must start with https://, http:// or ssh://"
	URL string `json:"url"`
	// Ref is a branch, tag or commit.
	// +optional
	// +kubebuilder:default=main
	// +kubebuilder:validation:MinLength=1
	Ref string `json:"ref,omitempty"`
	// Path of the folder inside the repository.
	// +optional
	Path string `json:"path,omitempty"`
	// SecretRef names a Secret with username/password or identity keys.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// CorpusStatus is the observed state of a Corpus.
type CorpusStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Reconciling, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Source is a short description of the source, for display.
	// +optional
	Source string `json:"source,omitempty"`
	// Documents found at the last sync (after include/exclude).
	// +optional
	Documents int64 `json:"documents,omitempty"`
	// Bytes of those documents.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
	// Revision is a content hash of the document list (paths, sizes, digests) and, with
	// spec.access, of the access rules (a rule change is a new revision the Indexes sync).
	// +optional
	Revision string `json:"revision,omitempty"`
	// LastSyncTime is when the source was last read successfully.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// LastHandledScanRequest is the value of the ragops.dev/scan-requested annotation last
	// acted on: a new value starts one scan.
	// +optional
	LastHandledScanRequest string `json:"lastHandledScanRequest,omitempty"`
	// Skipped counts documents left out at sync, by reason (TooLarge, Unreadable, ...).
	// +optional
	Skipped map[string]int64 `json:"skipped,omitempty"`
	// Commit is the Git commit the last sync listed (40 hex digits; Git sources only). Index
	// builds check out this commit, not spec.git.ref, so they embed the documents counted here
	// even when the branch has moved on.
	// +optional
	Commit string `json:"commit,omitempty"`
	// HTTP is what the last scan of an HTTP source saw of its archive (HTTP sources only):
	// the next scan asks the server whether it changed since (If-None-Match,
	// If-Modified-Since) and keeps the figures above without downloading it when it did not.
	// +optional
	HTTP *HTTPValidator `json:"http,omitempty"`
}

// HTTPValidator is what a scan saw of an HTTP source's archive: the response's cache
// validators and the settings the documents were listed with.
type HTTPValidator struct {
	// ETag of the archive's response.
	// +optional
	ETag string `json:"etag,omitempty"`
	// LastModified of the archive's response (an HTTP date), sent when there is no ETag.
	// +optional
	LastModified string `json:"lastModified,omitempty"`
	// Selection is a hash of the source settings the documents were listed with (URL,
	// checksum, format, include, exclude, maxDocumentBytes): a scan under other settings
	// lists the archive again.
	// +optional
	Selection string `json:"selection,omitempty"`
}

// Corpus is a set of documents to index: where they live and how to read them.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=corp,categories=rag
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.status.source`
// +kubebuilder:printcolumn:name="Documents",type=integer,JSONPath=`.status.documents`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Commit",type=string,priority=1,JSONPath=`.status.commit`
// +kubebuilder:printcolumn:name="Status",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Corpus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CorpusSpec   `json:"spec"`
	Status CorpusStatus `json:"status,omitempty"`
}

// CorpusList is a list of Corpus.
// +kubebuilder:object:root=true
type CorpusList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Corpus `json:"items"`
}

func init() { SchemeBuilder.Register(&Corpus{}, &CorpusList{}) }
