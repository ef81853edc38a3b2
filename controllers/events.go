package controllers

import "sigs.k8s.io/controller-runtime/pkg/event"

type evtUpdate = event.UpdateEvent
