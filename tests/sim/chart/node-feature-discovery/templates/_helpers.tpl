{{/* Stand-in node-feature-discovery subchart helpers (project-written). */}}
{{- define "nfd.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default (printf "v%s" (.Chart.AppVersion | trimPrefix "v")) }}
{{- end -}}

{{- define "nfd.selector" -}}
app.kubernetes.io/name: node-feature-discovery
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nfd.fullname" -}}{{ .Release.Name }}-node-feature-discovery{{- end -}}
