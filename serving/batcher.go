package serving

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragops/ragops/embedder"
)

// Task says which prefix a text is embedded with.
type Task int

// Tasks.
const (
	// TaskDocument embeds with the folder's document prefix (embedder.Model.EmbedTexts).
	TaskDocument Task = iota
	// TaskQuery embeds with the folder's query prefix (embedder.Model.EmbedQueries).
	TaskQuery
)

// String returns "document" or "query" (the task label of ragops_serve_texts_total).
func (t Task) String() string {
	if t == TaskQuery {
		return "query"
	}
	return "document"
}

// ErrQueueFull is returned by Embed when the queue cannot take the texts now (HTTP 429).
var ErrQueueFull = errors.New("serving: queue full")

// ErrClosed is returned by Embed after Close.
var ErrClosed = errors.New("serving: server is shut down")

// job is one request's texts, queued as a unit.
type job struct {
	ctx      context.Context
	task     Task
	texts    []string
	tokens   int
	enqueued time.Time
	vecs     [][]float32
	err      error
	done     chan struct{}
}

// batcher queues jobs and runs them through the model in micro-batches on its workers.
type batcher struct {
	model   *embedder.Model
	opts    Options
	metrics *metrics

	queue  chan *job
	queued atomic.Int64 // texts reserved in the queue (admitted, not yet taken into a batch)
	// lastBatch is the size in texts of the batch a worker formed last: above one, the next
	// batch waits for BatchWindow.
	lastBatch atomic.Int64

	mu     sync.RWMutex // guards closed against concurrent sends
	closed bool
	wg     sync.WaitGroup

	queryPre, docPre int // prefix tokens
}

func newBatcher(m *embedder.Model, opts Options, mx *metrics) *batcher {
	tok := m.Tokenizer()
	cfg := m.Config()
	b := &batcher{model: m, opts: opts, metrics: mx, queue: make(chan *job, opts.QueueSize)}
	if cfg.QueryPrefix != "" {
		b.queryPre = len(tok.EncodePrefix(cfg.QueryPrefix))
	}
	if cfg.DocumentPrefix != "" {
		b.docPre = len(tok.EncodePrefix(cfg.DocumentPrefix))
	}
	for range opts.Workers {
		b.wg.Go(b.work)
	}
	return b
}

// tokens returns the tokens text occupies in a batch for task: [CLS] prefix text [SEP], cut
// to the model's positions as the embedder cuts it.
func (b *batcher) tokens(task Task, text string) int {
	pre := b.docPre
	if task == TaskQuery {
		pre = b.queryPre
	}
	limit := b.model.Config().MaxPositions - 2
	return min(pre+b.model.Tokenizer().Size(text), limit) + 2
}

// submit admits texts as one job, or returns ErrQueueFull when fewer than len(texts) places
// are free (of QueueSize for a reserved job, of QueueSize-WeaviateReserve for others), or
// ErrClosed after close. tokens is the job's token count (batcher.tokens summed).
func (b *batcher) submit(ctx context.Context, task Task, texts []string, tokens int, reserved bool) (*job, error) {
	n := int64(len(texts))
	limit := int64(b.opts.QueueSize)
	if !reserved {
		limit -= int64(b.opts.WeaviateReserve)
	}
	for {
		cur := b.queued.Load()
		if cur+n > limit {
			return nil, ErrQueueFull
		}
		if b.queued.CompareAndSwap(cur, cur+n) {
			break
		}
	}
	j := &job{ctx: ctx, task: task, texts: texts, tokens: tokens, enqueued: time.Now(), done: make(chan struct{})}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		b.release(len(texts))
		return nil, ErrClosed
	}
	// The reservation guarantees a free slot: the channel holds at most QueueSize jobs of at
	// least one text each.
	b.queue <- j
	b.mu.RUnlock()
	b.metrics.queueDepth.Set(float64(b.queued.Load()))
	return j, nil
}

func (b *batcher) release(n int) {
	b.metrics.queueDepth.Set(float64(b.queued.Add(-int64(n))))
}

