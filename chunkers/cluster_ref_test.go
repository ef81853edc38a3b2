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
	return c.packRuns(text, ps, c.contiguousCutsQuadratic(ps, vs))
}

// contiguousCutsQuadratic is the old dynamic programme; it returns the first piece of
// every run.
func (c *cluster) contiguousCutsQuadratic(ps []Chunk, vs [][]float64) []int {
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
	return cuts
}

// partitionScore is the clustering objective of a partition (runs starting at cuts):
// the sum over runs of the pairwise cosine similarities inside each run, less the mean
// similarity of all pairs per pair, computed pair by pair.
func partitionScore(vs [][]float64, cuts []int) float64 {
	n := len(vs)
	var mean float64
	for i := range n {
		for j := range i {
			mean += dot(vs[i], vs[j])
		}
	}
	mean /= float64(n * (n - 1) / 2)
	var score float64
	for k, a := range cuts {
		b := n
		if k+1 < len(cuts) {
			b = cuts[k+1]
		}
		for i := a; i < b; i++ {
			for j := i + 1; j < b; j++ {
				score += 2 * (dot(vs[i], vs[j]) - mean)
			}
		}
	}
	return score
}
