{{/* The prefix of every object name: "ragops" unless fullnameOverride is set. */}}
{{- define "ragops.fullname" -}}
{{- default "ragops" .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object (the selector labels stay control-plane: controller-manager). */}}
{{- define "ragops.labels" -}}
app.kubernetes.io/name: ragops
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The manager's image: repository@digest when a digest pins it, else repository:tag. */}}
{{- define "ragops.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}
{{- end -}}

{{- define "ragops.serviceAccountName" -}}
{{ include "ragops.fullname" . }}-controller-manager
{{- end -}}
