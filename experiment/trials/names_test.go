package trials

import (
	"strings"
	"testing"
)

func TestBoundedName(t *testing.T) {
	long := strings.Repeat("abcdefghij", 7) // 70 characters
	cases := []struct{ in, want string }{
		{"sweep-fixed-512-minilm", "sweep-fixed-512-minilm"},
		{"sweep-Heading_512-bge-small-en-v1.5", "sweep-heading-512-bge-small-en-v1-5"},
		{"--a..b--", "a-b"},
		{long, long[:54] + "-" + "13ff0d1d"},
		{long + "x", long[:54] + "-"},
		{"...", ""},
	}
	for _, tc := range cases {
		got := boundedName(tc.in)
		if len(got) > MaxNameLength {
			t.Errorf("%q -> %q: %d characters", tc.in, got, len(got))
		}
		switch {
		case tc.want == "":
			if len(got) != 8 {
				t.Errorf("%q -> %q, want 8 hex digits", tc.in, got)
			}
		case strings.HasSuffix(tc.want, "-"):
			if !strings.HasPrefix(got, tc.want) || len(got) != MaxNameLength {
				t.Errorf("%q -> %q, want %q and 8 hex digits", tc.in, got, tc.want)
			}
		case len(tc.want) == MaxNameLength:
			if !strings.HasPrefix(got, tc.want[:55]) || len(got) != MaxNameLength {
				t.Errorf("%q -> %q, want %q", tc.in, got, tc.want)
			}
		default:
			if got != tc.want {
				t.Errorf("%q -> %q, want %q", tc.in, got, tc.want)
			}
		}
	}
	if a, b := boundedName(long), boundedName(long+"x"); a == b {
		t.Errorf("two long names with the same head give one name %q", a)
	}
}
