package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// GetConditions returns a pointer to the Corpus's conditions.
func (c *Corpus) GetConditions() *[]metav1.Condition { return &c.Status.Conditions }

// GetConditions returns a pointer to the ChunkingStrategy's conditions.
func (c *ChunkingStrategy) GetConditions() *[]metav1.Condition { return &c.Status.Conditions }

// GetConditions returns a pointer to the Index's conditions.
func (i *Index) GetConditions() *[]metav1.Condition { return &i.Status.Conditions }

// GetConditions returns a pointer to the Evaluation's conditions.
func (e *Evaluation) GetConditions() *[]metav1.Condition { return &e.Status.Conditions }
