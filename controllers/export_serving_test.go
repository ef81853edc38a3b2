package controllers

import "time"

// SetServingGrace sets how long a model server no Index needs is kept after its creation.
func SetServingGrace(d time.Duration) { servingGrace = d }
