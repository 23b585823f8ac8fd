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

{{/* The migrate hook's service account: the projector's, or, when the chart creates that one (after
the hooks on a first install), its hook-time copy. */}}
{{- define "agp.migrateServiceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- printf "%s-migrate" (include "agp.serviceAccountName" .) | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- include "agp.serviceAccountName" . }}
{{- end }}
{{- end }}

{{/* The migrate hook's shell line when migrateJob.sidecarQuitUrl is set: runs the image's entrypoint
with the hook's args, then asks the injected proxy to exit, and exits with migrate's own code. */}}
{{- define "agp.sidecarQuit" -}}
node bin/agent-graph-projector.js "$@"; code=$?; node -e 'fetch(process.argv[1], { method: "POST", signal: AbortSignal.timeout(5000) }).catch(() => {})' {{ .Values.migrateJob.sidecarQuitUrl | squote }}; exit $code
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

{{/* The Secret the chart renders from secrets.*.password, and its copy for the migrate hook. */}}
{{- define "agp.credentialsSecret" -}}
{{- printf "%s-credentials" (include "agp.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "agp.migrateCredentialsSecret" -}}
{{- printf "%s-migrate-credentials" (include "agp.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Data of the chart's own Secret (YAML map, key: plain value), empty when no password is a value. */}}
{{- define "agp.credentialsData" -}}
{{- range $name, $dir := dict "neo4j" "neo4j" "kafkaSasl" "kafka-sasl" "schemaRegistry" "schema-registry" }}
{{- with (index $.Values.secrets $name).password }}
{{ $dir }}-password: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Every credential, as files of Secret volumes mounted without subPath: the kubelet updates such files in
place when the Secret changes (never a subPath mount nor an env var), and the service re-reads them
when a connection is established or re-established. A YAML list, one entry per mounted directory
(secrets.mountPath/<dir>): the Secret, and per file the key, the file name and the env var naming it.
Called with (dict "root" $ "hook" bool): the migrate hook reads the chart's passwords from its copy.
*/}}
{{- define "agp.credentialMounts" -}}
{{- $root := .root }}
{{- $s := $root.Values.secrets }}
{{- $own := ternary (include "agp.migrateCredentialsSecret" $root) (include "agp.credentialsSecret" $root) .hook }}
{{- $mounts := list }}
{{- range $p := list (list "neo4j" "neo4j" "NEO4J_PASSWORD_FILE") (list "kafkaSasl" "kafka-sasl" "KAFKA_SASL_PASSWORD_FILE") (list "schemaRegistry" "schema-registry" "SCHEMA_REGISTRY_PASSWORD_FILE") }}
{{- $v := index $s (index $p 0) }}
{{- $dir := index $p 1 }}
{{- if $v.existingSecret }}
{{- $mounts = append $mounts (dict "dir" $dir "secret" $v.existingSecret "files" (list (dict "key" $v.passwordKey "path" $v.passwordKey "env" (index $p 2)))) }}
{{- else if $v.password }}
{{- $mounts = append $mounts (dict "dir" $dir "secret" $own "files" (list (dict "key" (printf "%s-password" $dir) "path" "password" "env" (index $p 2)))) }}
{{- end }}
{{- end }}
{{- range $p := list (list "kafkaTls" "kafka" "KAFKA_SSL_CA_FILE" "KAFKA_SSL_CERT_FILE" "KAFKA_SSL_KEY_FILE") (list "neo4jTls" "neo4j" "NEO4J_TRUSTED_CA_FILE" "NEO4J_CLIENT_CERT_FILE" "NEO4J_CLIENT_KEY_FILE") (list "schemaRegistryTls" "schema-registry" "SCHEMA_REGISTRY_CA_FILE" "SCHEMA_REGISTRY_CERT_FILE" "SCHEMA_REGISTRY_KEY_FILE") }}
{{- $v := index $s (index $p 0) | default dict }}
{{- with $v.ca }}
{{- if .existingSecret }}
{{- $mounts = append $mounts (dict "dir" (printf "%s-ca" (index $p 1)) "secret" .existingSecret "files" (list (dict "key" .key "path" .key "env" (index $p 2)))) }}
{{- end }}
{{- end }}
{{- with $v.clientCert }}
{{- if .existingSecret }}
{{- $files := list (dict "key" .certKey "path" .certKey "env" (index $p 3)) (dict "key" .keyKey "path" .keyKey "env" (index $p 4)) }}
{{- $mounts = append $mounts (dict "dir" (printf "%s-client-cert" (index $p 1)) "secret" .existingSecret "files" $files) }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $mounts }}
{{- end }}

{{/*
Environment of the projector and the migrate job: config (sorted), then the chart-owned keys, then
the credential files and user names, then extraEnv. Called with (dict "root" $ "hook" bool).
*/}}
{{- define "agp.env" -}}
{{- $root := .root }}
{{- with $root }}
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
{{- range $mount := include "agp.credentialMounts" $ | fromYamlArray }}
{{- range $mount.files }}
- name: {{ .env }}
  value: {{ printf "%s/%s/%s" $root.Values.secrets.mountPath $mount.dir .path | quote }}
{{- end }}
{{- end }}
{{- /* The service has no *_USERNAME_FILE: a user name from a Secret key is read when the pod starts. */}}
{{- range $name, $env := dict "kafkaSasl" "KAFKA_SASL_USERNAME" "schemaRegistry" "SCHEMA_REGISTRY_USERNAME" }}
{{- $v := index $root.Values.secrets $name }}
{{- if $v.username }}
- name: {{ $env }}
  value: {{ $v.username | quote }}
{{- else if $v.existingSecret }}
- name: {{ $env }}
  valueFrom:
    secretKeyRef:
      name: {{ $v.existingSecret }}
      key: {{ $v.usernameKey }}
{{- end }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}
{{- end }}

{{/* Read-only mounts of the TLS files and the credential Secrets, after /tmp. Same argument as agp.env. */}}
{{- define "agp.fileMounts" -}}
{{- $root := .root }}
{{- if $root.Values.tlsFiles.existingSecret }}
- name: tls-files
  mountPath: {{ $root.Values.tlsFiles.mountPath }}
  readOnly: true
{{- end }}
{{- range include "agp.credentialMounts" . | fromYamlArray }}
- name: secret-{{ .dir }}
  mountPath: {{ printf "%s/%s" $root.Values.secrets.mountPath .dir }}
  readOnly: true
{{- end }}
{{- end }}

{{- define "agp.fileVolumes" -}}
{{- $root := .root }}
{{- if $root.Values.tlsFiles.existingSecret }}
- name: tls-files
  secret:
    secretName: {{ $root.Values.tlsFiles.existingSecret }}
    defaultMode: 0440
{{- end }}
{{- range include "agp.credentialMounts" . | fromYamlArray }}
- name: secret-{{ .dir }}
  secret:
    secretName: {{ .secret }}
    defaultMode: 0440
    items:
      {{- range .files }}
      - key: {{ .key | quote }}
        path: {{ .path | quote }}
      {{- end }}
{{- end }}
{{- end }}
