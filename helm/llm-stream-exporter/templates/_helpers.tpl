{{/*
Named templates. The container and volume templates take a context with only
.Values (this chart's values) and .Release, so another chart can include them:
  {{- include "llm-stream-exporter.container" (dict "Values" (index .Values "llm-stream-exporter") "Release" .Release) | nindent 8 }}
They therefore never use .Chart, .Files or .Template.
*/}}

{{- define "llm-stream-exporter.name" -}}
{{- default "llm-stream-exporter" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "llm-stream-exporter.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "llm-stream-exporter.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "llm-stream-exporter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The port of /metrics, /-/healthy and /-/ready (container and Service):
service.port; the top-level `port` of chart 0.1 still wins for one release
(deprecated, NOTES.txt says so).
*/}}
{{- define "llm-stream-exporter.port" -}}
{{- $port := (.Values.service | default dict).port | default 9687 -}}
{{- if .Values.port }}{{ $port = .Values.port }}{{ end -}}
{{- int64 $port -}}
{{- end -}}

{{/* The number of shards in mode sharded (replicas; 1 in the other modes). */}}
{{- define "llm-stream-exporter.shardCount" -}}
{{- if eq (toString .Values.mode) "sharded" -}}{{- int64 (.Values.replicas | default 1) -}}{{- else -}}1{{- end -}}
{{- end -}}

