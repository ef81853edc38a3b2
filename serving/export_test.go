package serving

// BatchJob is what OnBatch reports of one job of a batch: its texts and tokens.
type BatchJob struct{ Texts, Tokens int }

// OnBatch makes s's workers call f with each batch's jobs, in queue order, as the batch
// starts (its texts have left the queue, the model has not run yet). f may block, holding
// the worker busy as a long batch would. Set it before the first request.
func OnBatch(s *Server, f func(jobs []BatchJob)) {
	s.batcher.onBatch = func(batch []*job) {
		jobs := make([]BatchJob, len(batch))
		for i, j := range batch {
			jobs[i] = BatchJob{Texts: len(j.seqs), Tokens: j.tokens}
		}
		f(jobs)
	}
}
