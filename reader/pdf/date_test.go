package pdf

import "testing"

func TestPDFDate(t *testing.T) {
	for in, want := range map[string]string{
		"D:20261130002109Z'":      "2026-11-30T00:21:09Z",
		"D:20210614093000+02'00'": "2021-06-14T09:30:00+02:00",
		"D:20210614093000-05'30":  "2021-06-14T09:30:00-05:30",
		"D:2021061409":            "2021-06-14T09:00:00Z",
		"D:2021":                  "2021-01-01T00:00:00Z",
		"20210614":                "2021-06-14T00:00:00Z",
		"D:20211314":              "D:20211314", // month 13
		" gisteren ":              "gisteren",
		"":                        "",
	} {
		if got := pdfDate(in); got != want {
			t.Errorf("pdfDate(%q) = %q, want %q", in, got, want)
		}
	}
}
