package chunkers

import (
	"math"
	"slices"
)

// contiguousQuadratic is the Contiguous clustering as it was before issue 22: the full n×n
// similarity matrix and an O(L²) reward loop per run. It stays as the reference the linear
// version is checked against (TestClusterLinearMatchesQuadratic) and benchmarked beside
// (BenchmarkLongDocument).
func (c *cluster) contiguousQuadratic(text string, ps []Chunk, vs [][]float64) []Chunk {
	n := len(ps)
	m := make([][]float64, n)
	var mean float64
	for i := range m {
		m[i] = make([]float64, n)
		for j := range i {
			m[i][j] = dot(vs[i], vs[j])
			m[j][i] = m[i][j]
			mean += m[i][j]
		}
	}
	mean /= float64(n * (n - 1) / 2)
	for i := range m {
		for j := range m[i] {
			if i != j {
				m[i][j] -= mean
			}
		}
	}
	best := make([]float64, n+1)
	from := make([]int, n+1)
	for i := 1; i <= n; i++ {
		best[i] = math.Inf(-1)
		reward, size := 0.0, 0
		for j := i - 1; j >= 0; j-- {
			size += ps[j].TokenCount
			if size > c.sp.max && j < i-1 {
				break
			}
			for k := j + 1; k < i; k++ {
				reward += 2 * m[j][k]
			}
			if s := best[j] + reward; s > best[i] {
				best[i], from[i] = s, j
			}
		}
	}
	var cuts []int
	for i := n; i > 0; i = from[i] {
		cuts = append(cuts, from[i])
	}
	slices.Reverse(cuts)
	var out []Chunk
	for k, j := range cuts {
		end := n
		if k+1 < len(cuts) {
			end = cuts[k+1]
		}
		out = c.pack(text, ps[j:end], out)
	}
	return out
}
