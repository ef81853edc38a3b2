package svcproxy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestEndpointRules(t *testing.T) {
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.1.0.2",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if !ready(pod) {
		t.Error("a Running, Ready pod with an address is an endpoint")
	}
	notReady := pod.DeepCopy()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	deleting := pod.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	pending := pod.DeepCopy()
	pending.Status.Phase = corev1.PodPending
	for name, p := range map[string]*corev1.Pod{"not ready": notReady, "deleting": deleting, "pending": pending} {
		if ready(p) {
			t.Errorf("a %s pod is not an endpoint", name)
		}
	}
	for _, tc := range []struct {
		tp   intstr.IntOrString
		want int
		ok   bool
	}{{intstr.FromString("http"), 8080, true}, {intstr.FromInt32(9000), 9000, true}, {intstr.IntOrString{}, 80, true}, {intstr.FromString("grpc"), 0, false}} {
		got, ok := targetPort(pod, corev1.ServicePort{Port: 80, TargetPort: tc.tp, Protocol: corev1.ProtocolTCP})
		if got != tc.want || ok != tc.ok {
			t.Errorf("targetPort %v = %d %v, want %d %v", tc.tp, got, ok, tc.want, tc.ok)
		}
	}
	svc := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIPs: []string{"127.2.0.5"}}}
	if ips := clusterIPs(svc); len(ips) != 1 || ips[0].String() != "127.2.0.5" {
		t.Errorf("clusterIPs = %v", ips)
	}
	for _, s := range []*corev1.Service{
		{Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.5"}},                // not a loopback range: not proxied
		{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}},      // headless
		{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}}, // no ClusterIP
	} {
		if ips := clusterIPs(s); len(ips) != 0 {
			t.Errorf("clusterIPs(%+v) = %v, want none", s.Spec, ips)
		}
	}
}
