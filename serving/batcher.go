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

// job is one request's texts, queued as a unit: their model inputs, tokenized on the
// request's goroutine before it is queued.
type job struct {
	ctx      context.Context
	task     Task
	seqs     [][]int64 // one per text: [CLS] prefix text [SEP], cut to the model's positions
	tokens   int       // tokens of seqs together
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
	// intake counts requests whose body has been read and that are being parsed, checked
	// and tokenized by their handlers, not yet queued or refused: work of the server's own,
	// which no slow client can stretch. A worker with an empty queue waits for these (at
	// most BatchWindow) and for nothing else.
	intake atomic.Int64
	// arrived wakes a worker waiting for intake when a request leaves it.
	arrived chan struct{}

	// onBatch, when set (tests only: OnBatch), is called by run with each batch as it starts.
	onBatch func([]*job)

	mu     sync.RWMutex // guards closed against concurrent sends
	closed bool
	wg     sync.WaitGroup
}

func newBatcher(m *embedder.Model, opts Options, mx *metrics) *batcher {
	b := &batcher{model: m, opts: opts, metrics: mx, queue: make(chan *job, opts.QueueSize), arrived: make(chan struct{}, 1)}
	for range opts.Workers {
		b.wg.Go(b.work)
	}
	return b
}

// sequences tokenizes texts for task as the embedder does (embedder.Model.QuerySequences or
// TextSequences) and returns them with their token count.
func (b *batcher) sequences(task Task, texts []string) ([][]int64, int) {
	var seqs [][]int64
	if task == TaskQuery {
		seqs = b.model.QuerySequences(texts)
	} else {
		seqs = b.model.TextSequences(texts)
	}
	tokens := 0
	for _, q := range seqs {
		tokens += len(q)
	}
	return seqs, tokens
}

// arrive counts a request into intake; the returned func takes it out (once, however often
// it is called). Handlers call arrive once the body is read and leave before queueing.
func (b *batcher) arrive() (leave func()) {
	b.intake.Add(1)
	var left atomic.Bool
	return func() {
		if left.CompareAndSwap(false, true) {
			b.intake.Add(-1)
			select {
			case b.arrived <- struct{}{}:
			default:
			}
		}
	}
}

// submit admits seqs (one per text, tokens in all) as one job, or returns ErrQueueFull when
// fewer than len(seqs) places are free (of QueueSize for a reserved job, of
// QueueSize-WeaviateReserve for others), or ErrClosed after close.
func (b *batcher) submit(ctx context.Context, task Task, seqs [][]int64, tokens int, reserved bool) (*job, error) {
	n := int64(len(seqs))
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
	j := &job{ctx: ctx, task: task, seqs: seqs, tokens: tokens, enqueued: time.Now(), done: make(chan struct{})}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		b.release(len(seqs))
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

// work is one worker; it runs batches back to back. When free it takes the first queued job
// and every job queued behind it, up to MaxBatchTexts texts and MaxBatchTokens tokens (a job
// that would overflow the batch opens the next one), and runs them as one batch: requests
// that arrive while a batch runs make up the next one, sized by what waited, and no timer
// holds a batch while the model is idle. Only when the queue is empty and requests are being
// received (intake: read, being parsed and tokenized, about to be queued) does the batch wait
// for them, until BatchWindow after its first job was queued.
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
		texts, tokens := len(first.seqs), first.tokens
		// add takes j into the batch, or carries it over when it does not fit; it reports
		// whether the batch can take more.
		add := func(j *job) bool {
			if texts+len(j.seqs) > b.opts.MaxBatchTexts || tokens+j.tokens > b.opts.MaxBatchTokens {
				carry = j
				return false
			}
			batch = append(batch, j)
			texts += len(j.seqs)
			tokens += j.tokens
			return texts < b.opts.MaxBatchTexts && tokens < b.opts.MaxBatchTokens
		}
		var timer *time.Timer
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
			if b.intake.Load() == 0 {
				break
			}
			if timer == nil {
				timer = time.NewTimer(time.Until(first.enqueued.Add(b.opts.BatchWindow)))
			}
			select {
			case j, ok := <-b.queue:
				if !ok || !add(j) {
					break gather
				}
			case <-b.arrived: // a request left intake: queued (taken above) or refused
			case <-timer.C:
				break gather
			}
		}
		if timer != nil {
			timer.Stop()
		}
		b.run(batch)
	}
}

// run embeds a batch: the query sequences of its live jobs in one EmbedSequences call, the
// document sequences in another (the embedder packs each into ONNX Runtime batches under its
// token budget, padded to each one's longest sequence). Jobs whose caller has gone are
// skipped.
func (b *batcher) run(batch []*job) {
	var q, d [][]int64
	var qJobs, dJobs []*job
	n, tokens := 0, 0
	for _, j := range batch {
		n += len(j.seqs)
		if j.ctx.Err() != nil {
			j.err = j.ctx.Err()
			continue
		}
		tokens += j.tokens
		if j.task == TaskQuery {
			q, qJobs = append(q, j.seqs...), append(qJobs, j)
		} else {
			d, dJobs = append(d, j.seqs...), append(dJobs, j)
		}
	}
	b.release(n)
	if live := len(q) + len(d); live > 0 {
		b.metrics.batchSize.Observe(float64(live))
		b.metrics.batchTokens.Observe(float64(tokens))
	}
	if b.onBatch != nil {
		b.onBatch(batch)
	}
	b.embed(TaskQuery, q, qJobs)
	b.embed(TaskDocument, d, dJobs)
	for _, j := range batch {
		close(j.done)
	}
}

// embed runs seqs (the concatenated sequences of jobs) and hands each job its vectors.
func (b *batcher) embed(task Task, seqs [][]int64, jobs []*job) {
	if len(seqs) == 0 {
		return
	}
	// The embedding runs to completion even when callers leave meanwhile: ONNX Runtime
	// cannot be interrupted within a batch, and the other jobs need their vectors.
	vecs, err := b.model.EmbedSequences(context.Background(), seqs)
	if err == nil && len(vecs) != len(seqs) {
		err = fmt.Errorf("serving: embedder returned %d vectors for %d texts", len(vecs), len(seqs))
	}
	k := 0
	for _, j := range jobs {
		if err != nil {
			j.err = err
			continue
		}
		j.vecs = vecs[k : k+len(j.seqs)]
		k += len(j.seqs)
	}
	if err == nil {
		b.metrics.texts.WithLabelValues(task.String()).Add(float64(len(seqs)))
	}
}