// close stops admitting jobs, lets the workers finish every queued job and waits for them.
func (b *batcher) close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.queue)
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// work is one worker: it takes the first waiting job, adds every job already queued and,
// when the previous batch held more than one text (clients are sending concurrently), waits
// for more until BatchWindow after the first job's arrival, up to MaxBatchTexts texts and
// MaxBatchTokens tokens; then it runs them as one batch. A job that would overflow the batch
// opens the next one. After a batch of one (a single client) it does not wait, so a lone
// client pays no window.
func (b *batcher) work() {
	var carry *job
	for {
		first := carry
		carry = nil
		if first == nil {
			var ok bool
			if first, ok = <-b.queue; !ok {
				return
			}
		}
		batch := []*job{first}
		texts, tokens := len(first.texts), first.tokens
		wait := b.lastBatch.Load() > 1
		timer := time.NewTimer(time.Until(first.enqueued.Add(b.opts.BatchWindow)))
		// add takes j into the batch, or carries it over when it does not fit; it reports
		// whether the batch can take more.
		add := func(j *job) bool {
			if texts+len(j.texts) > b.opts.MaxBatchTexts || tokens+j.tokens > b.opts.MaxBatchTokens {
				carry = j
				return false
			}
			batch = append(batch, j)
			texts += len(j.texts)
			tokens += j.tokens
			return texts < b.opts.MaxBatchTexts && tokens < b.opts.MaxBatchTokens
		}
	gather:
		for texts < b.opts.MaxBatchTexts && tokens < b.opts.MaxBatchTokens {
			select { // what is queued already joins without waiting
			case j, ok := <-b.queue:
				if !ok || !add(j) {
					break gather
				}
				continue
			default:
			}
			if !wait {
				break
			}
			select {
			case j, ok := <-b.queue:
				if !ok || !add(j) {
					break gather
				}
			case <-timer.C:
				break gather
			}
		}
		timer.Stop()
		b.lastBatch.Store(int64(texts))
		b.run(batch)
	}
}

// run embeds a batch: the query texts of its live jobs in one EmbedQueries call, the document
// texts in one EmbedTexts call (the embedder packs each into ONNX Runtime batches under its
// token budget). Jobs whose caller has gone are skipped.
func (b *batcher) run(batch []*job) {
	var q, d []string
	var qJobs, dJobs []*job
	n, tokens := 0, 0
	for _, j := range batch {
		n += len(j.texts)
		if j.ctx.Err() != nil {
			j.err = j.ctx.Err()
			continue
		}
		tokens += j.tokens
		if j.task == TaskQuery {
			q, qJobs = append(q, j.texts...), append(qJobs, j)
		} else {
			d, dJobs = append(d, j.texts...), append(dJobs, j)
		}
	}
	b.release(n)
	if live := len(q) + len(d); live > 0 {
		b.metrics.batchSize.Observe(float64(live))
		b.metrics.batchTokens.Observe(float64(tokens))
	}
	b.embed(TaskQuery, q, qJobs)
	b.embed(TaskDocument, d, dJobs)
	for _, j := range batch {
		close(j.done)
	}
}

// embed runs texts (the concatenated texts of jobs) and hands each job its vectors.
func (b *batcher) embed(task Task, texts []string, jobs []*job) {
	if len(texts) == 0 {
		return
	}
	// The embedding runs to completion even when callers leave meanwhile: ONNX Runtime
	// cannot be interrupted within a batch, and the other jobs need their vectors.
	ctx := context.Background()
	var vecs [][]float32
	var err error
	if task == TaskQuery {
		vecs, err = b.model.EmbedQueries(ctx, texts)
	} else {
		vecs, err = b.model.EmbedTexts(ctx, texts)
	}
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("serving: embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	k := 0
	for _, j := range jobs {
		if err != nil {
			j.err = err
			continue
		}
		j.vecs = vecs[k : k+len(j.texts)]
		k += len(j.texts)
	}
	if err == nil {
		b.metrics.texts.WithLabelValues(task.String()).Add(float64(len(texts)))
	}
}
