package controllers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/corpus"
	evalbeir "github.com/ragops/ragops/evaluator/beir"
	"github.com/ragops/ragops/experiment/budget"
	"github.com/ragops/ragops/experiment/trials"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/beir"
	"github.com/ragops/ragops/reader/markup"
	"github.com/ragops/ragops/reader/office"
)

// TrialEstimator estimates the tokens a trial's build will embed before it starts
// (experiment/budget). An error means no estimate can be had; the Experiment then starts the
// trial only while the budget is not spent and says so in the trial's message.
type TrialEstimator interface {
	EstimateTrial(ctx context.Context, exp *ragopsv1alpha1.Experiment, c *ragopsv1alpha1.Corpus, t *trials.Trial) (budget.Estimate, error)
}

// ErrNoEstimate wraps the reasons LocalEstimator cannot estimate a trial.
var ErrNoEstimate = errors.New("no token estimate")

// Sample size of LocalEstimator: max(estimateMinDocs, estimateFraction x N) documents.
const (
	estimateMinDocs  = 32
	estimateFraction = 0.05
)

// LocalEstimator estimates in the operator's process: it reads a ConfigMap Corpus (as the
// Corpus controller does: include/exclude, maxDocumentBytes), samples it with the
// Experiment's algorithm seed (budget.Sample: max(32, 5%) of the documents), reads the sample
// with the text, Markdown, HTML, DOCX, ODT and BEIR readers (a document none of them reads
// counts as read and skipped, 0 tokens) and chunks it with the model's tokenizer from
// ModelDir. Other Corpus sources and models not on the operator's disk give ErrNoEstimate.
type LocalEstimator struct {
	// Reader reads the Corpus's ConfigMap.
	Reader client.Reader
	// ModelDir returns the local folder of a model; nil means the model's imagePath when
	// that folder exists on the operator's file system.
	ModelDir func(ragopsv1alpha1.ModelSpec) (string, error)

	mu     sync.Mutex
	models map[string]budget.Model
}

func (e *LocalEstimator) modelDir(m ragopsv1alpha1.ModelSpec) (string, error) {
	if e.ModelDir != nil {
		return e.ModelDir(m)
	}
	if m.ImagePath == "" {
		return "", fmt.Errorf("%w: model %s is not an imagePath model", ErrNoEstimate, m.Name)
	}
	if st, err := os.Stat(m.ImagePath); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: model folder %s is not on the operator's file system", ErrNoEstimate, m.ImagePath)
	}
	return m.ImagePath, nil
}

