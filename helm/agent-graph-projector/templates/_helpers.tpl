{{/* Chart name, truncated to 63 characters. */}}
{{- define "agp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart unless the release name already contains the chart name. */}}
{{- define "agp.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "agp.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "agp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "agp.labels" -}}
helm.sh/chart: {{ include "agp.chart" . }}
{{ include "agp.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: agent-graph-projector
{{- end }}

{{- define "agp.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "agp.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "agp.image" -}}
{{- if and .Values.image.digest (not .Values.image.tag) }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository .Values.image.tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The projector's pods only: the migrate Job's pod shares the selector labels, not this one. The
Deployment's own selector stays as it was (it is immutable); the PDB and the Service add this label. */}}
{{- define "agp.projectorLabels" -}}
{{ include "agp.selectorLabels" . }}
app.kubernetes.io/component: projector
{{- end }}

{{/* Partition count the replica guards compare against. */}}
{{- define "agp.partitions" -}}
{{- default "6" (toString (index .Values.config "TOPIC_PARTITIONS" | default "")) }}
{{- end }}

{{/*
Environment of the projector and the migrate job: config (sorted), then the chart-owned keys, then
the credentials from existing Secrets, then extraEnv.
*/}}
{{- define "agp.env" -}}
{{- range $key, $value := .Values.config }}
{{- /* YAML numbers arrive as float64: print 3600000, not 3.6e+06. */}}
{{- if kindIs "float64" $value }}{{ $value = int64 $value }}{{ end }}
- name: {{ $key }}
  value: {{ toString $value | quote }}
{{- end }}
- name: METRICS_PORT
  value: {{ .Values.metrics.port | quote }}
- name: METRICS_HOST
  value: "0.0.0.0"
- name: SHUTDOWN_TIMEOUT_MS
  value: {{ .Values.shutdownTimeoutMs | int | toString | quote }}
- name: NODE_OPTIONS
  value: {{ printf "--max-old-space-size=%d --max-semi-space-size=16" (int .Values.nodeMaxOldSpaceMiB) | quote }}
{{- with .Values.secrets.neo4j }}
{{- if .existingSecret }}
{{- if $.Values.secrets.asFiles }}
- name: NEO4J_PASSWORD_FILE
  value: {{ printf "%s/neo4j/%s" $.Values.secrets.mountPath .passwordKey | quote }}
{{- else }}
- name: NEO4J_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .passwordKey }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.secrets.kafkaSasl }}
{{- if .existingSecret }}
- name: KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .usernameKey }}
{{- if $.Values.secrets.asFiles }}
- name: KAFKA_SASL_PASSWORD_FILE
  value: {{ printf "%s/kafka-sasl/%s" $.Values.secrets.mountPath .passwordKey | quote }}
{{- else }}
- name: KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .passwordKey }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.secrets.schemaRegistry }}
{{- if .existingSecret }}
- name: SCHEMA_REGISTRY_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .usernameKey }}
{{- if $.Values.secrets.asFiles }}
- name: SCHEMA_REGISTRY_PASSWORD_FILE
  value: {{ printf "%s/schema-registry/%s" $.Values.secrets.mountPath .passwordKey | quote }}
{{- else }}
- name: SCHEMA_REGISTRY_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .passwordKey }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Read-only mounts of the TLS files and (secrets.asFiles) the credential Secrets, after /tmp. */}}
{{- define "agp.fileMounts" -}}
{{- if .Values.tlsFiles.existingSecret }}
- name: tls-files
  mountPath: {{ .Values.tlsFiles.mountPath }}
  readOnly: true
{{- end }}
{{- if .Values.secrets.asFiles }}
{{- range $dir, $secret := dict "neo4j" .Values.secrets.neo4j "kafka-sasl" .Values.secrets.kafkaSasl "schema-registry" .Values.secrets.schemaRegistry }}
{{- if $secret.existingSecret }}
- name: secret-{{ $dir }}
  mountPath: {{ printf "%s/%s" $.Values.secrets.mountPath $dir }}
  readOnly: true
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- define "agp.fileVolumes" -}}
{{- if .Values.tlsFiles.existingSecret }}
- name: tls-files
  secret:
    secretName: {{ .Values.tlsFiles.existingSecret }}
    defaultMode: 0440
{{- end }}
{{- if .Values.secrets.asFiles }}
{{- range $dir, $secret := dict "neo4j" .Values.secrets.neo4j "kafka-sasl" .Values.secrets.kafkaSasl "schema-registry" .Values.secrets.schemaRegistry }}
{{- if $secret.existingSecret }}
- name: secret-{{ $dir }}
  secret:
    secretName: {{ $secret.existingSecret }}
    defaultMode: 0440
{{- end }}
{{- end }}
{{- end }}
{{- end }}
