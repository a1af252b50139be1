{{/*
Helpers of the operator's own templates (this file is not generated).
*/}}

{{/*
The seconds of a duration value: a whole number of s, m or h, the format
values.schema.json allows ("60s", "5m", "23h").
*/}}
{{- define "paymentjob-operator.seconds" -}}
{{- $n := regexFind "^[0-9]+" . | int -}}
{{- if hasSuffix "h" . -}}{{ mul $n 3600 }}
{{- else if hasSuffix "m" . -}}{{ mul $n 60 }}
{{- else -}}{{ $n }}
{{- end -}}
{{- end }}

{{/*
Refuses values that contradict each other, which the manager would refuse at
start (a crash loop): said at install instead, naming the values.
*/}}
{{- define "paymentjob-operator.validate" -}}
{{- $o := .Values.operator -}}
{{- $lease := include "paymentjob-operator.seconds" $o.claimLeaseDuration | int -}}
{{- $timeout := include "paymentjob-operator.seconds" $o.providerTimeout | int -}}
{{- if le $lease $timeout -}}
{{- fail (printf "operator.claimLeaseDuration (%s) must be longer than operator.providerTimeout (%s): a claim must outlive the provider call it covers" $o.claimLeaseDuration $o.providerTimeout) -}}
{{- end -}}
{{- if lt (include "paymentjob-operator.seconds" $o.ledger.retention | int) 86400 -}}
{{- fail (printf "operator.ledger.retention must be at least 24h, got %s" $o.ledger.retention) -}}
{{- end -}}
{{- if and (not $o.ledger.enabled) (ge (int $o.ttlSecondsAfterFinished) 0) -}}
{{- fail "operator.ttlSecondsAfterFinished needs operator.ledger.enabled: without the ledger, deleting a finished job deletes the only record that it was paid" -}}
{{- end -}}
{{- if and $o.ledger.enabled (eq $o.ledger.backend "postgres") -}}
{{- range $what, $file := dict "dsnFile" $o.ledger.postgres.dsnFile "caFile" $o.ledger.postgres.caFile -}}
{{- if $file -}}
{{- $mounted := false -}}
{{- range $.Values.manager.extraVolumeMounts -}}
{{- if hasPrefix (printf "%s/" (trimSuffix "/" .mountPath)) $file -}}{{- $mounted = true -}}{{- end -}}
{{- end -}}
{{- if not $mounted -}}
{{- fail (printf "operator.ledger.backend is postgres, and operator.ledger.postgres.%s (%s) is under none of manager.extraVolumeMounts: mount the Secret that holds it with manager.extraVolumes and manager.extraVolumeMounts (values.yaml shows how)" $what $file) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $flag := list "leader-elect" "max-concurrent-reconciles" "kube-api-qps" "kube-api-burst" "claim-lease-duration" "provider-timeout" "provider-key-retention" "ledger" "ledger-retention" "etcd-quota-bytes" "ledger-backend" "ledger-postgres-dsn-file" "ledger-postgres-ca-file" "ledger-postgres-max-conns" "ledger-cluster-name" "ledger-postgres-skip-migration-check" "ledger-postgres-durability" "ttl-seconds-after-finished" "insecure-provider-hosts" "audit-interval" "refund-recheck-interval" "refund-watch-period" "zap-log-level" "events-bind-address" -}}
{{- $found := false -}}
{{- range $.Values.manager.args -}}
{{- if hasPrefix (printf "--%s=" $flag) . -}}{{- $found = true -}}{{- end -}}
{{- end -}}
{{- if not $found -}}
{{- fail (printf "manager.args lacks --%s=...: a list of your own replaces the chart's, so keep its lines (values.yaml) and add your flags after them" $flag) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.events.ingress.enabled (not .Values.events.enabled) -}}
{{- fail "events.ingress.enabled needs events.enabled: the Ingress would route to no Service" -}}
{{- end -}}
{{- if and .Values.events.enabled .Values.events.ingress.enabled (not .Values.events.ingress.host) -}}
{{- fail "events.ingress.enabled needs events.ingress.host: the public host name the provider posts events to" -}}
{{- end -}}
{{- if and .Values.events.enabled (or (eq (int .Values.events.port) (int .Values.metrics.port)) (eq (int .Values.events.port) (int .Values.manager.healthProbe.port))) -}}
{{- fail (printf "events.port (%d) must differ from metrics.port and manager.healthProbe.port" (int .Values.events.port)) -}}
{{- end -}}
{{- if and .Values.prometheus.enabled (not .Values.metrics.enabled) -}}
{{- fail "prometheus.enabled needs metrics.enabled: the ServiceMonitor would select no Service" -}}
{{- end -}}
{{- if and (gt (int .Values.manager.replicas) 1) (not .Values.manager.leaderElection.enabled) -}}
{{- fail (printf "manager.replicas is %d: turn manager.leaderElection.enabled on, or run one replica" (int .Values.manager.replicas)) -}}
{{- end -}}
{{- end }}

{{/*
The labels of the operator's own templates, as the generated ones set them.
*/}}
{{- define "paymentjob-operator.labels" -}}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/name: {{ include "paymentjob-operator.name" . }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
