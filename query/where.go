package query

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"

	"github.com/ragops/ragops/pipeline/docmeta"
)

// whereRe splits a --where condition into property, operator and value.
var whereRe = regexp.MustCompile(`^\s*([_A-Za-z][_0-9A-Za-z]*)\s*(>=|<=|!=|=|<|>|~)\s*(.*?)\s*$`)

// ParseWhere turns --where conditions into one Weaviate filter, all conditions ANDed. A
// condition is PROPERTY OP VALUE with OP one of = != < <= > >= ~:
//
//   - = and != compare with one value, or any of several separated by | (type=motie|amendement);
//     on a text[] property = matches chunks whose list holds any of them.
//   - < <= > >= compare int, number and date properties (range filters).
//   - ~ matches text with Weaviate's Like wildcards (* any text, ? one character).
//
// Values are typed by the property's data type in types (Store.PropertyTypes): int and
// number decimal, boolean true or false, date RFC 3339, 2006-01-02 or a year 2006 (its first
// instant, UTC). Text is compared whole (metadata text properties use field tokenization).
//
// Errors: a condition that does not parse, an unknown property, an operator the type does
// not take, a value that is not of the type; each names the condition and the property.
func ParseWhere(conds []string, types map[string]string) (*filters.WhereBuilder, error) {
	var ops []*filters.WhereBuilder
	for _, c := range conds {
		w, err := parseCondition(c, types)
		if err != nil {
			return nil, fmt.Errorf("query: --where %q: %w", c, err)
		}
		ops = append(ops, w)
	}
	switch len(ops) {
	case 0:
		return nil, nil
	case 1:
		return ops[0], nil
	}
	return filters.Where().WithOperator(filters.And).WithOperands(ops), nil
}

func parseCondition(c string, types map[string]string) (*filters.WhereBuilder, error) {
	m := whereRe.FindStringSubmatch(c)
	if m == nil {
		return nil, fmt.Errorf("want PROPERTY OP VALUE with OP one of = != < <= > >= ~ (e.g. year>=2018)")
	}
	name, op, raw := m[1], m[2], m[3]
	typ, ok := types[name]
	if !ok {
		names := make([]string, 0, len(types))
		for n := range types {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("property %s: the Index's collection has no such property (it has %s)", name, strings.Join(names, ", "))
	}
	values := []string{raw}
	if op == "=" || op == "!=" {
		values = strings.Split(raw, "|")
	}
	base := func() *filters.WhereBuilder { return filters.Where().WithPath([]string{name}) }
	operator := map[string]filters.WhereOperator{"=": filters.Equal, "!=": filters.NotEqual, "<": filters.LessThan,
		"<=": filters.LessThanEqual, ">": filters.GreaterThan, ">=": filters.GreaterThanEqual, "~": filters.Like}[op]
	ranged := op == "<" || op == "<=" || op == ">" || op == ">="
	switch typ {
	case "text", "text[]":
		switch {
		case ranged:
			return nil, fmt.Errorf("property %s is %s: compare it with =, != or ~", name, typ)
		case typ == "text[]" && op == "=":
			return base().WithOperator(filters.ContainsAny).WithValueText(values...), nil
		case typ == "text[]":
			return nil, fmt.Errorf("property %s is text[]: match it with = (any of the values)", name)
		case op == "=" && len(values) > 1:
			return base().WithOperator(filters.ContainsAny).WithValueText(values...), nil
		}
		return combine(op, values, func(v string) (*filters.WhereBuilder, error) {
			return base().WithOperator(operator).WithValueText(v), nil
		})
	case "int", "number", "date", "boolean":
		if op == "~" {
			return nil, fmt.Errorf("property %s is %s: ~ matches text only", name, typ)
		}
		if typ == "boolean" && ranged {
			return nil, fmt.Errorf("property %s is boolean: compare it with = or !=", name)
		}
		return combine(op, values, func(v string) (*filters.WhereBuilder, error) {
			b := base().WithOperator(operator)
			switch typ {
			case "int":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("property %s is int, %q is not an integer", name, v)
				}
				return b.WithValueInt(n), nil
			case "number":
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, fmt.Errorf("property %s is number, %q is not a number", name, v)
				}
				return b.WithValueNumber(n), nil
			case "boolean":
				x, err := strconv.ParseBool(v)
				if err != nil {
					return nil, fmt.Errorf("property %s is boolean, %q is not true or false", name, v)
				}
				return b.WithValueBoolean(x), nil
			}
			t, ok := docmeta.ParseDate(v)
			if !ok {
				return nil, fmt.Errorf("property %s is date, %q is not RFC 3339, 2006-01-02 or a year", name, v)
			}
			return b.WithValueDate(t), nil
		})
	}
	return nil, fmt.Errorf("property %s is %s: not filterable by --where", name, typ)
}

// combine builds one condition per value: several values of = are ORed (any of them), of !=
// ANDed (none of them).
func combine(op string, values []string, one func(string) (*filters.WhereBuilder, error)) (*filters.WhereBuilder, error) {
	var ops []*filters.WhereBuilder
	for _, v := range values {
		w, err := one(strings.TrimSpace(v))
		if err != nil {
			return nil, err
		}
		ops = append(ops, w)
	}
	if len(ops) == 1 {
		return ops[0], nil
	}
	join := filters.Or
	if op == "!=" {
		join = filters.And
	}
	return filters.Where().WithOperator(join).WithOperands(slices.Clip(ops)), nil
}
