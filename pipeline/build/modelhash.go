package build

import (
	"fmt"

	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/internal/plan"
)

// checkModelHash returns the content hash of the model folder p.ModelDir
// (embedder.FolderHash) and refuses, with a *plan.Failure of plan.FailureModelChanged, a
// folder whose hash is not the revision's recorded p.ModelHash: the files at a model's path
// or image changed under an existing revision, and embedding with them would mix two models'
// vectors in one collection.
func checkModelHash(p plan.Build) (string, error) {
	hash, err := embedder.FolderHash(p.ModelDir)
	if err != nil {
		return "", err
	}
	if p.ModelHash != "" && hash != p.ModelHash {
		return hash, &plan.Failure{Reason: plan.FailureModelChanged, Err: fmt.Errorf("the model folder %s holds %s, but revision %s was embedded with %s: give spec.model a new source (path, image or checksum) to build a new revision, or restore the folder",
			p.ModelDir, hash, p.Revision, p.ModelHash)}
	}
	return hash, nil
}
