package ocr

import "strings"

// CharErrorRate returns the character error rate of hyp against ref: the Levenshtein
// distance (insertions, deletions, substitutions of code points) divided by the number of
// code points of ref, both with white space runs collapsed to one space (the usual OCR
// measure; e.g. R. Smith, "An Overview of the Tesseract OCR Engine", ICDAR 2007). 0 is a
// perfect reading; it can exceed 1. Memory: two rows of len(hyp) ints.
func CharErrorRate(ref, hyp string) float64 {
	r := []rune(strings.Join(strings.Fields(ref), " "))
	h := []rune(strings.Join(strings.Fields(hyp), " "))
	if len(r) == 0 {
		if len(h) == 0 {
			return 0
		}
		return 1
	}
	prev, cur := make([]int, len(h)+1), make([]int, len(h)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(r); i++ {
		cur[0] = i
		for j := 1; j <= len(h); j++ {
			cost := 1
			if r[i-1] == h[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return float64(prev[len(h)]) / float64(len(r))
}
