package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A schedule whose slots come less than a minute apart (an @every interval) is refused at
// admission, naming spec.schedule; a minute and more, five-field schedules and the other
// descriptors are admitted. A concurrencyPolicy other than Forbid or Replace is refused.
func TestScheduleBelowAMinuteIsRejected(t *testing.T) {
	ctx := context.Background()
	for _, s := range []string{"@every 10s", "@every 59s", "@every 500ms", "@every 0.5m", "@every soon"} {
		t.Run("refused "+s, func(t *testing.T) {
			u := loadSample(t, "ragops_v1alpha1_evaluation.yaml")
			ensureNamespace(t, u.GetNamespace())
			u.SetName("schedule-" + strings.NewReplacer(" ", "-", "@", "", ".", "-").Replace(s))
			set("spec.schedule", s)(u.Object)
			requireRejected(t, ctx, u, []string{"spec.schedule", "an @every interval must be a duration of at least 1m"})
		})
	}
	for i, s := range []string{"@every 1m", "@every 1h30m", "@every 90s", "*/5 * * * *", "* * * * *", "@daily"} {
		u := loadSample(t, "ragops_v1alpha1_evaluation.yaml")
		ensureNamespace(t, u.GetNamespace())
		u.SetName("schedule-ok-" + string(rune('a'+i)))
		set("spec.schedule", s)(u.Object)
		if err := env.Client.Create(ctx, u); err != nil {
			t.Errorf("schedule %q refused: %v", s, err)
			continue
		}
		if got, _, _ := unstructured.NestedString(u.Object, "spec", "concurrencyPolicy"); got != "Forbid" {
			t.Errorf("schedule %q: concurrencyPolicy defaults to %q, want Forbid", s, got)
		}
		_ = env.Client.Delete(ctx, u)
	}
	u := loadSample(t, "ragops_v1alpha1_evaluation.yaml")
	ensureNamespace(t, u.GetNamespace())
	u.SetName("schedule-allow")
	set("spec.concurrencyPolicy", "Allow")(u.Object)
	requireRejected(t, ctx, u, []string{"spec.concurrencyPolicy", "Unsupported value"})
}
