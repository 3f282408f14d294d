{{/*
The chart's name, truncated to 63 characters (the limit of a DNS label).
*/}}
{{- define "mooring.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects: the release name, with the chart name unless it already holds it.
*/}}
{{- define "mooring.fullname" -}}
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

{{- define "mooring.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mooring.labels" -}}
helm.sh/chart: {{ include "mooring.chart" . }}
{{ include "mooring.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "mooring.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mooring.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "mooring.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mooring.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Cluster-scoped objects are named after the release namespace too, so that releases of the same name in two
namespaces do not fight over one ClusterRole.
*/}}
{{- define "mooring.clusterName" -}}
{{- printf "%s-%s" (include "mooring.fullname" .) .Release.Namespace | trunc 253 | trimSuffix "-" }}
{{- end }}

{{/*
The image: repository@digest when image.digest is set (immutable), else repository:tag (the chart's appVersion by
default).
*/}}
{{- define "mooring.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The port the agent listens on: config.server.port, 8080 when absent.
*/}}
{{- define "mooring.serverPort" -}}
{{- $server := .Values.config.server | default dict }}
{{- if hasKey $server "port" }}{{ int $server.port }}{{ else }}8080{{ end }}
{{- end }}

{{/*
How replicas work together: `shared` (each syncs a share of the deployments) by default with more than one replica,
`standby` (one syncs, the others wait on the Lease) with one, or as leaderElection.mode says.
*/}}
{{- define "mooring.replicaMode" -}}
{{- if .Values.leaderElection.mode -}}
{{- .Values.leaderElection.mode -}}
{{- else if gt (int .Values.replicaCount) 1 -}}
shared
{{- else -}}
standby
{{- end -}}
{{- end }}

{{/*
The agent's configuration as the chart runs it: the values' config, in the cluster, with the release namespace
as the agent's own namespace (its ledger and its Lease live there) and leader election from the values.
*/}}
{{- define "mooring.config" -}}
{{- $config := deepCopy (.Values.config | default dict) }}
{{- $cluster := $config.cluster | default dict }}
{{- $_ := set $cluster "inCluster" true }}
{{- $_ := set $cluster "namespace" .Release.Namespace }}
{{- $_ := set $config "cluster" $cluster }}
{{- $_ := set $config "apiVersion" "mooring.io/v1alpha1" }}
{{- $_ := set $config "kind" "AgentConfig" }}
{{- $election := deepCopy .Values.leaderElection }}
{{- $_ := set $election "mode" (include "mooring.replicaMode" .) }}
{{- $_ := set $config "leaderElection" $election }}
{{- if .Values.statusPage.enabled }}
{{- $server := $config.server | default dict }}
{{- $page := dict "enabled" true }}
{{- if .Values.statusPage.anonymous }}
{{- $_ := set $page "anonymous" true }}
{{- else }}
{{- $_ := set $page "token" (dict "file" "/var/run/secrets/mooring/status-page/token") }}
{{- end }}
{{- $_ := set $server "statusPage" $page }}
{{- $_ := set $config "server" $server }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/*
The namespaces the agent deploys to when rbac.scope is namespaces: rbac.namespaces plus the namespace of every
configured deployment, sorted and without duplicates.
*/}}
{{- define "mooring.targetNamespaces" -}}
{{- $namespaces := list }}
{{- range .Values.rbac.namespaces }}
{{- $namespaces = append $namespaces . }}
{{- end }}
{{- range (.Values.config.deployments | default list) }}
{{- if .namespace }}
{{- $namespaces = append $namespaces .namespace }}
{{- end }}
{{- end }}
{{- $namespaces | uniq | sortAlpha | toJson }}
{{- end }}

{{/*
The rules of the deploying role: rbac.clusterRules and rbac.extraRules.
*/}}
{{- define "mooring.deployRules" -}}
{{- /* Events on the objects it deploys, and the warnings a stability wait reads (docs/events.md), whatever clusterRules narrow. */ -}}
{{- $events := list (dict "apiGroups" (list "") "resources" (list "events") "verbs" (list "create" "patch" "list")) }}
{{- $rules := concat (.Values.rbac.clusterRules | default list) (.Values.rbac.extraRules | default list) $events }}
{{- if $rules }}
{{- toYaml $rules }}
{{- else }}
[]
{{- end }}
{{- end }}

{{/*
An emptyDir volume source from {medium, sizeLimit} (either may be empty), as inline JSON.
*/}}
{{- define "mooring.emptyDir" -}}
{{- $source := dict }}
{{- with .medium }}{{ $_ := set $source "medium" . }}{{ end }}
{{- with .sizeLimit }}{{ $_ := set $source "sizeLimit" . }}{{ end }}
{{- toJson $source }}
{{- end }}

{{/*
A duration of the values (250ms, 30s, 1h30m) in milliseconds, as the agent reads it.
*/}}
{{- define "mooring.durationMs" -}}
{{- $units := dict "ms" 1.0 "s" 1000.0 "m" 60000.0 "h" 3600000.0 "d" 86400000.0 -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ms|s|m|h|d)" (toString .) -1 -}}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" . -}}
{{- $total = addf $total (mulf (float64 $number) (get $units (trimPrefix $number .))) -}}
{{- end -}}
{{- $total -}}
{{- end }}
