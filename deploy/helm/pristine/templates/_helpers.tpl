{{/* The name of the chart's objects. */}}
{{- define "pristine.name" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The root inside the container. */}}
{{- define "pristine.root" -}}
{{- if eq .Values.mode "statefulset" -}}/pristine/root{{- else -}}/var/lib/pristine{{- end -}}
{{- end -}}

{{/* The directory of the scratch image. */}}
{{- define "pristine.images" -}}
{{- if eq .Values.mode "statefulset" -}}/pristine/images{{- else -}}/var/lib/pristine-images{{- end -}}
{{- end -}}

{{/* The Secret holding the token, group tokens and CA. */}}
{{- define "pristine.secret" -}}
{{- .Values.existingSecret | default (printf "%s-node" (include "pristine.name" .)) -}}
{{- end -}}

{{- define "pristine.labels" -}}
app.kubernetes.io/name: {{ include "pristine.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
