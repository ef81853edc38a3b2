// Package docmeta turns a Corpus's metadata field declarations (spec.metadata.fields) into
// the values of one document's chunk properties: each field's raw value comes from the
// reader's fields, the source's fields, a capture of the document's path or the document's
// sidecar file, and is parsed as the field's type. A value that does not parse leaves the
// property unset and is reported as a Failure with a reason; the document is still indexed.
//
// Hash covers what a field can change without the document's bytes changing (the
// declarations, the source fields, the path captures and the sidecar values): a sync that
// finds a document's raw hash unchanged but its metadata hash changed rewrites the chunks'
// properties without embedding. Reader fields are a function of the raw bytes and the
// reader, so they are not part of it.
package docmeta

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/vectorstore"
)

// Failure reasons (Failure.Reason).
const (
	// ReasonInvalidValue: the value does not parse as the field's type.
	ReasonInvalidValue = "InvalidValue"
	// ReasonInvalidSidecar: the sidecar file is not a JSON or YAML mapping.
	ReasonInvalidSidecar = "InvalidSidecar"
)

// Fields are a Corpus's compiled metadata field declarations. The nil *Fields declares none.
type Fields struct {
	list   []field
	suffix string
	key    string // hex SHA-256 of the declarations' JSON
}

type field struct {
	ragopsv1alpha1.MetadataField
	path *regexp.Regexp // from.path, anchored; the field's capture is the group named like it
}

// Compile checks and compiles spec's fields; nil or no fields gives nil.
//
// Errors: a field with no or several origins, an unknown type, a path pattern without the
// field's capture (the API rejects these at admission; plans written by hand may not).
func Compile(spec *ragopsv1alpha1.MetadataSpec) (*Fields, error) {
	if spec == nil || len(spec.Fields) == 0 {
		return nil, nil
	}
	f := &Fields{suffix: spec.SidecarSuffix}
	if f.suffix == "" {
		f.suffix = ".meta.json"
	}
	for _, d := range spec.Fields {
		n := 0
		for _, s := range []string{d.From.Reader, d.From.Source, d.From.Path, d.From.Sidecar} {
			if s != "" {
				n++
			}
		}
		if n != 1 {
			return nil, fmt.Errorf("metadata field %s: from must set exactly one of reader, source, path, sidecar", d.Name)
		}
		switch d.Type {
		case ragopsv1alpha1.MetadataText, ragopsv1alpha1.MetadataTextArray, ragopsv1alpha1.MetadataInt,
			ragopsv1alpha1.MetadataNumber, ragopsv1alpha1.MetadataBoolean, ragopsv1alpha1.MetadataDate:
		default:
			return nil, fmt.Errorf("metadata field %s: type %q: want text, text[], int, number, boolean or date", d.Name, d.Type)
		}
		fd := field{MetadataField: d}
		if d.From.Path != "" {
			re, err := PathPattern(d.From.Path, d.Name)
			if err != nil {
				return nil, fmt.Errorf("metadata field %s: %w", d.Name, err)
			}
			fd.path = re
		}
		f.list = append(f.list, fd)
	}
	raw, _ := json.Marshal(spec)
	sum := sha256.Sum256(raw)
	f.key = hex.EncodeToString(sum[:])
	return f, nil
}

var captureRe = regexp.MustCompile(`\{([_A-Za-z][_0-9A-Za-z]*)\}`)

// PathPattern compiles a from.path pattern (see ragopsv1alpha1.MetadataSource.Path) into a
// regular expression anchored at the start of a path: {name} captures one segment's text
// (or its part between literals; the group named capture is the field's), * any text within
// a segment, everything else is literal. A pattern ending in / matches any path below it.
//
// Errors: the pattern does not hold {capture}.
func PathPattern(pattern, capture string) (*regexp.Regexp, error) {
	if !strings.Contains(pattern, "{"+capture+"}") {
		return nil, fmt.Errorf("path pattern %q does not capture {%s}", pattern, capture)
	}
	var b strings.Builder
	b.WriteString("^")
	rest := pattern
	named := false
	for rest != "" {
		loc := captureRe.FindStringIndex(rest)
		lit := rest
		if loc != nil {
			lit = rest[:loc[0]]
		}
		for i, part := range strings.Split(lit, "*") {
			if i > 0 {
				b.WriteString("[^/]*")
			}
			b.WriteString(regexp.QuoteMeta(part))
		}
		if loc == nil {
			break
		}
		if name := rest[loc[0]+1 : loc[1]-1]; name == capture && !named {
			b.WriteString("(?P<v>[^/]+?)")
			named = true
		} else {
			b.WriteString("[^/]+?")
		}
		rest = rest[loc[1]:]
	}
	if !strings.HasSuffix(pattern, "/") {
		b.WriteString("$")
	}
	return regexp.Compile(b.String())
}

// SidecarSuffix is the suffix of sidecar files, "" when no field reads one.
func (f *Fields) SidecarSuffix() string {
	if f == nil {
		return ""
	}
	for _, d := range f.list {
		if d.From.Sidecar != "" {
			return f.suffix
		}
	}
	return ""
}

// NeedsReader reports whether a field reads the format reader's fields (so a metadata-only
// update needs the document extracted).
func (f *Fields) NeedsReader() bool {
	if f == nil {
		return false
	}
	for _, d := range f.list {
		if d.From.Reader != "" {
			return true
		}
	}
	return false
}

// Properties are the collection properties the fields become, in declaration order.
func (f *Fields) Properties() []vectorstore.Property {
	if f == nil {
		return nil
	}
	out := make([]vectorstore.Property, len(f.list))
	for i, d := range f.list {
		out[i] = vectorstore.Property{Name: d.Name, DataType: string(d.Type)}
	}
	return out
}