{{- define "llm-stream-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "llm-stream-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "llm-stream-exporter.labels" -}}
helm.sh/chart: {{ include "llm-stream-exporter.chart" . }}
{{ include "llm-stream-exporter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: llm-stream-exporter
{{- end -}}

{{- define "llm-stream-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "llm-stream-exporter.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "llm-stream-exporter.configMapName" -}}
{{- if .Values.existingConfigMap -}}
{{- .Values.existingConfigMap -}}
{{- else -}}
{{- printf "%s-config" (include "llm-stream-exporter.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
The registry of an image: global.imageRegistry when set, else the image's own
registry ("" leaves the repository as written). Takes (dict "image" .. "Values" ..).
*/}}
{{- define "llm-stream-exporter.registry" -}}
{{- $registry := .image.registry | default "" -}}
{{- with (.Values.global | default dict).imageRegistry }}{{ $registry = . }}{{ end -}}
{{- trimSuffix "/" $registry -}}
{{- end -}}

{{/* The image reference: <registry>/<repository>, then @digest (wins) or :tag (default appVersion). */}}
{{- define "llm-stream-exporter.image" -}}
{{- $tag := .Values.image.tag -}}
{{- if and (not $tag) .Chart -}}{{- $tag = .Chart.AppVersion -}}{{- end -}}
{{- $repo := .Values.image.repository -}}
{{- with include "llm-stream-exporter.registry" (dict "image" .Values.image "Values" .Values) }}{{ $repo = printf "%s/%s" . $repo }}{{ end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repo .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (required "image.tag (or image.digest) is required when another chart includes the llm-stream-exporter container" $tag) -}}
{{- end -}}
{{- end -}}

{{/* "" or "/a/b": web.routePrefix, else the path of web.externalUrl (as the exporter derives it). */}}
{{- define "llm-stream-exporter.routePrefix" -}}
{{- $web := .Values.web | default dict -}}
{{- $p := "" -}}
{{- if $web.routePrefix -}}
{{- $p = $web.routePrefix -}}
{{- else if $web.externalUrl -}}
{{- $p = (urlParse $web.externalUrl).path -}}
{{- end -}}
{{- $p = trimAll "/" $p -}}
{{- if $p }}/{{ $p }}{{ end -}}
{{- end -}}

{{/* The path Prometheus scrapes: route prefix + web.telemetryPath. */}}
{{- define "llm-stream-exporter.metricsPath" -}}
{{- include "llm-stream-exporter.routePrefix" . -}}{{- (.Values.web | default dict).telemetryPath | default "/metrics" -}}
{{- end -}}

{{/* The paths of the kubelet probes, under the route prefix. */}}
{{- define "llm-stream-exporter.probePaths" -}}
liveness:
  path: /-/healthy
readiness:
  path: /-/ready
{{- end -}}

{{/* "true" when a web config is mounted (--web.config.file). */}}
{{- define "llm-stream-exporter.webConfigEnabled" -}}
{{- $wc := .Values.webConfig | default dict -}}
{{- if or $wc.config $wc.existingSecret }}true{{ end -}}
{{- end -}}

{{- define "llm-stream-exporter.webConfigSecretName" -}}
{{- $wc := .Values.webConfig | default dict -}}
{{- $wc.existingSecret | default (printf "%s-web-config" (include "llm-stream-exporter.fullname" .) | trunc 63 | trimSuffix "-") -}}
{{- end -}}

{{/* "true" when the exporter serves HTTPS (tls_server_config, or webConfig.tls for an existing Secret). */}}
{{- define "llm-stream-exporter.webTLS" -}}
{{- $wc := .Values.webConfig | default dict -}}
{{- if or $wc.tls (hasKey ($wc.config | default dict) "tls_server_config") }}true{{ end -}}
{{- end -}}

{{/* "true" when the web config asks for basic auth. */}}
{{- define "llm-stream-exporter.webBasicAuth" -}}
{{- $wc := .Values.webConfig | default dict -}}
{{- if ($wc.config | default dict).basic_auth_users }}true{{ end -}}
{{- end -}}

{{/*
"true" when a client must authenticate (basic auth, or a required client
certificate): the kubelet cannot, so the probes become TCP checks.
*/}}
{{- define "llm-stream-exporter.webAuth" -}}
{{- $wc := .Values.webConfig | default dict -}}
{{- $tls := (($wc.config | default dict).tls_server_config | default dict) -}}
{{- if or $wc.auth (include "llm-stream-exporter.webBasicAuth" .) (has (toString $tls.client_auth_type) (list "RequireAnyClientCert" "RequireAndVerifyClientCert")) }}true{{ end -}}
{{- end -}}

{{/* A Prometheus duration (1m30s, 500ms) in milliseconds. */}}
{{- define "llm-stream-exporter.durationMs" -}}
{{- $units := dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 "d" 86400000 "w" 604800000 "y" 31536000000 -}}
{{- $ms := 0 -}}
{{- range regexFindAll "[0-9]+(ms|y|w|d|h|m|s)" (toString .) -1 -}}
{{- $n := regexFind "^[0-9]+" . -}}
{{- $ms = add $ms (mul (int64 $n) (get $units (trimPrefix $n .))) -}}
{{- end -}}
{{- $ms -}}
{{- end -}}

{{/*
Refuses a monitor (serviceMonitor or podMonitor values; .name names it) that
cannot scrape: scrapeTimeout above interval, tlsConfig against plain HTTP, no
basicAuth while the web config asks for it.
*/}}
{{- define "llm-stream-exporter.validateMonitor" -}}
{{- $m := .monitor -}}
{{- if and $m.interval $m.scrapeTimeout -}}
{{- if gt (int64 (include "llm-stream-exporter.durationMs" $m.scrapeTimeout)) (int64 (include "llm-stream-exporter.durationMs" $m.interval)) -}}
{{- fail (printf "%s.scrapeTimeout %s exceeds %s.interval %s: Prometheus refuses a scrape timeout longer than the interval" .name (toString $m.scrapeTimeout) .name (toString $m.interval)) -}}
{{- end -}}
{{- end -}}
{{- if and $m.tlsConfig (not (include "llm-stream-exporter.webTLS" .ctx)) -}}
{{- fail (printf "%s.tlsConfig is set but the exporter serves plain HTTP: set webConfig.config.tls_server_config (or webConfig.tls with webConfig.existingSecret)" .name) -}}
{{- end -}}
{{- if and (include "llm-stream-exporter.webBasicAuth" .ctx) (not $m.basicAuth) -}}
{{- fail (printf "%s.basicAuth is required: webConfig.config.basic_auth_users turns on basic auth (username and password from a Secret; see docs/deploy.md)" .name) -}}
{{- end -}}
{{- end -}}

{{/* config.yaml: .Values.config with listen defaulted to ":<port>". */}}
{{- define "llm-stream-exporter.configYaml" -}}
{{- $cfg := deepCopy (.Values.config | default dict) -}}
{{- if not (hasKey $cfg "listen") -}}
{{- $_ := set $cfg "listen" (printf ":%s" (include "llm-stream-exporter.port" .)) -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* Changes whenever the rendered configuration changes: rolls the pods. */}}
{{- define "llm-stream-exporter.configChecksum" -}}
{{- $parts := list (include "llm-stream-exporter.configYaml" .) (toYaml (.Values.promptFiles | default dict)) .Values.existingConfigMap -}}
{{- join "\n---\n" $parts | sha256sum -}}
{{- end -}}

{{/*
Refuses values the chart cannot run as asked: an unknown mode, replicas that
would repeat every probe, no target, inline API keys, a key variable nothing
provides, a listen address off the port, flags the chart sets itself.
*/}}
{{- define "llm-stream-exporter.validate" -}}
{{- include "llm-stream-exporter.validateMode" . -}}
{{- include "llm-stream-exporter.validateKeys" . -}}
{{- include "llm-stream-exporter.validateArgs" . -}}
{{- $port := include "llm-stream-exporter.port" . -}}
{{- with (.Values.config | default dict).listen -}}
{{- if ne (splitList ":" (toString .) | last) $port -}}
{{- fail (printf "config.listen %q does not use port %s (set service.port instead)" (toString .) $port) -}}
{{- end -}}
{{- end -}}
{{- $wc := .Values.webConfig | default dict -}}
{{- if and $wc.config $wc.existingSecret -}}
{{- fail "webConfig: set either config (rendered into a Secret) or existingSecret, not both" -}}
{{- end -}}
{{- end -}}

{{/* mode and replicas: more than one replica only where each probes its own share. */}}
{{- define "llm-stream-exporter.validateMode" -}}
{{- $mode := toString .Values.mode -}}
{{- if not (has $mode (list "standalone" "daemonset" "sidecar" "sharded")) -}}
{{- fail (printf "mode must be standalone, daemonset, sidecar or sharded, not %q" $mode) -}}
{{- end -}}
{{- $replicas := int64 (.Values.replicas | default 0) -}}
{{- if and (eq $mode "sharded") (lt $replicas 1) -}}
{{- fail (printf "mode sharded needs replicas >= 1 (the number of shards), not %v" (toString .Values.replicas)) -}}
{{- end -}}
{{- if and (gt $replicas 1) (ne $mode "sharded") -}}
{{- fail (printf "replicas: %d in mode %s would run every probe %d times (paid requests and every series %d times): set mode: sharded to split the targets over %d replicas (--shard.index/--shard.count), or replicas: 1" $replicas $mode $replicas $replicas $replicas) -}}
{{- end -}}
{{- if and (eq $mode "sharded") (ne (toString (.Values.service | default dict).type | default "ClusterIP") "ClusterIP") -}}
{{- fail "mode sharded renders a headless Service (clusterIP: None): service.type must be ClusterIP" -}}
{{- end -}}
{{- $cfg := .Values.config | default dict -}}
{{- if and (not .Values.existingConfigMap) (not $cfg.targets) -}}
{{- fail "config.targets: list at least one target to probe (or set existingConfigMap); see https://github.com/llm-stream-exporter/llm-stream-exporter/blob/main/docs/deploy.md#helm-chart" -}}
{{- end -}}
{{- end -}}

{{/*
API keys come from a Secret, as a file (`secrets`) or as an environment
variable (extraEnv secretKeyRef, envFrom secretRef); never inline. A variable
the config names (auth.bearer_token_env, auth.env, headers {env: NAME}) must be
set by extraEnv/env, or may come from envFrom.
*/}}
{{- define "llm-stream-exporter.validateKeys" -}}
{{- $cfg := .Values.config | default dict -}}
{{- $needed := list -}}
{{- $sources := list -}}
{{- with $cfg.defaults }}{{ $sources = append $sources . }}{{ end -}}
{{- range $cfg.targets }}{{ $sources = append $sources . }}{{ end -}}
{{- range $sources -}}
{{- with .auth -}}
{{- if or (hasKey . "bearer_token") (hasKey . "api_key") -}}
{{- fail "config: an API key never goes in the values (auth.bearer_token/api_key are refused): take it from a Secret as a file (auth.bearer_token_file + `secrets`) or as a variable (auth.bearer_token_env + extraEnv secretKeyRef or envFrom)" -}}
{{- end -}}
{{- with .bearer_token_env }}{{ $needed = append $needed (toString .) }}{{ end -}}
{{- with .env }}{{ $needed = append $needed (toString .) }}{{ end -}}
{{- end -}}
{{- range $_, $h := (.headers | default dict) -}}
{{- if kindIs "map" $h }}{{ with $h.env }}{{ $needed = append $needed (toString .) }}{{ end }}{{ end -}}
{{- end -}}
{{- end -}}
{{- $envs := concat (.Values.env | default list) (.Values.extraEnv | default list) -}}
{{- $names := list -}}
{{- range $envs -}}
{{- $names = append $names (toString .name) -}}
{{- if has (toString .name) (list "NODE_NAME" "POD_NAME" "POD_NAMESPACE") -}}
{{- fail (printf "extraEnv %s is set by the chart from the downward API (mode sharded takes the shard index from POD_NAME)" .name) -}}
{{- end -}}
{{- if and .value (regexMatch "(?i)(key|token|secret|password)" (toString .name)) -}}
{{- fail (printf "extraEnv %s looks like a credential in plain text: take it from a Secret (valueFrom.secretKeyRef, or envFrom secretRef)" .name) -}}
{{- end -}}
{{- end -}}
{{- if not .Values.envFrom -}}
{{- range $needed -}}
{{- if not (has . $names) -}}
{{- fail (printf "config names the environment variable %s but nothing sets it: add extraEnv [{name: %s, valueFrom: {secretKeyRef: {name: <Secret>, key: <key>}}}] or envFrom [{secretRef: {name: <Secret>}}]" . .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* extraArgs: not the flags the chart sets from values. */}}
{{- define "llm-stream-exporter.validateArgs" -}}
{{- range .Values.extraArgs -}}
{{- if regexMatch "^--(config|config\\.file|web\\.config\\.file|web\\.listen-address|web\\.external-url|web\\.route-prefix|web\\.telemetry-path|log\\.level|log\\.format|dry-run)(=|$)" (toString .) -}}
{{- fail (printf "extraArgs: %s is set by the chart; use the values instead (service.port, log, web.*, webConfig)" (toString .)) -}}
{{- end -}}
{{- if regexMatch "^--shard\\.(index|count)(=|$)" (toString .) -}}
{{- fail (printf "extraArgs: %s is set by the chart: use mode: sharded with replicas: N" (toString .)) -}}
{{- end -}}
{{- if and (regexMatch "^--web\\.enable-lifecycle(=|$)" (toString .)) ($.Values.web | default dict).enableLifecycle -}}
{{- fail "extraArgs: --web.enable-lifecycle twice: web.enableLifecycle already passes it" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The exporter container; include with a context that has .Values and .Release. */}}
{{- define "llm-stream-exporter.container" -}}
{{- include "llm-stream-exporter.validate" . -}}
- name: llm-stream-exporter
  image: {{ include "llm-stream-exporter.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  {{- $web := .Values.web | default dict }}
  {{- $prefix := include "llm-stream-exporter.routePrefix" . }}
  {{- $paths := include "llm-stream-exporter.probePaths" . | fromYaml }}
  {{- /* --log.* are the program's flags: before the subcommand (`serve` refuses them) */}}
  args:
    - --log.level={{ .Values.log.level }}
    - --log.format={{ .Values.log.format }}
    - serve
    - --config.file=/etc/llm-stream-exporter/config.yaml
    {{- if include "llm-stream-exporter.webConfigEnabled" . }}
    - --web.config.file=/etc/llm-stream-exporter-web/{{ .Values.webConfig.key | default "web-config.yml" }}
    {{- end }}
    {{- if $web.enableLifecycle }}
    - --web.enable-lifecycle
    {{- end }}
    {{- with $web.externalUrl }}
    - {{ printf "--web.external-url=%s" . | quote }}
    {{- end }}
    {{- with $web.routePrefix }}
    - {{ printf "--web.route-prefix=%s" . | quote }}
    {{- end }}
    {{- if and $web.telemetryPath (ne $web.telemetryPath "/metrics") }}
    - {{ printf "--web.telemetry-path=%s" $web.telemetryPath | quote }}
    {{- end }}
    {{- if eq (toString .Values.mode) "sharded" }}
    {{- /* each replica probes the targets whose name hashes to its ordinal (POD_NAME's -N) */}}
    - --shard.index=auto
    - --shard.count={{ include "llm-stream-exporter.shardCount" . }}
    {{- end }}
    {{- range .Values.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  ports:
    - name: http-metrics
      containerPort: {{ include "llm-stream-exporter.port" . }}
      protocol: TCP
  env:
    - name: NODE_NAME
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    - name: POD_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    - name: POD_NAMESPACE
      valueFrom:
        fieldRef:
          fieldPath: metadata.namespace
    {{- with concat (.Values.env | default list) (.Values.extraEnv | default list) }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.envFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- /* basic auth or a required client certificate: the kubelet cannot authenticate */}}
  {{- $auth := include "llm-stream-exporter.webAuth" . }}
  {{- $scheme := ternary "HTTPS" "HTTP" (eq (include "llm-stream-exporter.webTLS" .) "true") }}
  livenessProbe:
    {{- if $auth }}
    tcpSocket:
      port: http-metrics
    {{- else }}
    httpGet:
      path: {{ $prefix }}{{ $paths.liveness.path }}
      port: http-metrics
      scheme: {{ $scheme }}
    {{- end }}
    {{- toYaml .Values.livenessProbe | nindent 4 }}
  readinessProbe:
    {{- if $auth }}
    tcpSocket:
      port: http-metrics
    {{- else }}
    httpGet:
      path: {{ $prefix }}{{ $paths.readiness.path }}
      port: http-metrics
      scheme: {{ $scheme }}
    {{- end }}
    {{- toYaml .Values.readinessProbe | nindent 4 }}
  resources:
    {{- toYaml .Values.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  volumeMounts:
    - name: llm-stream-exporter-config
      mountPath: /etc/llm-stream-exporter
      readOnly: true
    - name: llm-stream-exporter-tmp
      mountPath: /tmp
    {{- if include "llm-stream-exporter.webConfigEnabled" . }}
    - name: llm-stream-exporter-web-config
      mountPath: /etc/llm-stream-exporter-web
      readOnly: true
    {{- end }}
    {{- range $i, $s := .Values.secrets }}
    - name: llm-stream-exporter-secret-{{ $i }}
      mountPath: {{ required "secrets[].mountPath is required" $s.mountPath }}
      readOnly: true
    {{- end }}
    {{- if .Values.rowsVolume.enabled }}
    - name: llm-stream-exporter-rows
      mountPath: {{ .Values.rowsVolume.mountPath }}
    {{- end }}
    {{- with .Values.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* The exporter's volumes; include with the same context as the container. */}}
{{- define "llm-stream-exporter.volumes" -}}
- name: llm-stream-exporter-config
  configMap:
    name: {{ include "llm-stream-exporter.configMapName" . }}
    {{- if not .Values.existingConfigMap }}
    items:
      - key: config.yaml
        path: config.yaml
      {{- range $name, $_ := .Values.promptFiles }}
      - key: prompt-{{ $name }}
        path: prompts/{{ $name }}
      {{- end }}
    {{- end }}
- name: llm-stream-exporter-tmp
  emptyDir:
    sizeLimit: 16Mi
{{- if include "llm-stream-exporter.webConfigEnabled" . }}
- name: llm-stream-exporter-web-config
  secret:
    secretName: {{ include "llm-stream-exporter.webConfigSecretName" . }}
    defaultMode: {{ .Values.webConfig.defaultMode | default 288 }}
{{- end }}
{{- range $i, $s := .Values.secrets }}
- name: llm-stream-exporter-secret-{{ $i }}
  secret:
    secretName: {{ required "secrets[].name (an existing Secret) is required" $s.name }}
    {{- /* 0440 (288): readable through the pod's fsGroup; 0444 (292) when the pod has none */}}
    defaultMode: {{ $s.defaultMode | default 288 }}
    {{- with $s.items }}
    items:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end }}
{{- if .Values.rowsVolume.enabled }}
- name: llm-stream-exporter-rows
  emptyDir:
    sizeLimit: {{ .Values.rowsVolume.sizeLimit }}
{{- end }}
{{- end -}}

{{/* Pod template of the Deployment, the DaemonSet and the StatefulSet. */}}
{{- define "llm-stream-exporter.podTemplate" -}}
metadata:
  labels:
    {{- include "llm-stream-exporter.selectorLabels" . | nindent 4 }}
    app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ include "llm-stream-exporter.configChecksum" . }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "llm-stream-exporter.serviceAccountName" . }}
  automountServiceAccountToken: false
  enableServiceLinks: false
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  containers:
    {{- include "llm-stream-exporter.container" . | nindent 4 }}
    {{- with .Values.extraContainers }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  volumes:
    {{- include "llm-stream-exporter.volumes" . | nindent 4 }}
    {{- with .Values.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* Relabelings shared by the ServiceMonitor and the PodMonitor: node and location. */}}
{{- define "llm-stream-exporter.relabelings" -}}
- action: replace
  sourceLabels: [__meta_kubernetes_pod_node_name]
  targetLabel: node
{{- if .Values.location.enabled }}
{{- if .Values.location.value }}
- action: replace
  targetLabel: location
  replacement: {{ .Values.location.value | quote }}
{{- else }}
- action: replace
  sourceLabels:
    - __meta_kubernetes_node_label_{{ regexReplaceAll "[^a-zA-Z0-9_]" .Values.location.zoneLabel "_" }}
    - __meta_kubernetes_pod_node_name
  separator: /
  regex: "/?(.+)"
  replacement: "$1"
  targetLabel: location
{{- end }}
{{- end }}
{{- end -}}

{{- define "llm-stream-exporter.attachNodeMetadata" -}}
{{- and .Values.location.enabled (not .Values.location.value) -}}
{{- end -}}
