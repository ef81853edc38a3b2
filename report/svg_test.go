package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The tests read the SVG the way a browser lays it out: every <text> and filled <path> with
// its position in page coordinates (points, y downwards), after the transforms of its groups
// and its own transform attribute.

// affine is an SVG transform matrix [a c e; b d f; 0 0 1].
type affine struct{ a, b, c, d, e, f float64 }

var identity = affine{a: 1, d: 1}

func (m affine) mul(n affine) affine {
	return affine{
		a: m.a*n.a + m.c*n.b, b: m.b*n.a + m.d*n.b,
		c: m.a*n.c + m.c*n.d, d: m.b*n.c + m.d*n.d,
		e: m.a*n.e + m.c*n.f + m.e, f: m.b*n.e + m.d*n.f + m.f,
	}
}

func (m affine) apply(x, y float64) (float64, float64) {
	return m.a*x + m.c*y + m.e, m.b*x + m.d*y + m.f
}

var transformFn = regexp.MustCompile(`(\w+)\(([^)]*)\)`)

func parseTransform(t *testing.T, s string) affine {
	m := identity
	for _, fn := range transformFn.FindAllStringSubmatch(s, -1) {
		var args []float64
		for _, a := range strings.FieldsFunc(fn[2], func(r rune) bool { return r == ',' || r == ' ' }) {
			v, err := strconv.ParseFloat(a, 64)
			if err != nil {
				t.Fatalf("transform %q: %v", s, err)
			}
			args = append(args, v)
		}
		var n affine
		switch fn[1] {
		case "scale":
			n = affine{a: args[0], d: args[len(args)-1]}
		case "translate":
			n = affine{a: 1, d: 1, e: args[0], f: args[1]}
		case "rotate":
			r := args[0] * math.Pi / 180
			n = affine{a: math.Cos(r), b: math.Sin(r), c: -math.Sin(r), d: math.Cos(r)}
		default:
			t.Fatalf("transform %q: unknown %s", s, fn[1])
		}
		m = m.mul(n)
	}
	return m
}

type svgText struct {
	s    string
	x, y float64 // anchor in page coordinates
	size float64 // font size in px
}

type box struct{ minX, maxX, minY, maxY float64 }

func (b box) overlaps(o box) bool {
	return b.minX < o.maxX && o.minX < b.maxX && b.minY < o.maxY && o.minY < b.maxY
}

type svgPath struct {
	fill   string // the style's fill colour, "" when not filled
	stroke string // the style's stroke colour, "" when not stroked
	box
	pts [][2]float64 // the path's points in page coordinates, in order
}

type svgDoc struct {
	width  float64
	texts  []svgText
	paths  []svgPath
	source string
}

var pathNumbers = regexp.MustCompile(`-?[0-9.]+(?:e-?[0-9]+)?`)

// parseSVG walks the document, keeping a stack of group transforms.
func parseSVG(t *testing.T, src string) svgDoc {
	t.Helper()
	doc := svgDoc{source: src}
	dec := xml.NewDecoder(strings.NewReader(src))
	stack := []affine{identity}
	var text *svgText
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("parse SVG: %v", err)
		}
		attr := func(e xml.StartElement, name string) string {
			for _, a := range e.Attr {
				if a.Name.Local == name {
					return a.Value
				}
			}
			return ""
		}
		switch e := tok.(type) {
		case xml.StartElement:
			ctm := stack[len(stack)-1].mul(parseTransform(t, attr(e, "transform")))
			switch e.Name.Local {
			case "svg":
				doc.width, _ = strconv.ParseFloat(strings.TrimSuffix(attr(e, "width"), "pt"), 64)
			case "text":
				x, _ := strconv.ParseFloat(attr(e, "x"), 64)
				y, _ := strconv.ParseFloat(attr(e, "y"), 64)
				px, py := ctm.apply(x, y)
				var size float64
				if m := regexp.MustCompile(`font-size:([0-9.]+)px`).FindStringSubmatch(attr(e, "style")); m != nil {
					size, _ = strconv.ParseFloat(m[1], 64)
				}
				text = &svgText{x: px, y: py, size: size}
			case "path":
				var fill string
				if m := regexp.MustCompile(`fill:(#[0-9A-Fa-f]{6})`).FindStringSubmatch(attr(e, "style")); m != nil {
					fill = strings.ToLower(m[1])
				}
				var stroke string
				if m := regexp.MustCompile(`stroke:(#[0-9A-Fa-f]{6})`).FindStringSubmatch(attr(e, "style")); m != nil {
					stroke = strings.ToLower(m[1])
				}
				nums := pathNumbers.FindAllString(attr(e, "d"), -1)
				b := box{math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)}
				var pts [][2]float64
				for i := 0; i+1 < len(nums); i += 2 {
					x, _ := strconv.ParseFloat(nums[i], 64)
					y, _ := strconv.ParseFloat(nums[i+1], 64)
					px, py := ctm.apply(x, y)
					b = box{math.Min(b.minX, px), math.Max(b.maxX, px), math.Min(b.minY, py), math.Max(b.maxY, py)}
					pts = append(pts, [2]float64{px, py})
				}
				doc.paths = append(doc.paths, svgPath{fill: fill, stroke: stroke, box: b, pts: pts})
			}
			stack = append(stack, ctm)
		case xml.CharData:
			if text != nil {
				text.s += string(e)
			}
		case xml.EndElement:
			if e.Name.Local == "text" && text != nil {
				text.s = strings.TrimSpace(text.s)
				doc.texts = append(doc.texts, *text)
				text = nil
			}
			stack = stack[:len(stack)-1]
		}
	}
	return doc
}

// text returns the texts equal to s.
func (d svgDoc) text(s string) []svgText {
	var out []svgText
	for _, tx := range d.texts {
		if tx.s == s {
			out = append(out, tx)
		}
	}
	return out
}

// fills returns the filled paths of a colour (#rrggbb, lower case).
func (d svgDoc) fills(c string) []svgPath {
	var out []svgPath
	for _, p := range d.paths {
		if p.fill == c {
			out = append(out, p)
		}
	}
	return out
}

// strokes returns the stroked paths of a colour (#rrggbb, lower case).
func (d svgDoc) strokes(c string) []svgPath {
	var out []svgPath
	for _, p := range d.paths {
		if p.stroke == c {
			out = append(out, p)
		}
	}
	return out
}

// textBox estimates a horizontal text's box from its anchor (left, baseline) and size: width
// 0.6 em per character, height one em above the baseline.
func textBox(tx svgText) box {
	return box{tx.x, tx.x + 0.6*tx.size*float64(len([]rune(tx.s))), tx.y - tx.size, tx.y}
}

func hex(r, g, b uint8) string { return fmt.Sprintf("#%02x%02x%02x", r, g, b) }
