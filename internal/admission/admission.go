// Package admission checks a custom resource manifest offline the way kube-apiserver admits
// it on create, with the same code and therefore the same messages: it decodes the YAML
// strictly (duplicate and unknown fields are errors), prunes and coerces it to the CRD's
// structural schema, applies the schema's defaults, and validates it against the OpenAPI
// schema, the x-kubernetes-validations (CEL) rules and the metadata rules.
//
// The steps are those of k8s.io/apiextensions-apiserver's custom resource handler
// (pkg/apiserver/customresource_handler.go: the strict YAML serializer, unstructuredSchemaCoercer,
// unstructuredDefaulter), of its create strategy (pkg/registry/customresource: Validate, with
// the OpenAPI schema validator, embedded ObjectMeta, list-type and CEL validators it calls)
// and of k8s.io/apiserver's generic store (Store.create, rest.BeforeCreate, rest.ValidateCreate),
// each calling the same library functions in the same order. The strategy and store packages
// themselves are not linked: they pull in the apiserver's etcd storage (about 150 packages,
// 10 MB of binary and 19 MB of resident memory in every ragops command). A test compares
// every result with a real kube-apiserver.
// Errors are *k8s.io/apimachinery/pkg/api/errors.StatusError values whose Error() is the
// message the apiserver returns for a POST with fieldValidation=Strict (what kubectl apply
// and kubectl create send): a BadRequest "... cannot be handled as a ...: strict decoding
// error: ..." for unknown or duplicate fields, and an Invalid
// `<Kind>.<group> "<name>" is invalid: <field>: ...` for everything else.
//
// Admission webhooks and admission policies of a cluster are not run: ragops installs none.
package admission

import (
	"context"
	"errors"
	"fmt"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/operation"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage/names"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"sigs.k8s.io/yaml"
)

// DefaultNamespace is the namespace a manifest without metadata.namespace is admitted to,
// as kubectl does with no namespace in its context.
const DefaultNamespace = "default"

// CRD admits objects of one version of a CustomResourceDefinition.
type CRD struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	status     bool // the version has a status subresource
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
	decoder    runtime.Decoder
}

// New reads a CustomResourceDefinition (YAML or JSON, apiextensions.k8s.io/v1) and prepares
// admission of its version `version` ("" means the storage version). It fails when the
// version is not served or its schema is not structural, as the apiserver would refuse to
// serve it.
func New(crdYAML []byte, version string) (*CRD, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crdYAML, &crd); err != nil {
		return nil, fmt.Errorf("admission: reading CustomResourceDefinition: %w", err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&crd)
	var v *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		cv := &crd.Spec.Versions[i]
		if cv.Name == version || (version == "" && cv.Storage) {
			v = cv
		}
	}
	if v == nil || !v.Served {
		return nil, fmt.Errorf("admission: %s serves no version %q", crd.Name, version)
	}
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("admission: %s version %s has no schema", crd.Name, v.Name)
	}
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}

	// As crdHandler.getOrCreateServingInfoFor: the internal schema, its structural form
	// with defaults pruned, the OpenAPI schema validator and the strategy.
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("admission: converting the %s schema: %w", gvk.Kind, err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("admission: the %s schema is not structural: %w", gvk.Kind, err)
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, fmt.Errorf("admission: pruning the %s schema's defaults: %w", gvk.Kind, err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("admission: the %s schema: %w", gvk.Kind, err)
	}
	if v.Subresources != nil && v.Subresources.Scale != nil {
		return nil, fmt.Errorf("admission: %s has a scale subresource, which is not supported", crd.Name)
	}
	typer := crdserverscheme.NewUnstructuredObjectTyper()
	// The serializer the apiserver decodes an application/yaml body with under
	// fieldValidation=Strict.
	decoder := json.NewSerializerWithOptions(json.DefaultMetaFactory, unstructuredCreator{}, typer,
		json.SerializerOptions{Yaml: true, Strict: true})
	return &CRD{
		gvk: gvk, namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		status:     v.Subresources != nil && v.Subresources.Status != nil,
		structural: s, validator: validator, decoder: decoder,
		// As customresource.NewStrategy: CEL programs compiled once, per-call cost limit.
		cel: cel.NewValidator(s, true, celconfig.PerCallLimit),
	}, nil
}

// GroupVersionKind returns the kind this CRD admits.
func (c *CRD) GroupVersionKind() schema.GroupVersionKind { return c.gvk }