func (e *LocalEstimator) model(m ragopsv1alpha1.ModelSpec) (budget.Model, error) {
	dir, err := e.modelDir(m)
	if err != nil {
		return budget.Model{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if bm, ok := e.models[dir]; ok {
		return bm, nil
	}
	bm, err := budget.LoadModel(dir)
	if err != nil {
		return budget.Model{}, fmt.Errorf("%w: %v", ErrNoEstimate, err)
	}
	if e.models == nil {
		e.models = map[string]budget.Model{}
	}
	e.models[dir] = bm
	return bm, nil
}

// EstimateTrial implements TrialEstimator.
func (e *LocalEstimator) EstimateTrial(ctx context.Context, exp *ragopsv1alpha1.Experiment, c *ragopsv1alpha1.Corpus, t *trials.Trial) (budget.Estimate, error) {
	if c.Spec.ConfigMap == nil {
		return budget.Estimate{}, fmt.Errorf("%w: Corpus %s is not a ConfigMap corpus (only those are sampled in the operator)", ErrNoEstimate, c.Name)
	}
	m, err := e.model(t.Model)
	if err != nil {
		return budget.Estimate{}, err
	}
	var cm corev1.ConfigMap
	if err := e.Reader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.ConfigMap.Name}, &cm); err != nil {
		return budget.Estimate{}, fmt.Errorf("%w: %v", ErrNoEstimate, err)
	}
	files := map[string][]byte{}
	for k, v := range cm.Data {
		files[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		files[k] = v
	}
	var units []budget.Unit
	var pop budget.Population
	for k, v := range files {
		ok, err := corpus.Selected(k, c.Spec.Include, c.Spec.Exclude)
		if err != nil {
			return budget.Estimate{}, fmt.Errorf("%w: %v", ErrNoEstimate, err)
		}
		if !ok || (c.Spec.MaxDocumentBytes > 0 && int64(len(v)) > c.Spec.MaxDocumentBytes) {
			continue
		}
		units = append(units, budget.Unit{Key: k, Bytes: int64(len(v))})
		pop.Documents++
		pop.Bytes += int64(len(v))
	}
	if len(units) == 0 {
		return budget.Estimate{}, fmt.Errorf("%w: Corpus %s selects no document", ErrNoEstimate, c.Name)
	}
	sort.Slice(units, func(i, j int) bool { return units[i].Key < units[j].Key })
	fraction := math.Max(estimateFraction, float64(estimateMinDocs)/float64(len(units)))
	mux := reader.NewMux(0, markup.Text{}, markup.Markdown{}, markup.HTML{}, office.DOCX{}, office.ODT{}, beir.Reader{})
	var docs []budget.Document
	for _, u := range budget.Sample(units, fraction, exp.Spec.Algorithm.Seed) {
		doc, err := mux.Read(ctx, files[u.Key])
		if err != nil {
			doc = reader.Document{} // skipped as a build skips it: no chunk, no token
		}
		docs = append(docs, budget.Document{Unit: u, Doc: doc})
	}
	return budget.EstimateTokens(ctx, *t.Strategy.Spec, m, docs, pop)
}

// sampleShare is the share of a corpus's documents a sample (spec.sample: every judged
// document plus fraction of the others) keeps: (J + fraction x (N - J)) / N for N documents
// of which J are judged, J the distinct corpus-ids of the dataset's qrels split (at most N).
// The judged documents are counted for a ConfigMap dataset in namespace; for another
// dataset, or one that cannot be read, the share is 1 and exact is false (an upper bound).
func sampleShare(ctx context.Context, rd client.Reader, namespace string, s *ragopsv1alpha1.DocumentSample, documents int64) (share float64, exact bool) {
	if s == nil || documents <= 0 {
		return 1, s == nil
	}
	var judged int64
	if ds := s.Judged; ds != nil {
		if ds.ConfigMap == nil {
			return 1, false
		}
		var cm corev1.ConfigMap
		if err := rd.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ds.ConfigMap.Name}, &cm); err != nil {
			log.FromContext(ctx).Info("judged documents of the sample not counted", "configMap", ds.ConfigMap.Name, "error", err.Error())
			return 1, false
		}
		judged = int64(len(judgedDocuments(cm.Data, ds.Split)))
	}
	judged = min(judged, documents)
	return min(1, (float64(judged)+s.Fraction*float64(documents-judged))/float64(documents)), true
}

// judgedDocuments returns the distinct corpus-ids of the qrels split in a ConfigMap dataset
// (key qrels-<split>.tsv or qrels/<split>.tsv; split "" is "test"; the header line skipped).
func judgedDocuments(data map[string]string, split string) map[string]bool {
	if split == "" {
		split = "test"
	}
	text, ok := data[evalbeir.ConfigMapQrelsKey(split)]
	if !ok {
		text = data["qrels/"+split+".tsv"]
	}
	out := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		f := strings.Split(strings.TrimRight(line, "\r"), "\t")
		if len(f) != 3 || (i == 0 && strings.TrimSpace(f[0]) == "query-id") {
			continue
		}
		if id := strings.TrimSpace(f[1]); id != "" {
			out[id] = true
		}
	}
	return out
}

// toSample scales a whole-corpus estimate of tokens over documents to the trial's sample
// (sampleShare, rounded up; the whole corpus's when the judged documents cannot be counted);
// a trial without spec.sample keeps it.
func (r *ExperimentReconciler) toSample(ctx context.Context, exp *ragopsv1alpha1.Experiment, t *trials.Trial, tokens, documents int64) int64 {
	if t.Index.Spec.Sample == nil {
		return tokens
	}
	share, _ := sampleShare(ctx, r.Options.reader(r.Client), exp.Namespace, t.Index.Spec.Sample, documents)
	return int64(math.Ceil(float64(tokens) * share))
}
