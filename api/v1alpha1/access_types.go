package v1alpha1

// AccessDefault is what a document no access rule matches gets.
// +kubebuilder:validation:Enum=Deny;Public
type AccessDefault string

// Access defaults.
const (
	// AccessDeny gives a document no rule matches no group: no identity reads it.
	AccessDeny AccessDefault = "Deny"
	// AccessPublic gives it PublicGroup: every authenticated identity reads it.
	AccessPublic AccessDefault = "Public"
)

// PublicGroup is the reserved group every authenticated identity of the query endpoint is in;
// a document in it is readable by all of them. A rule may name it to make documents public.
const PublicGroup = "ragops:public"

// AccessSpec maps a Corpus's documents to the groups that may read them (package access).
// A document's groups are the union of the groups of every rule that matches it; a document
// no rule matches gets Default. Every chunk carries its document's groups, and the query
// endpoint shows an identity only chunks sharing one of its groups (docs/security.md).
type AccessSpec struct {
	// Default is what a document no rule matches gets: Deny (no group, nobody reads it) or
	// Public (PublicGroup). It must be stated.
	// +required
	Default AccessDefault `json:"default"`
	// Rules map documents to groups.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	Rules []AccessRule `json:"rules,omitempty"`
}

// AccessRule matches documents by exactly one of path, field or groupsFrom. Path and field
// rules give their groups; a groupsFrom rule gives the groups the document itself names.
// +kubebuilder:validation:XValidation:rule="[has(self.path), has(self.field), has(self.groupsFrom)].filter(x, x).size() == 1",message="exactly one of path, field or groupsFrom must be set"
// +kubebuilder:validation:XValidation:rule="has(self.groupsFrom) || (has(self.groups) && size(self.groups) > 0)",fieldPath=".groups",reason=FieldValueRequired,message="groups is required for a path or field rule"
// +kubebuilder:validation:XValidation:rule="!has(self.groupsFrom) || !has(self.groups)",fieldPath=".groups",reason=FieldValueForbidden,message="a groupsFrom rule takes its groups from the document, not from groups"
// +kubebuilder:validation:XValidation:rule="has(self.field) == has(self.values)",fieldPath=".values",reason=FieldValueRequired,message="field and values go together"
type AccessRule struct {
	// Path is a glob on the document's path relative to the source root (source.path; a
	// BEIR record's is its corpus.jsonl): path.Match syntax per segment, and ** for any
	// number of segments ("closed/**", "**/personeel/*.pdf").
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Path string `json:"path,omitempty"`
	// Field is a document metadata key, from the reader or the source (docs/metadata.md:
	// "frontmatter.classification", "meta.dc.rights", "source.s3.classification"). The rule
	// matches when the value, or one item of a list value, equals one of Values.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Field string `json:"field,omitempty"`
	// Values are the Field values the rule matches (compared as text; numbers and booleans
	// as JSON writes them).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	Values []string `json:"values,omitempty"`
	// GroupsFrom is a metadata key whose value names the groups themselves: the source's own
	// labels, such as an S3 user metadata key ("source.s3.groups") or a front-matter field
	// ("frontmatter.groups"). A list value gives one group per item, a text value one per
	// comma-separated item. A document without the key does not match.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	GroupsFrom string `json:"groupsFrom,omitempty"`
	// Groups may read the documents the rule matches.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	Groups []string `json:"groups,omitempty"`
}

// EvaluationPersona is who an Evaluation retrieves as (spec.as).
type EvaluationPersona struct {
	// Groups the persona is in.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	Groups []string `json:"groups"`
}