// Admit decodes one YAML (or JSON) document and admits it as a create would. It returns the
// object as the apiserver would store it (defaults applied, unknown fields never silently
// dropped: they are an error) or a *apierrors.StatusError with the apiserver's message. The
// namespace defaults to DefaultNamespace; metadata the server sets (uid,
// creationTimestamp, generation) is filled in as on a create.
func (c *CRD) Admit(ctx context.Context, doc []byte) (*unstructured.Unstructured, error) {
	into := &unstructured.Unstructured{}
	into.SetGroupVersionKind(c.gvk)
	obj, gvk, err := c.decoder.Decode(doc, &c.gvk, into)
	var strictErrs []error
	if err != nil {
		se, ok := runtime.AsStrictDecodingError(err)
		if !ok || obj == nil {
			return nil, c.decodeError(gvk, err)
		}
		strictErrs = se.Errors()
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("admission: decoded a %T, not an unstructured object", obj)
	}
	if got := u.GroupVersionKind(); got != c.gvk {
		return nil, fmt.Errorf("admission: the manifest is %s, not %s", describe(got), describe(c.gvk))
	}
	unknown, err := c.coerce(u)
	if err != nil {
		return nil, c.decodeError(gvk, err)
	}
	for _, f := range unknown {
		strictErrs = append(strictErrs, fmt.Errorf(`unknown field "%s"`, f))
	}
	if len(strictErrs) > 0 {
		return nil, c.decodeError(gvk, runtime.NewStrictDecodingError(strictErrs))
	}
	structuraldefaulting.Default(u.Object, c.structural)

	if u.GetNamespace() == "" {
		u.SetNamespace(DefaultNamespace)
	}
	// Store.create: system fields, then a generated name.
	u.SetCreationTimestamp(metav1.Now())
	u.SetUID(uuid.NewUUID())
	if u.GetGenerateName() != "" && u.GetName() == "" {
		u.SetName(names.SimpleNameGenerator.GenerateName(u.GetGenerateName()))
	}
	// rest.BeforeCreate: the strategy's PrepareForCreate, then rest.ValidateCreate.
	if c.status {
		delete(u.Object, "status")
	}
	u.SetGeneration(1)
	errs := c.validate(ctx, u)
	if len(errs) == 0 {
		errs = apimachineryvalidation.ValidateObjectMetaAccessor(u, c.namespaced, path.ValidatePathSegmentName, field.NewPath("metadata"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(c.gvk.GroupKind(), u.GetName(), errs)
	}
	return u, nil
}

// validate is customResourceStrategy.Validate (with customResourceValidator.Validate) of
// k8s.io/apiextensions-apiserver v0.37 for a create: type and object metadata, the OpenAPI
// schema, embedded resources, list types, then the CEL rules unless an earlier error blocks
// them.
func (c *CRD) validate(ctx context.Context, u *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	if tm := c.validateTypeMeta(u); len(tm) > 0 {
		errs = tm
	} else {
		var om metav1.ObjectMeta
		if raw, ok := u.Object["metadata"].(map[string]any); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &om); err != nil {
				errs = append(errs, field.Invalid(field.NewPath("metadata"), raw, err.Error()))
			}
		}
		if len(errs) == 0 {
			errs = append(errs, apimachineryvalidation.ValidateObjectMetaDeclaratively(ctx, operation.Create, &om, nil, c.namespaced,
				apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"), utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta))...)
		}
		errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.UnstructuredContent(), c.validator)...)
	}
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, c.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, c.structural, u.Object)...)
	if blocking(errs) {
		return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
	}
	celErrs, _ := c.cel.Validate(ctx, nil, c.structural, u.Object, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// validateTypeMeta is customResourceValidator.ValidateTypeMeta.
func (c *CRD) validateTypeMeta(u *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	if u.GetKind() != c.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), fmt.Sprintf("must be %v", c.gvk.Kind)))
	}
	if gv := c.gvk.Group + "/" + c.gvk.Version; u.GetAPIVersion() != gv {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), fmt.Sprintf("must be %v", gv)))
	}
	return errs
}

// blocking is customresource's hasBlockingErr: errors after which CEL rules are not run.
func blocking(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

// coerce is the apiserver's unstructuredSchemaCoercer.apply for a strict decode: it prunes
// fields the schema does not declare (returning their paths), drops nulls of non-nullable
// fields without defaults and coerces the metadata.
func (c *CRD) coerce(u *unstructured.Unstructured) ([]string, error) {
	kind, foundKind, err := unstructured.NestedString(u.Object, "kind")
	if err != nil {
		return nil, err
	}
	apiVersion, foundAPIVersion, err := unstructured.NestedString(u.Object, "apiVersion")
	if err != nil {
		return nil, err
	}
	objectMeta, foundObjectMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object,
		schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return nil, err
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, c.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, c.structural)
	ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, c.structural, false,
		schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if ferr != nil {
		return nil, ferr
	}
	unknown = append(unknown, paths...)
	if foundKind {
		u.SetKind(kind)
	}
	if foundAPIVersion {
		u.SetAPIVersion(apiVersion)
	}
	if foundObjectMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	return unknown, nil
}

// decodeError is the apiserver's transformDecodeError for a body whose kind is known.
func (c *CRD) decodeError(gvk *schema.GroupVersionKind, err error) error {
	if gvk == nil || gvk.Kind == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v", c.gvk.Kind, err))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, c.gvk.Kind, err))
}

// IsRejected reports whether err is an admission rejection (a status error from the
// apiserver's checks) rather than a failure to run them.
func IsRejected(err error) bool {
	var se *apierrors.StatusError
	return errors.As(err, &se)
}

func describe(gvk schema.GroupVersionKind) string {
	if gvk.Kind == "" {
		return "without a kind"
	}
	return "kind " + gvk.Kind + " (" + gvk.GroupVersion().String() + ")"
}

// unstructuredCreator creates the unstructured objects the decoder fills, as the
// apiserver's unstructuredCreator does.
type unstructuredCreator struct{}

func (unstructuredCreator) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}