// Names are the fields' property names, in declaration order.
func (f *Fields) Names() []string {
	if f == nil {
		return nil
	}
	out := make([]string, len(f.list))
	for i, d := range f.list {
		out[i] = d.Name
	}
	return out
}

// Inputs are what one document's fields are taken from.
type Inputs struct {
	// Path is the document's path (its ID) for path captures.
	Path string
	// Fields are the reader's and the source's fields (reader.Document.Metadata after the
	// corpus walk). A metadata-only update of a document left unread has the source's only.
	Fields map[string]any
	// Sidecar is the raw sidecar file (JSON or YAML); nil when there is none.
	Sidecar []byte
}

// Failure is a field whose value did not parse: the property is left unset.
type Failure struct {
	Field  string
	Reason string
	// Value is the raw value, shortened, for the log.
	Value string
}

// Values returns the properties of one document (name -> value typed for
// vectorstore.Chunk.Properties) and the fields whose values did not parse. A field whose
// origin has no value (no such key, a path that does not match) is unset without failure.
func (f *Fields) Values(in Inputs) (map[string]any, []Failure) {
	if f == nil {
		return nil, nil
	}
	out := map[string]any{}
	var fails []Failure
	side, sideErr := parseSidecar(in.Sidecar)
	for _, d := range f.list {
		raw, ok := f.raw(d, in, side)
		if d.From.Sidecar != "" && sideErr != nil {
			fails = append(fails, Failure{Field: d.Name, Reason: ReasonInvalidSidecar, Value: short(sideErr.Error())})
			continue
		}
		if !ok {
			continue
		}
		v, ok := parse(d.Type, raw)
		if !ok {
			fails = append(fails, Failure{Field: d.Name, Reason: ReasonInvalidValue, Value: short(fmt.Sprint(raw))})
			continue
		}
		out[d.Name] = v
	}
	return out, fails
}

// Hash is the hex SHA-256 (16 digits) of the declarations and the raw values of the fields
// that do not come from the reader, for in: it changes when a declaration, a source field,
// a path capture or a sidecar value a field reads changes. in.Fields need hold only the
// source's fields.
func (f *Fields) Hash(in Inputs) string {
	if f == nil {
		return ""
	}
	side, sideErr := parseSidecar(in.Sidecar)
	vals := make([]any, 0, len(f.list)+1)
	vals = append(vals, f.key)
	for _, d := range f.list {
		if d.From.Reader != "" {
			vals = append(vals, nil)
			continue
		}
		if d.From.Sidecar != "" && sideErr != nil {
			vals = append(vals, "invalid sidecar: "+string(in.Sidecar))
			continue
		}
		raw, _ := f.raw(d, in, side)
		vals = append(vals, raw)
	}
	b, _ := json.Marshal(vals)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func (f *Fields) raw(d field, in Inputs, side map[string]any) (any, bool) {
	switch {
	case d.From.Reader != "":
		v, ok := in.Fields[d.From.Reader]
		return v, ok
	case d.From.Source != "":
		v, ok := in.Fields[d.From.Source]
		return v, ok
	case d.path != nil:
		m := d.path.FindStringSubmatch(in.Path)
		if m == nil {
			return nil, false
		}
		return m[d.path.SubexpIndex("v")], true
	default:
		v, ok := side[d.From.Sidecar]
		return v, ok
	}
}

func parseSidecar(raw []byte) (map[string]any, error) {
	if raw == nil {
		return nil, nil
	}
	var m map[string]any
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("sidecar is not a JSON or YAML mapping: %w", err)
	}
	return m, nil
}

func short(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// parse converts a raw value (a JSON value: string, float64, bool, list, ...) to typ.
func parse(typ ragopsv1alpha1.MetadataFieldType, raw any) (any, bool) {
	switch typ {
	case ragopsv1alpha1.MetadataText:
		return scalarText(raw)
	case ragopsv1alpha1.MetadataTextArray:
		list, isList := raw.([]any)
		if !isList {
			s, ok := scalarText(raw)
			return []string{s}, ok
		}
		out := make([]string, 0, len(list))
		for _, v := range list {
			s, ok := scalarText(v)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	case ragopsv1alpha1.MetadataInt:
		switch x := raw.(type) {
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				return int64(x), true
			}
		case int64:
			return x, true
		case int:
			return int64(x), true
		case string:
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			return n, err == nil
		}
	case ragopsv1alpha1.MetadataNumber:
		switch x := raw.(type) {
		case float64:
			return x, true
		case int64:
			return float64(x), true
		case int:
			return float64(x), true
		case string:
			n, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			return n, err == nil && !math.IsInf(n, 0) && !math.IsNaN(n)
		}
	case ragopsv1alpha1.MetadataBoolean:
		switch x := raw.(type) {
		case bool:
			return x, true
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			return b, err == nil
		}
	case ragopsv1alpha1.MetadataDate:
		var s string
		switch x := raw.(type) {
		case string:
			s = strings.TrimSpace(x)
		case float64: // a bare year
			if x != math.Trunc(x) {
				return nil, false
			}
			s = strconv.FormatInt(int64(x), 10)
		default:
			return nil, false
		}
		t, ok := ParseDate(s)
		if !ok {
			return nil, false
		}
		return t.UTC().Format(time.RFC3339), true
	}
	return nil, false
}

func scalarText(raw any) (string, bool) {
	switch x := raw.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	}
	return "", false
}

// ParseDate reads a date as fields and filters write it: RFC 3339 (with or without
// fractional seconds), a date and time without a zone (UTC), a date 2006-01-02 or a year
// 2006 (the first instant of either, UTC).
func ParseDate(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02", "2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
