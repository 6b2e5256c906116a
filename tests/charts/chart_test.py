#!/usr/bin/env python3
"""Checks the Helm chart charts/strait with the real helm 3 (installed by
scripts/install-deps.sh into the build tree's tools directory):

  - every value in values.yaml has a `# --` comment and a row in docs/install.md's table;
  - `helm lint --strict` is clean with the default values and with all-features.yaml;
  - `helm template` renders objects that parse, with exactly the kinds the values ask for,
    the agent flags, ports, webhook URL and security contexts they imply, and RBAC rules that
    are exactly the audited list below (no wildcard);
  - values that break values.schema.json (invalid-values.yaml) are refused, naming each field;
  - with --strait: the chart's appVersion is `strait version`'s, and on a minicluster the
    ForeignCluster CRD in crds/ is the one a real `strait agent` installs, and helm install
    --wait, upgrade and uninstall work (without the chart's RBAC objects: the minicluster
    serves no rbac.authorization.k8s.io yet).

Usage: chart_test.py --helm HELM --chart DIR [--strait STRAIT] [--kubectl KUBECTL]
Exit 0 when every check passes; each failure is printed with what was expected.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))

# (apiGroup, resource, verb) the ClusterRoles grant with the default values: what the agent
# calls, audited from its code (docs/install.md, "Permissions"). A change here is a change of
# the agent's rights and must be deliberate.
CLUSTER_RULES = {
    "agent": {
        ("apiextensions.k8s.io", "customresourcedefinitions", "create"),
        ("apiextensions.k8s.io", "customresourcedefinitions", "get"),
        ("strait.io", "foreignclusters", "get"),
        ("strait.io", "foreignclusters", "list"),
        ("strait.io", "foreignclusters", "watch"),
        ("strait.io", "foreignclusters/status", "patch"),
        ("", "namespaces", "get"),
        ("", "namespaces", "create"),
        ("", "nodes", "get"),
    },
    "consumer": {
        ("", "nodes", "get"), ("", "nodes", "create"), ("", "nodes", "update"),
        ("", "nodes", "delete"), ("", "nodes/status", "update"),
        ("", "pods", "get"), ("", "pods", "list"), ("", "pods", "watch"), ("", "pods", "patch"),
        ("", "pods", "delete"), ("", "pods/status", "update"), ("", "pods/status", "patch"),
        ("", "configmaps", "get"), ("", "secrets", "get"), ("", "serviceaccounts", "get"),
        ("", "namespaces", "get"), ("", "namespaces", "list"), ("", "namespaces", "watch"),
        ("", "events", "create"),
        ("certificates.k8s.io", "certificatesigningrequests", "get"),
        ("certificates.k8s.io", "certificatesigningrequests", "create"),
        ("certificates.k8s.io", "certificatesigningrequests/approval", "update"),
        ("certificates.k8s.io", "signers", "approve"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "create"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "get"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "update"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "create"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "get"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "update"),
        ("strait.io", "offloadingoverrides", "list"), ("strait.io", "offloadingoverrides", "watch"),
        ("authorization.k8s.io", "subjectaccessreviews", "create"),
        ("", "services", "list"), ("", "services", "watch"),
        ("discovery.k8s.io", "endpointslices", "list"),
        ("discovery.k8s.io", "endpointslices", "watch"),
    },
    "provider": {
        ("strait.io", "foreignclusters", "create"), ("strait.io", "foreignclusters", "update"),
        ("strait.io", "foreignclusters", "delete"),
        ("", "namespaces", "get"), ("", "namespaces", "list"), ("", "namespaces", "create"),
        ("", "namespaces", "patch"), ("", "namespaces", "delete"),
        ("", "nodes", "list"), ("", "nodes", "watch"),
        ("", "pods", "get"), ("", "pods", "list"), ("", "pods", "watch"), ("", "pods", "create"),
        ("", "pods", "update"), ("", "pods", "delete"),
        ("", "events", "list"), ("", "events", "watch"),
        ("", "pods/log", "get"), ("", "pods/exec", "get"), ("", "pods/exec", "create"),
        ("metrics.k8s.io", "pods", "list"),
    } | {("", r, v) for r in ("configmaps", "secrets", "serviceaccounts", "services")
         for v in ("get", "list", "create", "update", "delete")} | {
        ("discovery.k8s.io", "endpointslices", v)
        for v in ("get", "list", "create", "update", "delete")},
}
# Rules restricted to named objects: (apiGroup, resource, verb) -> resourceNames.
NAMED_RULES = {
    ("apiextensions.k8s.io", "customresourcedefinitions", "get"): ["foreignclusters.strait.io"],
    ("certificates.k8s.io", "signers", "approve"): ["kubernetes.io/kubelet-serving"],
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "get"): ["strait-offloading"],
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "update"): ["strait-offloading"],
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "get"):
        ["strait-offloading-overrides"],
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "update"):
        ["strait-offloading-overrides"],
}
SYSTEM_ROLE_RULES = {("", r, v) for r in ("secrets", "configmaps")
                     for v in ("get", "list", "create", "update", "delete")} | {
    ("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")} | {
    ("", "serviceaccounts", "get")}  # the chart's own ServiceAccount, by name
NODE_LEASE_RULES = {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}


class Checks:
    def __init__(self):
        self.failures = []
        self.current = ""

    def section(self, name):
        self.current = name
        print(f"--- {name}", flush=True)

    def expect(self, cond, what):
        if not cond:
            self.failures.append(f"{self.current}: {what}")
            print(f"FAIL {what}", flush=True)
        return cond

    def equal(self, got, want, what):
        return self.expect(got == want, f"{what}: got {got!r}, want {want!r}")


class Helm:
    def __init__(self, binary, chart, home):
        self.binary = binary
        self.chart = chart
        self.env = dict(os.environ)
        for var, sub in (("HELM_CACHE_HOME", "cache"), ("HELM_CONFIG_HOME", "config"),
                         ("HELM_DATA_HOME", "data")):
            self.env[var] = os.path.join(home, sub)

    def run(self, *args):
        p = subprocess.run([self.binary, *args], env=self.env, capture_output=True, text=True,
                           timeout=120)
        return p.returncode, p.stdout + p.stderr

    def lint(self, *args):
        return self.run("lint", "--strict", self.chart, *args)

    def template(self, *args, namespace="strait-system"):
        rc, out = self.run("template", "strait", self.chart, "-n", namespace, *args)
        docs = []
        if rc == 0:
            docs = [d for d in yaml.safe_load_all(out) if d is not None]
        return rc, out, docs


def by_kind(docs, kind):
    return [d for d in docs if d.get("kind") == kind]


def one(docs, kind, name):
    found = [d for d in docs if d.get("kind") == kind and d["metadata"]["name"] == name]
    return found[0] if len(found) == 1 else None


def rule_set(role, c):
    out = set()
    for r in role.get("rules", []):
        for field in ("apiGroups", "resources", "verbs", "resourceNames"):
            c.expect("*" not in r.get(field, []),
                     f"{role['kind']} {role['metadata']['name']}: no wildcard in {field}: {r}")
        for g in r["apiGroups"]:
            for res in r["resources"]:
                for v in r["verbs"]:
                    key = (g, res, v)
                    out.add(key)
                    if key in NAMED_RULES:
                        c.equal(r.get("resourceNames"), NAMED_RULES[key],
                                f"{role['metadata']['name']}: resourceNames of {key}")
    return out


def container(deploy, name):
    for ctr in deploy["spec"]["template"]["spec"]["containers"]:
        if ctr["name"] == name:
            return ctr
    return None


def capabilities_added(docs):
    """(deployment, container) -> added capabilities, for every container rendered."""
    out = {}
    for d in by_kind(docs, "Deployment"):
        for ctr in d["spec"]["template"]["spec"]["containers"]:
            caps = (ctr.get("securityContext") or {}).get("capabilities") or {}
            out[(d["metadata"]["name"], ctr["name"])] = caps.get("add", [])
    return out


def check_common(docs, c):
    for d in docs:
        c.expect(isinstance(d.get("apiVersion"), str) and isinstance(d.get("kind"), str) and
                 d.get("metadata", {}).get("name"), f"object has apiVersion, kind and name: {d}")
        c.expect(d["metadata"].get("labels", {}).get("app.kubernetes.io/managed-by") == "Helm",
                 f"{d['kind']} {d['metadata']['name']} is labelled as Helm's")
    c.expect(one(docs, "ConfigMap", "strait-kubeconfig") is None,
             "no kubeconfig ConfigMap: the agent uses its ServiceAccount in-cluster")
    agent = one(docs, "Deployment", "strait-agent")
    if c.expect(agent is not None, "Deployment strait-agent rendered"):
        ctr = container(agent, "agent")
        sc = ctr["securityContext"]
        c.expect(sc.get("runAsNonRoot") is True and sc.get("allowPrivilegeEscalation") is False
                 and sc.get("capabilities", {}).get("drop") == ["ALL"],
                 f"agent container non-root without capabilities: {sc}")
        c.equal(agent["spec"]["strategy"]["type"], "Recreate", "agent rollout strategy")
        c.equal(ctr["readinessProbe"]["httpGet"], {"path": "/readyz/leader", "port": "health"},
                "readiness: /readyz/leader on the health port (a standby is not Ready)")
        c.expect(not any(a.startswith("--kubeconfig") for a in ctr["args"]),
                 f"no --kubeconfig: in-cluster config ({ctr['args']})")
        c.expect(not any(v.get("name") == "kubeconfig"
                         for v in agent["spec"]["template"]["spec"].get("volumes", [])),
                 "no kubeconfig volume")
        c.expect(any(a.startswith("--health-listen=0.0.0.0:") for a in ctr["args"]),
                 f"--health-listen in {ctr['args']}")
        health = [p["containerPort"] for p in ctr["ports"] if p["name"] == "health"]
        c.expect(len(health) == 1 and f"--health-listen=0.0.0.0:{health[0]}" in ctr["args"],
                 f"health container port matches --health-listen: {ctr['ports']}")
        env = {e["name"]: e for e in ctr.get("env", [])}
        c.equal(env.get("POD_IP", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath"),
                "status.podIP", "POD_IP from the downward API")
        c.equal(agent["spec"]["template"]["spec"]["serviceAccountName"], "strait",
                "agent ServiceAccount")
    # The fabric DaemonSet has a ServiceAccount of its own (check_fabric).
    binding_subjects = [s for d in by_kind(docs, "ClusterRoleBinding") + by_kind(docs, "RoleBinding")
                        if d["metadata"]["labels"].get("app.kubernetes.io/component") != "fabric"
                        for s in d["subjects"]]
    c.expect(binding_subjects and all(s == {"kind": "ServiceAccount", "name": "strait",
                                            "namespace": "strait-system"}
                                      for s in binding_subjects),
             f"every binding names the agent's ServiceAccount: {binding_subjects}")
    for d in by_kind(docs, "ClusterRoleBinding") + by_kind(docs, "RoleBinding"):
        ref_kind = d["roleRef"]["kind"]
        c.expect(one(docs, ref_kind, d["roleRef"]["name"]) is not None,
                 f"{d['kind']} {d['metadata']['name']} refers to a rendered {ref_kind}")


def check_webhook(docs, c, host, port, service):
    svc = one(docs, "Service", "strait-webhook")
    if c.expect(svc is not None, "webhook Service rendered"):
        c.equal([(p["port"], p["targetPort"]) for p in svc["spec"]["ports"]], [(port, "webhook")],
                "webhook Service port")
    mwc = one(docs, "MutatingWebhookConfiguration", "strait-offloading")
    if c.expect(mwc is not None, "MutatingWebhookConfiguration strait-offloading rendered"):
        if service:
            refs = [w["clientConfig"].get("service") for w in mwc["webhooks"]]
            c.equal(refs, [{"namespace": "strait-system", "name": "strait-webhook",
                            "path": path, "port": port}
                           for path in ("/mutate-pods", "/mutate-daemonsets")],
                    "webhook Service references")
            c.expect(all("url" not in w["clientConfig"] for w in mwc["webhooks"]),
                     "no url beside the Service reference")
        else:
            urls = [w["clientConfig"].get("url") for w in mwc["webhooks"]]
            c.equal(urls, [f"https://{host}:{port}/mutate-pods",
                           f"https://{host}:{port}/mutate-daemonsets"], "webhook URLs")
        c.expect(all("caBundle" not in w["clientConfig"] for w in mwc["webhooks"]),
                 "no caBundle in the chart (the agent injects its CA)")
        c.equal([w["failurePolicy"] for w in mwc["webhooks"]], ["Ignore", "Ignore"],
                "failurePolicy")
    vwc = one(docs, "ValidatingWebhookConfiguration", "strait-offloading-overrides")
    if c.expect(vwc is not None, "ValidatingWebhookConfiguration strait-offloading-overrides"):
        w = vwc["webhooks"][0]
        want_cc = ({"service": {"namespace": "strait-system", "name": "strait-webhook",
                                "path": "/validate-offloadingoverrides", "port": port}}
                   if service else {"url": f"https://{host}:{port}/validate-offloadingoverrides"})
        c.equal(w["clientConfig"], want_cc, "override webhook clientConfig (no caBundle)")
        c.equal(w["failurePolicy"], "Fail", "override webhook refuses when the agent is down")
        c.equal(w["rules"][0]["resources"], ["offloadingoverrides"], "override webhook rules")
    args = container(one(docs, "Deployment", "strait-agent"), "agent")["args"]
    c.expect(f"--webhook-host={host}" in args and f"--webhook-listen=0.0.0.0:{port}" in args,
             f"agent serves the webhook at {host}:{port}: {args}")
    c.equal("--webhook-service=strait-system/strait-webhook" in args, service,
            f"agent registers the webhook by Service reference: {args}")


def check_default(helm, c):
    c.section("helm template, default values")
    rc, out, docs = helm.template("--set", "clusterName=home")
    if not c.expect(rc == 0, f"renders (rc {rc}): {out[-2000:]}"):
        return
    kinds = sorted(d["kind"] for d in docs)
    c.equal(kinds, sorted(["ServiceAccount", "ClusterRole", "ClusterRole",
                           "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding",
                           "ClusterRoleBinding", "Role", "Role", "RoleBinding", "RoleBinding",
                           "Service", "Service", "Deployment", "MutatingWebhookConfiguration",
                           "ValidatingWebhookConfiguration"]),
            "kinds rendered")
    check_common(docs, c)
    for suffix, want in CLUSTER_RULES.items():
        role = one(docs, "ClusterRole", f"strait-{suffix}")
        if c.expect(role is not None, f"ClusterRole strait-{suffix} rendered"):
            got = rule_set(role, c)
            c.expect(got == want, f"ClusterRole strait-{suffix} rules: extra {sorted(got - want)}, "
                                  f"missing {sorted(want - got)}")
    roles = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in by_kind(docs, "Role")}
    if c.expect(("strait-system", "strait-agent") in roles, "Role strait-system/strait-agent"):
        c.equal(rule_set(roles[("strait-system", "strait-agent")], c), SYSTEM_ROLE_RULES,
                "Role strait-system/strait-agent rules")
    if c.expect(("kube-node-lease", "strait-node-lease") in roles,
                "Role kube-node-lease/strait-node-lease"):
        c.equal(rule_set(roles[("kube-node-lease", "strait-node-lease")], c), NODE_LEASE_RULES,
                "Role kube-node-lease/strait-node-lease rules")
    agent = one(docs, "Deployment", "strait-agent")
    c.equal([x["name"] for x in agent["spec"]["template"]["spec"]["containers"]], ["agent"],
            "containers of the agent Pod")
    c.equal(agent["spec"]["replicas"], 1, "agent replicas")
    ctr = container(agent, "agent")
    c.equal(ctr["image"], "strait:0.1.0", "image (repository:appVersion)")
    args = ctr["args"]
    for flag in ("agent", "--health-listen=0.0.0.0:8081", "--cluster-name=home",
                 "--listen=0.0.0.0:7443", "--link-listen=0.0.0.0:7444",
                 "--advertise=$(POD_IP):7443", "--leader-lease-duration=15s",
                 "--pod-security=baseline", "--share=0.5", "--vnode-address=$(POD_IP)",
                 "--kubelet-port=10250", "--metrics-listen=0.0.0.0:9090",
                 "--owner-service-account=strait"):
        c.expect(flag in args, f"agent flag {flag} in {args}")
    c.expect("--owner-owns-identity" not in args, "the identity is kept on uninstall by default")
    rc, out, owned = helm.template("--set", "clusterName=home", "--set",
                                   "identity.keepOnUninstall=false")
    if c.expect(rc == 0, f"helm template with identity.keepOnUninstall=false: {out[-800:]}"):
        owned_args = container(one(owned, "Deployment", "strait-agent"), "agent")["args"]
        c.expect("--owner-owns-identity" in owned_args,
                 f"identity.keepOnUninstall=false: --owner-owns-identity in {owned_args}")
    c.expect(not any(a.startswith(("--budget", "--no-")) for a in args),
             f"no optional flags by default: {args}")
    c.expect(("metrics", 9090) in [(p["name"], p["containerPort"]) for p in ctr["ports"]],
             "metrics container port by default")
    c.equal(ctr["livenessProbe"]["httpGet"], {"path": "/livez", "port": "health"},
            "liveness: /livez on the health port by default")
    c.equal(capabilities_added(docs), {("strait-agent", "agent"): []},
            "no container adds a capability")
    svc = one(docs, "Service", "strait-agent")
    c.equal(svc["spec"]["type"], "ClusterIP", "peering Service type")
    c.equal([(p["name"], p["port"]) for p in svc["spec"]["ports"]],
            [("grpc", 7443), ("link", 7444), ("metrics", 9090)], "peering Service ports")
    check_webhook(docs, c, "strait-webhook.strait-system.svc", 9443, True)


def check_node_port_advertise(helm, c):
    c.section("helm template, NodePort peering Service with fixed node ports")
    rc, out, docs = helm.template("--set", "clusterName=cloud", "--set", "service.type=NodePort",
                                  "--set", "service.grpcNodePort=30743",
                                  "--set", "service.linkNodePort=30744")
    if not c.expect(rc == 0, f"renders (rc {rc}): {out[-2000:]}"):
        return
    ctr = container(one(docs, "Deployment", "strait-agent"), "agent")
    args = ctr["args"]
    for flag in ("--advertise=$(HOST_IP):30743", "--link-advertise=$(HOST_IP):30744"):
        c.expect(flag in args, f"agent flag {flag} (node address and node port) in {args}")
    c.expect({"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}}
             in ctr["env"], f"HOST_IP from status.hostIP: {ctr['env']}")
    svc = one(docs, "Service", "strait-agent")
    c.equal([(p["name"], p.get("nodePort")) for p in svc["spec"]["ports"]][:2],
            [("grpc", 30743), ("link", 30744)], "peering Service node ports")
    rc, out, docs = helm.template("--set", "clusterName=cloud", "--set", "service.type=NodePort",
                                  "--set", "service.grpcNodePort=30743",
                                  "--set", "agent.advertise=198.51.100.7:443")
    args = container(one(docs, "Deployment", "strait-agent"), "agent")["args"] if rc == 0 else []
    c.expect("--advertise=198.51.100.7:443" in args and
             not any(a.startswith("--link-advertise") for a in args),
             f"agent.advertise wins over the node port: {args}")


def check_all_features(helm, c):
    c.section("helm template, all-features.yaml")
    rc, out, docs = helm.template("-f", os.path.join(HERE, "all-features.yaml"))
    if not c.expect(rc == 0, f"renders (rc {rc}): {out[-2000:]}"):
        return
    check_common(docs, c)
    c.equal(sorted(d["kind"] for d in docs if d["kind"] not in ("ClusterRole", "ClusterRoleBinding",
                                                                 "Role", "RoleBinding")),
            sorted(["ServiceAccount", "ServiceAccount", "Service", "Service", "Service",
                    "Deployment", "Deployment", "DaemonSet", "MutatingWebhookConfiguration",
                    "ValidatingWebhookConfiguration", "ServiceMonitor", "PodMonitor"]),
            "kinds rendered (besides RBAC)")
    agent = one(docs, "Deployment", "strait-agent")
    spec = agent["spec"]["template"]["spec"]
    c.equal(agent["spec"]["replicas"], 2, "agent replicas")
    ctr = container(agent, "agent")
    c.equal(ctr["image"], "registry.example.com/strait/strait:0.1.0-test", "image")
    c.equal(ctr["imagePullPolicy"], "Always", "pull policy")
    c.equal(spec.get("imagePullSecrets"), [{"name": "regcred"}], "imagePullSecrets")
    c.equal(spec.get("priorityClassName"), "system-cluster-critical", "priorityClassName")
    c.equal(spec.get("nodeSelector"), {"kubernetes.io/os": "linux"}, "nodeSelector")
    c.equal(len(spec.get("tolerations", [])), 1, "tolerations")
    c.equal(agent["spec"]["template"]["metadata"]["annotations"].get("example.com/scrape"), "true",
            "pod annotation")
    args = ctr["args"]
    for flag in ("--cluster-name=cloud-1", "--advertise=203.0.113.10:31443",
                 "--link-advertise=203.0.113.10:31444", "--leader-lease-duration=20s",
                 "--log-level=debug", "--cert-ttl=2h", "--heartbeat-interval=2s",
                 "--lost-after=6s", "--share=0.25", "--budget=cpu=8,memory=16Gi,pods=110",
                 "--max-per-consumer=cpu=4", "--pod-security=restricted",
                 "--kubelet-port=10251", "--vnode-taint-effect=NoSchedule",
                 "--vnode-stream-grace=1m", "--vnode-pod-workers=16",
                 "--metrics-listen=0.0.0.0:9102", "--stream-workers=32"):
        c.expect(flag in args, f"agent flag {flag} in {args}")
    c.equal((ctr["livenessProbe"]["httpGet"], ctr["livenessProbe"]["initialDelaySeconds"]),
            ({"path": "/healthz", "port": "health"}, 60), "liveness probe from values")
    c.expect("--health-listen=0.0.0.0:18081" in args, f"agent.healthPort 18081 in {args}")
    c.expect({"name": "EXAMPLE", "value": "1"} in ctr["env"], "extraEnv")
    c.expect(("metrics", 9102) in [(p["name"], p["containerPort"]) for p in ctr["ports"]],
             "metrics container port")
    sa = one(docs, "ServiceAccount", "strait")
    c.equal(sa["metadata"].get("annotations"), {"example.com/role": "strait-agent"},
            "ServiceAccount annotations")
    svc = one(docs, "Service", "strait-agent")
    c.equal(svc["spec"]["type"], "NodePort", "peering Service type")
    c.equal([(p["name"], p.get("nodePort")) for p in svc["spec"]["ports"]],
            [("grpc", 31443), ("link", 31444), ("metrics", None)], "peering Service node ports")
    check_webhook(docs, c, "10.96.200.200", 8443, False)
    c.equal(one(docs, "Service", "strait-webhook")["spec"].get("clusterIP"), "10.96.200.200",
            "webhook Service clusterIP")
    gw = one(docs, "Deployment", "strait-gateway")
    if c.expect(gw is not None, "gateway Deployment rendered (mode deployment)"):
        gctr = container(gw, "gateway")
        c.equal(gctr["args"][:2], ["gateway", "--config=/etc/strait/gateway/wg0.conf"],
                "gateway command")
        c.expect("--no-offload" in gctr["args"], "gateway extraArgs")
        c.equal([(p["containerPort"], p["protocol"]) for p in gctr["ports"]], [(51821, "UDP")],
                "gateway port")
        vols = {v["name"]: v for v in gw["spec"]["template"]["spec"]["volumes"]}
        c.equal(vols["gateway-config"]["secret"]["secretName"], "strait-gateway-wg0",
                "gateway configuration Secret")
        c.equal(vols["dev-net-tun"]["hostPath"], {"path": "/dev/net/tun", "type": "CharDevice"},
                "TUN device")
        c.expect(gw["spec"]["template"]["spec"].get("automountServiceAccountToken") is False,
                 "gateway Pod has no API token")
    c.equal(capabilities_added(docs), {("strait-agent", "agent"): [],
                                       ("strait-gateway", "gateway"): ["NET_ADMIN"]},
            "only the gateway adds a capability, NET_ADMIN")
    gsvc = one(docs, "Service", "strait-gateway")
    if c.expect(gsvc is not None, "gateway Service rendered"):
        c.equal(gsvc["spec"]["type"], "NodePort", "gateway Service type")
        c.equal([(p["port"], p["protocol"], p.get("nodePort")) for p in gsvc["spec"]["ports"]],
                [(51821, "UDP", 31820)], "gateway Service port")
        c.equal(gsvc["spec"]["selector"].get("app.kubernetes.io/component"), "gateway",
                "gateway Service selects the gateway Pods")
    sm = one(docs, "ServiceMonitor", "strait-agent")
    if c.expect(sm is not None, "ServiceMonitor rendered"):
        c.equal(sm["metadata"]["labels"].get("release"), "prometheus", "ServiceMonitor labels")
        c.equal(sm["spec"]["endpoints"][0]["port"], "metrics", "ServiceMonitor port")
    pm = one(docs, "PodMonitor", "strait-agent")
    if c.expect(pm is not None, "PodMonitor rendered"):
        c.equal(pm["spec"]["podMetricsEndpoints"][0]["port"], "metrics", "PodMonitor port")


def check_fabric(helm, c):
    c.section("helm template, fabric.enabled")
    rc, out, docs = helm.template("--set", "clusterName=home", "--set", "fabric.enabled=true",
                                  "--set", "fabric.logLevel=debug")
    if not c.expect(rc == 0, f"renders (rc {rc}): {out[-2000:]}"):
        return
    check_common(docs, c)
    ds = one(docs, "DaemonSet", "strait-fabric")
    if not c.expect(ds is not None, "DaemonSet strait-fabric rendered"):
        return
    c.equal(ds["metadata"]["namespace"], "strait-system", "DaemonSet in the release namespace")
    spec = ds["spec"]["template"]["spec"]
    c.expect(spec.get("hostNetwork") is True, "fabric Pods use the node's network namespace")
    c.equal(spec.get("dnsPolicy"), "ClusterFirstWithHostNet", "fabric dnsPolicy")
    c.equal(spec.get("serviceAccountName"), "strait-fabric", "fabric ServiceAccount")
    c.equal([x["name"] for x in spec["containers"]], ["fabric"], "containers of the fabric Pod")
    ctr = spec["containers"][0]
    c.equal(ctr["image"], "strait:0.1.0", "fabric image")
    c.equal(ctr["args"], ["fabric", "--node=$(NODE_NAME)", "--namespace=strait-system",
                          "--log-level=debug"], "fabric arguments")
    env = {e["name"]: e for e in ctr.get("env", [])}
    c.equal(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath"),
            "spec.nodeName", "NODE_NAME from the downward API")
    caps = ctr["securityContext"]["capabilities"]
    c.equal((caps.get("drop"), caps.get("add")), (["ALL"], ["NET_ADMIN"]),
            "the fabric container adds NET_ADMIN alone")
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    c.equal(terms, [{"matchExpressions": [{"key": "strait.io/virtual-node",
                                           "operator": "DoesNotExist"}]}],
            "fabric Pods stay off virtual nodes")
    c.equal(spec.get("tolerations"), [{"operator": "Exists"}], "fabric tolerates every taint")
    sa = [d for d in by_kind(docs, "ServiceAccount") if d["metadata"]["name"] == "strait-fabric"]
    c.equal([d["metadata"]["namespace"] for d in sa], ["strait-system"], "fabric ServiceAccount")
    role = [d for d in by_kind(docs, "Role") if d["metadata"]["name"] == "strait-fabric"]
    if c.expect(len(role) == 1, "Role strait-fabric rendered"):
        c.equal(role[0]["metadata"]["namespace"], "strait-system",
                "the fabric Role is where the agent writes the ConfigMap")
        c.equal(role[0]["rules"], [{"apiGroups": [""], "resources": ["configmaps"],
                                    "resourceNames": ["strait-fabric"],
                                    "verbs": ["get", "list", "watch"]}],
                "the fabric reads the fabric ConfigMap and nothing else")
    rb = [d for d in by_kind(docs, "RoleBinding") if d["metadata"]["name"] == "strait-fabric"]
    if c.expect(len(rb) == 1, "RoleBinding strait-fabric rendered"):
        c.equal((rb[0]["metadata"]["namespace"], rb[0]["roleRef"]["name"], rb[0]["subjects"]),
                ("strait-system", "strait-fabric",
                 [{"kind": "ServiceAccount", "name": "strait-fabric",
                   "namespace": "strait-system"}]),
                "fabric RoleBinding")
    rc, out, docs = helm.template("--set", "clusterName=home")
    c.expect(rc == 0 and one(docs, "DaemonSet", "strait-fabric") is None,
             "no fabric DaemonSet by default")


def check_variants(helm, c):
    c.section("helm template, gateway as a sidecar")
    rc, out, docs = helm.template("--set", "clusterName=home", "--set", "gateway.enabled=true",
                                  "--set", "gateway.configSecret=wg")
    if c.expect(rc == 0, f"renders (rc {rc}): {out[-2000:]}"):
        agent = one(docs, "Deployment", "strait-agent")
        c.equal([x["name"] for x in agent["spec"]["template"]["spec"]["containers"]],
                ["agent", "gateway"], "containers of the agent Pod")
        c.expect(one(docs, "Deployment", "strait-gateway") is None, "no gateway Deployment")
        c.equal(capabilities_added(docs), {("strait-agent", "agent"): [],
                                           ("strait-agent", "gateway"): ["NET_ADMIN"]},
                "only the gateway container adds NET_ADMIN")
        gsvc = one(docs, "Service", "strait-gateway")
        c.equal(gsvc["spec"]["type"], "LoadBalancer", "gateway Service type by default")
        c.equal(gsvc["spec"]["selector"].get("app.kubernetes.io/component"), "agent",
                "gateway Service selects the agent Pods")

    c.section("helm template, webhook without virtual nodes")
    rc, out, docs = helm.template("--set", "clusterName=home", "--set", "virtualNodes.enabled=false")
    if c.expect(rc == 0, f"renders (rc {rc}): {out[-2000:]}"):
        role = one(docs, "ClusterRole", "strait-consumer")
        got = rule_set(role, c) if c.expect(role is not None, "consumer ClusterRole") else set()
        want = {("", "namespaces", v) for v in ("get", "list", "watch")} | {
            ("", "events", "create"), ("", "pods", "list"), ("", "pods", "patch")} | {
            ("admissionregistration.k8s.io", kind, v)
            for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
            for v in ("create", "get", "update")} | {
            ("strait.io", "offloadingoverrides", v) for v in ("list", "watch")}
        c.expect(got == want, f"consumer rules for the webhook alone: extra {sorted(got - want)}, "
                              f"missing {sorted(want - got)}")
        c.equal([d["metadata"]["namespace"] for d in by_kind(docs, "Role")], ["strait-system"],
                "Roles (no node Leases without virtual nodes)")

    c.section("helm template, provider only, no webhook, no virtual nodes")
    rc, out, docs = helm.template("--set", "clusterName=cloud", "--set", "webhook.enabled=false",
                                  "--set", "virtualNodes.enabled=false")
    if c.expect(rc == 0, f"renders (rc {rc}): {out[-2000:]}"):
        c.equal(sorted(d["metadata"]["name"] for d in by_kind(docs, "ClusterRole")),
                ["strait-agent", "strait-provider"], "ClusterRoles")
        c.equal([d["metadata"]["namespace"] for d in by_kind(docs, "Role")], ["strait-system"],
                "Roles")
        c.expect(not by_kind(docs, "MutatingWebhookConfiguration"), "no webhook configuration")
        c.expect(one(docs, "Service", "strait-webhook") is None, "no webhook Service")
        args = container(one(docs, "Deployment", "strait-agent"), "agent")["args"]
        c.expect("--no-webhook" in args and "--no-virtual-nodes" in args and
                 not any(a.startswith(("--webhook-", "--vnode-", "--kubelet-port")) for a in args),
                 f"agent flags without webhook and virtual nodes: {args}")

    c.section("helm template, rbac.create=false and an existing ServiceAccount")
    rc, out, docs = helm.template("--set", "clusterName=home", "--set", "rbac.create=false",
                                  "--set", "serviceAccount.create=false",
                                  "--set", "serviceAccount.name=mine")
    if c.expect(rc == 0, f"renders (rc {rc}): {out[-2000:]}"):
        c.expect(not [d for d in docs if d["kind"] in ("ClusterRole", "ClusterRoleBinding", "Role",
                                                      "RoleBinding", "ServiceAccount")],
                 "no RBAC objects and no ServiceAccount")
        agent = one(docs, "Deployment", "strait-agent")
        c.equal(agent["spec"]["template"]["spec"]["serviceAccountName"], "mine",
                "the given ServiceAccount")


def check_refusals(helm, c):
    c.section("values the chart refuses")
    rc, out = helm.lint("-f", os.path.join(HERE, "invalid-values.yaml"))
    c.expect(rc != 0, "helm lint fails on invalid-values.yaml")
    for field in ("clusterName", "unknownTopLevel", "agent.share", "agent.podSecurity",
                  "service.type", "gateway.mode"):
        c.expect(field in out, f"helm lint names {field}: {out[-3000:]}")
    rc, out, _ = helm.template("-f", os.path.join(HERE, "invalid-values.yaml"))
    c.expect(rc != 0 and "values don't meet the specifications of the schema" in out,
             f"helm template refuses invalid-values.yaml: {out[-1000:]}")
    for args, message in (
            ((), "clusterName is required"),
            (("--set", "clusterName=home", "--set", "gateway.enabled=true"),
             "gateway.configSecret"),
            (("--set", "clusterName=home", "--set", "identity.keepOnUninstall=false", "--set",
              "serviceAccount.create=false", "--set", "serviceAccount.name=mine"),
             "identity.keepOnUninstall=false needs serviceAccount.create=true"),
            (("--set", "clusterName=home", "--set", "agent.certTtl=forever"), "agent.certTtl"),
            (("--set", "clusterName=home", "--set", "agent.advertise=no-port"), "agent.advertise"),
            (("--set", "clusterName=home", "--set", "agent.healthPort=0"), "agent.healthPort"),
            (("--set", "clusterName=home", "--set", "metrics.enabled=false", "--set",
              "metrics.serviceMonitor.enabled=true"), "need metrics.enabled")):
        rc, out, _ = helm.template(*args)
        c.expect(rc != 0 and message in out, f"helm template {' '.join(args)} fails naming "
                                             f"{message!r}: rc {rc}, {out[-800:]}")


def normalized_crd(crd):
    spec = dict(crd["spec"])
    for version in spec["versions"]:
        for col in version.get("additionalPrinterColumns", []):
            if col.get("priority") == 0:  # the API server's default
                del col["priority"]
    spec.pop("conversion", None) if spec.get("conversion") == {"strategy": "None"} else None
    return {"name": crd["metadata"]["name"], "labels": crd["metadata"].get("labels"),
            "spec": spec}


def wait_for(fn, seconds):
    deadline = time.time() + seconds
    while True:
        result = fn()
        if result or time.time() > deadline:
            return result
        time.sleep(0.2)


def check_on_minicluster(strait, kubectl, helm, chart, c):
    """A minicluster: the CRD a real agent installs against crds/, then helm install, upgrade
    and uninstall of the chart without its RBAC objects (the minicluster serves no
    rbac.authorization.k8s.io yet)."""
    c.section("on a minicluster: crds/ is the CRD `strait agent` installs")
    with open(os.path.join(chart, "crds", "foreignclusters.strait.io.yaml")) as f:
        want = normalized_crd(yaml.safe_load(f))
    tmp = tempfile.mkdtemp(prefix="strait-chart-")
    procs = []

    def stop(p):
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    try:
        kubeconfig = os.path.join(tmp, "kubeconfig")
        env = dict(os.environ, KUBECACHEDIR=os.path.join(tmp, "kubecache"))

        def kube(*args):
            return subprocess.run([kubectl, "--kubeconfig", kubeconfig, *args],
                                  capture_output=True, text=True, env=env, timeout=60)

        log = open(os.path.join(tmp, "minicluster.log"), "w")
        procs.append(subprocess.Popen([strait, "minicluster", "--name", "chart", "--listen",
                                       "127.0.0.1:0", "--kubeconfig-out", kubeconfig,
                                       "--nodes", "1"],
                                      stdout=log, stderr=subprocess.STDOUT))
        if not c.expect(wait_for(lambda: os.path.exists(kubeconfig), 30), "minicluster serving"):
            return
        alog = open(os.path.join(tmp, "agent.log"), "w")
        agent = subprocess.Popen([strait, "agent", "--kubeconfig", kubeconfig,
                                  "--cluster-name", "chart", "--listen", "127.0.0.1:0",
                                  "--no-webhook", "--no-virtual-nodes"],
                                 stdout=alog, stderr=subprocess.STDOUT)
        procs.append(agent)
        def crd():
            p = kube("get", "crd", "foreignclusters.strait.io", "-o", "yaml")
            return p if p.returncode == 0 else None
        got = wait_for(crd, 30)
        if c.expect(got is not None, "the agent installed foreignclusters.strait.io"):
            c.equal(normalized_crd(yaml.safe_load(got.stdout)), want,
                    "the agent's CRD against crds/foreignclusters.strait.io.yaml")
        stop(agent)
        procs.remove(agent)

        c.section("on a minicluster: helm install, upgrade, uninstall (rbac.create=false)")
        kc = ["--kubeconfig", kubeconfig, "-n", "strait-system"]
        rc, out = helm.run("install", "strait", chart, *kc, "--create-namespace",
                           "--set", "clusterName=mini", "--set", "rbac.create=false",
                           "--wait", "--timeout", "90s")
        if not c.expect(rc == 0, f"helm install: {out[-2000:]}"):
            return
        objects = [("deployment", "strait-system", "strait-agent"),
                   ("service", "strait-system", "strait-agent"),
                   ("service", "strait-system", "strait-webhook"),
                   ("serviceaccount", "strait-system", "strait"),
                   ("mutatingwebhookconfiguration", "", "strait-offloading")]
        for kind, ns, name in objects:
            p = kube("get", kind, name, *(["-n", ns] if ns else []), "-o", "name")
            c.expect(p.returncode == 0, f"{kind} {name} installed: {p.stderr}")
        p = kube("-n", "strait-system", "get", "deployment", "strait-agent", "-o", "json")
        if c.expect(p.returncode == 0, "read the agent Deployment"):
            d = yaml.safe_load(p.stdout)
            c.equal(d["status"].get("readyReplicas"), 1, "agent Deployment Ready after --wait")
        rc, out = helm.run("upgrade", "strait", chart, *kc, "--reuse-values",
                           "--set", "agent.logLevel=debug", "--wait", "--timeout", "90s")
        if c.expect(rc == 0, f"helm upgrade: {out[-2000:]}"):
            p = kube("-n", "strait-system", "get", "deployment", "strait-agent", "-o",
                     "jsonpath={.spec.template.spec.containers[0].args}")
            c.expect("--log-level=debug" in p.stdout and "--cluster-name=mini" in p.stdout,
                     f"the upgrade changed the log level and kept the rest: {p.stdout}")
        rc, out = helm.run("uninstall", "strait", *kc, "--wait", "--timeout", "90s")
        if c.expect(rc == 0, f"helm uninstall: {out[-2000:]}"):
            for kind, ns, name in objects:
                p = kube("get", kind, name, *(["-n", ns] if ns else []), "-o", "name")
                c.expect(p.returncode != 0 and "NotFound" in p.stderr,
                         f"{kind} {name} removed by helm uninstall: {p.stdout}{p.stderr}")
            p = kube("get", "crd", "foreignclusters.strait.io", "-o", "name")
            c.expect(p.returncode == 0, "the CRD stays after helm uninstall (crds/)")
    finally:
        for p in reversed(procs):
            stop(p)
        shutil.rmtree(tmp, ignore_errors=True)


def check_values_documented(chart, c):
    c.section("every value in values.yaml has a comment and a row in docs/install.md")
    with open(os.path.join(chart, "values.yaml")) as f:
        text = f.read()
    values = yaml.safe_load(text)
    doc = os.path.normpath(os.path.join(chart, "..", "..", "docs", "install.md"))
    with open(doc) as f:
        install_doc = f.read()
    stack, documented, covered = [], False, set()
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("# --"):
            documented = True
            continue
        if stripped.startswith("#") and documented:
            continue
        m = re.match(r"^( *)([A-Za-z][A-Za-z0-9]*):", line)
        if m:
            stack = stack[:len(m.group(1)) // 2] + [m.group(2)]
            v = values
            for k in stack:
                v = v[k]
            key = ".".join(stack)
            if documented:
                covered.add(key)
            # A documented map (resources, a securityContext) documents what it holds.
            inside = any(key.startswith(k + ".") for k in covered)
            if not inside and (not isinstance(v, dict) or not v):
                c.expect(documented, f"{key} has a '# --' comment above it")
            if documented:
                c.expect(f"| `{key}` |" in install_doc, f"{key} is in the values table of {doc}")
        documented = False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--helm", required=True)
    ap.add_argument("--chart", required=True)
    ap.add_argument("--strait")
    ap.add_argument("--kubectl", default="kubectl")
    a = ap.parse_args()
    if not os.access(a.helm, os.X_OK):
        print(f"no helm at {a.helm}: run scripts/install-deps.sh (make deps) first")
        return 1
    c = Checks()
    home = tempfile.mkdtemp(prefix="strait-helm-")
    try:
        helm = Helm(a.helm, a.chart, home)
        c.section("helm lint")
        rc, out = helm.lint()
        c.expect(rc == 0 and "0 chart(s) failed" in out, f"lint default values: {out}")
        rc, out = helm.lint("-f", os.path.join(HERE, "all-features.yaml"))
        c.expect(rc == 0 and "0 chart(s) failed" in out, f"lint all-features.yaml: {out}")
        check_values_documented(a.chart, c)
        check_default(helm, c)
        check_node_port_advertise(helm, c)
        check_all_features(helm, c)
        check_variants(helm, c)
        check_fabric(helm, c)
        check_refusals(helm, c)
        if a.strait:
            c.section("the chart's appVersion is the binary's version")
            with open(os.path.join(a.chart, "Chart.yaml")) as f:
                app_version = yaml.safe_load(f)["appVersion"]
            p = subprocess.run([a.strait, "version"], capture_output=True, text=True, timeout=30)
            c.equal(p.stdout.strip(), f"strait {app_version}", "strait version")
            check_on_minicluster(a.strait, a.kubectl, helm, a.chart, c)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if c.failures:
        print(f"\n{len(c.failures)} check(s) failed:")
        for f in c.failures:
            print(f"  {f}")
        return 1
    print("\nall chart checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
