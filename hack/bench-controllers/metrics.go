package main

import (
	"fmt"
	"io"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricSet is one scrape of a Prometheus text endpoint, keyed by family name.
type metricSet map[string]*dto.MetricFamily

func parseMetrics(r io.Reader) (metricSet, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return mfs, nil
}

func hasLabels(m *dto.Metric, match map[string]string) bool {
	for k, v := range match {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k && lp.GetValue() == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// sum adds the values of the counter or gauge series of family name whose labels include
// match (0 when there are none).
func (s metricSet) sum(name string, match map[string]string) float64 {
	mf := s[name]
	if mf == nil {
		return 0
	}
	var total float64
	for _, m := range mf.GetMetric() {
		if !hasLabels(m, match) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total
}

// histogram is a classic Prometheus histogram: cumulative counts per upper bound.
type histogram struct {
	bounds []float64 // upper bounds, ascending, +Inf last
	counts []float64 // cumulative counts
	sum    float64
}

// count is the number of observations.
func (h histogram) count() float64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// histogram merges the histogram series of family name whose labels include match.
func (s metricSet) histogram(name string, match map[string]string) histogram {
	mf := s[name]
	byBound := map[float64]float64{}
	var h histogram
	if mf == nil {
		return h
	}
	for _, m := range mf.GetMetric() {
		if m.Histogram == nil || !hasLabels(m, match) {
			continue
		}
		// The text format lists the +Inf bucket; the sample count stands in when it is absent.
		byBound[math.Inf(1)] += float64(m.GetHistogram().GetSampleCount())
		for _, b := range m.GetHistogram().GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) {
				byBound[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
		h.sum += m.GetHistogram().GetSampleSum()
	}
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	sort.Float64s(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	return h
}

// minus returns h - before (the observations between two scrapes of the same series).
func (h histogram) minus(before histogram) histogram {
	prev := map[float64]float64{}
	for i, b := range before.bounds {
		prev[b] = before.counts[i]
	}
	out := histogram{bounds: h.bounds, sum: h.sum - before.sum}
	for i, b := range h.bounds {
		out.counts = append(out.counts, h.counts[i]-prev[b])
	}
	return out
}

// quantile estimates the q-quantile (0 < q < 1) the way PromQL's histogram_quantile does:
// find the bucket holding rank q*count and interpolate linearly inside it, assuming the
// observations are spread evenly between its bounds; a rank in the +Inf bucket returns the
// highest finite bound. NaN when there are no observations.
func (h histogram) quantile(q float64) float64 {
	n := h.count()
	if n == 0 {
		return math.NaN()
	}
	rank := q * n
	lower, prevCount := 0.0, 0.0
	for i, b := range h.bounds {
		c := h.counts[i]
		if c >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			if c == prevCount {
				return b
			}
			return lower + (b-lower)*(rank-prevCount)/(c-prevCount)
		}
		lower, prevCount = b, c
	}
	return lower
}

// bucketOf returns the bounds (lower, upper] of the bucket holding the q-quantile's rank;
// upper is +Inf when the rank lies above the highest finite bound.
func (h histogram) bucketOf(q float64) (lower, upper float64) {
	rank := q * h.count()
	for i, b := range h.bounds {
		if h.counts[i] >= rank {
			return lower, b
		}
		lower = b
	}
	return lower, math.Inf(1)
}

// listsSince returns the kube-apiserver's LIST requests between two scrapes of its /metrics
// (apiserver_request_total{verb="LIST"}), in total and by resource. Informers list once when
// they start and then watch, so during a window without informer starts these are the
// manager's reads that bypass its cache (the benchmark's own clients list nothing then).
func listsSince(before, after metricSet) (total float64, byResource map[string]float64) {
	byResource = map[string]float64{}
	add := func(s metricSet, sign float64) {
		mf := s["apiserver_request_total"]
		if mf == nil {
			return
		}
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, map[string]string{"verb": "LIST"}) {
				continue
			}
			res := ""
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "resource" {
					res = lp.GetValue()
				}
			}
			v := sign * m.GetCounter().GetValue()
			byResource[res] += v
			total += v
		}
	}
	add(after, 1)
	add(before, -1)
	for k, v := range byResource {
		if v == 0 {
			delete(byResource, k)
		}
	}
	return total, byResource
}
