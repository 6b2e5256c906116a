{{/* Names and labels shared by the templates. */}}

{{- define "strait.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* <release>-strait, or the release name when it already contains the chart name. */}}
{{- define "strait.fullname" -}}
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

{{/* The namespace the agent keeps its state in: fixed by the agent, not by the release. */}}
{{- define "strait.systemNamespace" -}}strait-system{{- end }}

{{- define "strait.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "strait.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component (agent, gateway). */}}
{{- define "strait.selectorLabels" -}}
app.kubernetes.io/name: {{ include "strait.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "strait.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "strait.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "strait.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "strait.webhookServiceName" -}}
{{- printf "%s-webhook" (include "strait.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The host in the webhook URL the agent registers (and its serving certificate names). */}}
{{- define "strait.webhookHost" -}}
{{- default (printf "%s.%s.svc" (include "strait.webhookServiceName" .) .Release.Namespace) .Values.webhook.urlHost }}
{{- end }}

{{/* The gateway container, shared by the sidecar and the Deployment. */}}
{{- define "strait.gatewayContainer" -}}
- name: gateway
  image: {{ include "strait.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  command: [{{ .Values.image.command | quote }}]
  args:
    - gateway
    - --config=/etc/strait/gateway/{{ .Values.gateway.configKey }}
    - --interface={{ .Values.gateway.interface }}
    - --uapi-dir=/var/run/wireguard
    - --log-level={{ .Values.gateway.logLevel }}
    {{- range .Values.gateway.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  ports:
    - name: tunnel
      containerPort: {{ .Values.gateway.port }}
      protocol: UDP
  resources:
    {{- toYaml .Values.gateway.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.gateway.securityContext | nindent 4 }}
  volumeMounts:
    - name: gateway-config
      mountPath: /etc/strait/gateway
      readOnly: true
    - name: dev-net-tun
      mountPath: /dev/net/tun
    - name: wireguard-run
      mountPath: /var/run/wireguard
{{- end }}

{{- define "strait.gatewayVolumes" -}}
- name: gateway-config
  secret:
    secretName: {{ required "gateway.configSecret is required when gateway.enabled is true" .Values.gateway.configSecret }}
- name: dev-net-tun
  hostPath:
    path: /dev/net/tun
    type: CharDevice
- name: wireguard-run
  emptyDir: {}
{{- end }}

{{/*
"true" when the chart's own ServiceAccount, in strait-system, owns the agent's endpoint
ConfigMap and leader Lease (so helm uninstall garbage-collects them); "" otherwise.
*/}}
{{- define "strait.ownsAgentState" -}}
{{- if and .Values.serviceAccount.create (eq .Release.Namespace (include "strait.systemNamespace" .)) -}}true{{- end -}}
{{- end }}
