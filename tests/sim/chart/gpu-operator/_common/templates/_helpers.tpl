{{/* Stand-in gpu-operator chart helpers (project-written). */}}
{{- define "gpu-operator.fullname" -}}gpu-operator{{- end -}}

{{- define "gpu-operator.labels" -}}
app.kubernetes.io/name: gpu-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "gpu-operator.operatorImage" -}}
{{ .Values.operator.repository }}/{{ .Values.operator.image }}:{{ .Values.operator.version | default .Chart.AppVersion }}
{{- end -}}

{{- define "gpu-operator.validatorVersion" -}}
{{ .Values.validator.version | default .Chart.AppVersion }}
{{- end -}}
