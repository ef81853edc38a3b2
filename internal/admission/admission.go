// Package admission checks a custom resource manifest offline the way kube-apiserver admits
// it on create, with the same code and therefore the same messages: it decodes the YAML
// strictly (duplicate and unknown fields are errors), prunes and coerces it to the CRD's
// structural schema, applies the schema's defaults, and validates it against the OpenAPI
// schema, the x-kubernetes-validations (CEL) rules and the metadata rules.
//
// The steps are those of k8s.io/apiextensions-apiserver's custom resource handler
// (pkg/apiserver/customresource_handler.go: the strict YAML serializer, unstructuredSchemaCoercer,
// unstructuredDefaulter) and of k8s.io/apiserver's generic store (Store.create:
// FillObjectMetaSystemFields, then rest.BeforeCreate with the CRD's customresource strategy).
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
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/yaml"
)

// DefaultNamespace is the namespace a manifest without metadata.namespace is admitted to,
// as kubectl does with no namespace in its context.
const DefaultNamespace = "default"

// CRD admits objects of one version of a CustomResourceDefinition.
type CRD struct {
	gvk        schema.GroupVersionKind
	structural *structuralschema.Structural
	strategy   rest.RESTCreateStrategy
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
	var status *apiextensionsinternal.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	if v.Subresources != nil && v.Subresources.Status != nil {
		status = &apiextensionsinternal.CustomResourceSubresourceStatus{}
		if st, ok := internal.OpenAPIV3Schema.Properties["status"]; ok {
			if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&st); err != nil {
				return nil, fmt.Errorf("admission: the %s status schema: %w", gvk.Kind, err)
			}
		}
	}
	var scale *apiextensionsinternal.CustomResourceSubresourceScale
	if v.Subresources != nil && v.Subresources.Scale != nil {
		scale = &apiextensionsinternal.CustomResourceSubresourceScale{}
		if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(v.Subresources.Scale, scale, nil); err != nil {
			return nil, fmt.Errorf("admission: the %s scale subresource: %w", gvk.Kind, err)
		}
	}
	typer := crdserverscheme.NewUnstructuredObjectTyper()
	strategy := customresource.NewStrategy(typer, crd.Spec.Scope == apiextensionsv1.NamespaceScoped, gvk,
		validator, statusValidator, s, status, scale, v.SelectableFields)
	// The serializer the apiserver decodes an application/yaml body with under
	// fieldValidation=Strict.
	decoder := json.NewSerializerWithOptions(json.DefaultMetaFactory, unstructuredCreator{}, typer,
		json.SerializerOptions{Yaml: true, Strict: true})
	return &CRD{gvk: gvk, structural: s, strategy: strategy, decoder: decoder}, nil
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
	om, err := meta.Accessor(u)
	if err != nil {
		return nil, err
	}
	rest.FillObjectMetaSystemFields(om)
	if om.GetGenerateName() != "" && om.GetName() == "" {
		om.SetName(c.strategy.GenerateName(om.GetGenerateName()))
	}
	ctx = genericapirequest.WithNamespace(ctx, u.GetNamespace())
	if err := rest.BeforeCreate(c.strategy, ctx, u); err != nil {
		return nil, err
	}
	return u, nil
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
