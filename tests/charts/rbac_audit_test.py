#!/usr/bin/env python3
"""The chart's RBAC against what real agents ask their API servers for.

Two miniclusters, "home" and "cloud"; each `strait agent` reaches its API server through a
TLS proxy in this process that records every request line (method and path) before passing
the bytes on with the cluster's admin credentials. The user's side (`strait peer`, kubectl)
talks to the clusters directly. Then: peer, offload a namespace, run a Pod that uses a
ConfigMap, a Secret and a ServiceAccount on the virtual node, `kubectl logs` and
`kubectl exec` it, delete it, unoffload, unpeer. Every request the agents made must be
allowed by the Roles and ClusterRoles `helm template` renders with the default values; the
rules no request used are listed (they come from code paths this run does not reach).

Until the minicluster serves and enforces RBAC this stands in for running the agent with
exactly the chart's permissions.

Usage: rbac_audit_test.py --helm HELM --chart DIR --strait STRAIT [--kubectl KUBECTL]
"""

import argparse
import asyncio
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time

import yaml

# A request line; the previous request's body may end right before it (keep-alive).
REQUEST_LINE = re.compile(rb"(GET|POST|PUT|PATCH|DELETE) (/\S*) HTTP/1\.[01]\r\n")


class RecordingProxy:
    """TLS in (the minicluster's own serving certificate), TLS out with the admin client
    certificate; records the request lines the client sends. One asyncio loop on its own
    thread (an SSL connection must not be read and written from two threads at once)."""

    def __init__(self, pki, upstream):
        self.requests = []
        self.lock = threading.Lock()
        self.host, port = upstream.rsplit(":", 1)
        self.upstream_port = int(port)
        self.server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_ctx.load_cert_chain(os.path.join(pki, "apiserver.crt"),
                                        os.path.join(pki, "apiserver.key"))
        self.client_ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.client_ctx.load_cert_chain(os.path.join(pki, "admin.crt"),
                                        os.path.join(pki, "admin.key"))
        self.client_ctx.check_hostname = False
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self.run, args=(ready,), daemon=True).start()
        ready.wait(10)

    def run(self, ready):
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(
            self.serve, "127.0.0.1", 0, ssl=self.server_ctx))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def serve(self, down_r, down_w):
        try:
            up_r, up_w = await asyncio.open_connection(self.host, self.upstream_port,
                                                       ssl=self.client_ctx,
                                                       server_hostname=self.host)
        except (OSError, ssl.SSLError):
            down_w.close()
            return
        await asyncio.gather(self.pump(down_r, up_w, True), self.pump(up_r, down_w, False),
                             return_exceptions=True)

    async def pump(self, src, dst, record):
        tail = b""
        try:
            while True:
                data = await src.read(65536)
                if not data:
                    break
                if record:
                    window = tail + data
                    with self.lock:
                        for m in REQUEST_LINE.finditer(window):
                            if m.end() > len(tail):  # not already seen in the last tail
                                self.requests.append((m.group(1).decode(), m.group(2).decode()))
                    tail = window[-4096:]
                dst.write(data)
                await dst.drain()
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        finally:
            dst.close()

    def stop(self):
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)


def authorization_attributes(method, url):
    """(apiGroup, resource[/subresource], verb, namespace or "") as RBAC sees the request."""
    path, _, query = url.partition("?")
    seg = [s for s in path.split("/") if s]
    if seg[:1] == ["api"]:
        group, rest = "", seg[2:]
    elif seg[:1] == ["apis"]:
        group, rest = seg[1], seg[3:]
    else:
        return None  # discovery, /version, /openapi: every authenticated user may read them
    ns = ""
    if len(rest) > 2 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    resource = rest[0] + ("/" + rest[2] if len(rest) > 2 else "")
    named = len(rest) > 1
    if method == "GET":
        watching = re.search(r"(^|&)watch=(1|true)(&|$)", query) is not None
        verb = "watch" if watching else ("get" if named else "list")
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if named else "deletecollection"}[method]
    return group, resource, verb, ns


def allowed(rules_cluster, rules_ns, attrs):
    group, resource, verb, ns = attrs
    if (group, resource, verb) in rules_cluster:
        return True
    return ns != "" and (group, resource, verb) in rules_ns.get(ns, set())


def chart_rules(helm, chart, home):
    env = dict(os.environ, HELM_CACHE_HOME=os.path.join(home, "cache"),
               HELM_CONFIG_HOME=os.path.join(home, "config"),
               HELM_DATA_HOME=os.path.join(home, "data"))
    out = subprocess.run([helm, "template", "strait", chart, "-n", "strait-system",
                          "--set", "clusterName=audit"], capture_output=True, text=True,
                         env=env, timeout=120, check=True).stdout
    cluster, namespaced = set(), {}
    for d in yaml.safe_load_all(out):
        if not d or d["kind"] not in ("ClusterRole", "Role"):
            continue
        target = cluster if d["kind"] == "ClusterRole" else namespaced.setdefault(
            d["metadata"]["namespace"], set())
        for r in d["rules"]:
            for g in r["apiGroups"]:
                for res in r["resources"]:
                    for v in r["verbs"]:
                        target.add((g, res, v))
    return cluster, namespaced


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--helm", required=True)
    ap.add_argument("--chart", required=True)
    ap.add_argument("--strait", required=True)
    ap.add_argument("--kubectl", default="kubectl")
    a = ap.parse_args()
    if not os.access(a.helm, os.X_OK):
        print(f"no helm at {a.helm}: run scripts/install-deps.sh (make deps) first")
        return 1
    tmp = tempfile.mkdtemp(prefix="strait-rbac-audit-")
    procs, proxies = [], {}
    env = dict(os.environ, KUBECACHEDIR=os.path.join(tmp, "kubecache"))
    failures = []

    def start(name, args):
        log = open(os.path.join(tmp, name + ".log"), "w")
        p = subprocess.Popen([a.strait, *args], stdout=log, stderr=subprocess.STDOUT)
        procs.append(p)
        return p

    def wait_for(what, fn, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if fn():
                return True
            time.sleep(0.2)
        failures.append(f"timed out waiting for {what}")
        return False

    def run(*cmd, check=True):
        try:
            p = subprocess.run(list(cmd), capture_output=True, text=True, env=env, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            failures.append(f"{' '.join(cmd)}: {e}")
            return subprocess.CompletedProcess(cmd, 1, "", str(e))
        print(f"$ {' '.join(cmd[:6])}{' ...' if len(cmd) > 6 else ''} -> {p.returncode}",
              flush=True)
        if check and p.returncode != 0:
            failures.append(f"{' '.join(cmd)}: {p.stdout}{p.stderr}")
        return p

    def kubectl(cluster, *args, check=True):
        return run(a.kubectl, "--kubeconfig", os.path.join(tmp, cluster + ".kubeconfig"), *args,
                   check=check)

    try:
        for name in ("home", "cloud"):
            start(name + "-minicluster",
                  ["minicluster", "--name", name, "--listen", "127.0.0.1:0", "--kubeconfig-out",
                   os.path.join(tmp, name + ".kubeconfig"), "--data-dir",
                   os.path.join(tmp, name + "-data"), "--nodes", "2", "--node-cpu", "4"])
        for name in ("home", "cloud"):
            kc = os.path.join(tmp, name + ".kubeconfig")
            if not wait_for(f"minicluster {name}", lambda: os.path.exists(kc), 30):
                raise RuntimeError("no minicluster")
            with open(kc) as f:
                server = yaml.safe_load(f)["clusters"][0]["cluster"]["server"]
            pki = os.path.join(tmp, name + "-data", "pki")
            proxies[name] = RecordingProxy(pki, server.split("//", 1)[1])
            # The agent's kubeconfig: the proxy, the cluster's CA, no credential of its own
            # (the proxy authenticates upstream).
            with open(os.path.join(tmp, name + "-agent.kubeconfig"), "w") as f:
                yaml.safe_dump({
                    "apiVersion": "v1", "kind": "Config",
                    "clusters": [{"name": "proxy", "cluster": {
                        "server": f"https://127.0.0.1:{proxies[name].port}",
                        "certificate-authority": os.path.join(pki, "ca.crt")}}],
                    "users": [{"name": "agent", "user": {"token": "recorded-by-the-proxy"}}],
                    "contexts": [{"name": "proxy", "context": {"cluster": "proxy",
                                                               "user": "agent"}}],
                    "current-context": "proxy"}, f)
            start(name + "-agent",
                  ["agent", "--kubeconfig", os.path.join(tmp, name + "-agent.kubeconfig"),
                   "--cluster-name", name, "--listen", "127.0.0.1:0", "--kubelet-port", "0"])
        for name in ("home", "cloud"):
            path = os.path.join(tmp, name + "-agent.log")
            wait_for(f"agent {name}", lambda: "event=webhook_started" in open(path).read(), 60)

        home = os.path.join(tmp, "home.kubeconfig")
        cloud = os.path.join(tmp, "cloud.kubeconfig")
        run(a.strait, "peer", "--kubeconfig", home, "--remote-kubeconfig", cloud, "--cpu", "4",
            "--memory", "8Gi", "--timeout", "60s")
        wait_for("virtual node strait-cloud Ready", lambda: kubectl(
            "home", "get", "node", "strait-cloud", "-o",
            "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
            check=False).stdout == "True", 60)
        kubectl("home", "create", "namespace", "web")
        run(a.strait, "offload", "namespace", "web", "--kubeconfig", home)
        kubectl("home", "-n", "web", "create", "configmap", "cfg", "--from-literal=a=b")
        kubectl("home", "-n", "web", "create", "secret", "generic", "sec", "--from-literal=a=b")
        kubectl("home", "-n", "web", "create", "serviceaccount", "runner")
        manifest = os.path.join(tmp, "pod.yaml")
        with open(manifest, "w") as f:
            yaml.safe_dump({
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "web"},
                "spec": {"nodeName": "strait-cloud",
                         "tolerations": [{"operator": "Exists"}],
                         "serviceAccountName": "runner",
                         "containers": [{"name": "c", "image": "busybox",
                                         "command": ["sleep", "3600"],
                                         "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {
                                             "name": "cfg", "key": "a"}}}],
                                         "volumeMounts": [{"name": "s", "mountPath": "/s"}]}],
                         "volumes": [{"name": "s", "secret": {"secretName": "sec"}}]}}, f)
        kubectl("home", "apply", "-f", manifest)
        wait_for("Pod web/p1 Running on strait-cloud", lambda: kubectl(
            "home", "-n", "web", "get", "pod", "p1", "-o", "jsonpath={.status.phase}",
            check=False).stdout == "Running", 60)
        kubectl("home", "-n", "web", "create", "service", "clusterip", "p1",
                "--tcp=80:8080")
        wait_for("Service p1 reflected to cloud", lambda: "p1" in kubectl(
            "cloud", "get", "services", "-A", "-o", "jsonpath={.items[*].metadata.name}",
            check=False).stdout.split(), 30)
        kubectl("home", "-n", "web", "delete", "service", "p1")
        kubectl("home", "-n", "web", "logs", "p1")
        kubectl("home", "-n", "web", "exec", "p1", "--", "echo", "hello")
        kubectl("home", "-n", "web", "delete", "pod", "p1", "--wait=true", "--timeout=60s")
        run(a.strait, "unoffload", "namespace", "web", "--kubeconfig", home, "--force")
        run(a.strait, "unpeer", "--kubeconfig", home, "--remote-name", "cloud", "--drain",
            "--timeout", "60s")
        time.sleep(2)  # the agents' loops notice the unpeering
    except RuntimeError:
        pass
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for proxy in proxies.values():
            proxy.stop()

    cluster_rules, ns_rules = chart_rules(a.helm, a.chart, tmp)
    used = set()
    for name, proxy in proxies.items():
        with proxy.lock:
            requests = list(proxy.requests)
        seen = set()
        for method, url in requests:
            attrs = authorization_attributes(method, url)
            if attrs is None:
                continue
            seen.add(attrs[:3])
            if allowed(cluster_rules, ns_rules, attrs):
                used.add(attrs[:3])
            else:
                failures.append(f"{name} agent: {method} {url} needs {attrs}, which the chart "
                                f"does not grant")
        print(f"{name} agent: {len(requests)} requests, {len(seen)} distinct (group, resource, "
              f"verb)", flush=True)
        # Not vacuous: each side did its part of the work through the proxy.
        must = {"home": [("", "nodes", "create"), ("", "pods/status", "patch"),
                         ("certificates.k8s.io", "certificatesigningrequests", "create"),
                         ("admissionregistration.k8s.io", "mutatingwebhookconfigurations",
                          "create")],
                "cloud": [("", "pods", "create"), ("", "namespaces", "create"),
                          ("", "pods/log", "get"), ("", "pods/exec", "get"),
                          ("", "services", "create"),
                          ("strait.io", "foreignclusters", "create")]}
        for attrs in must[name]:
            if attrs not in seen:
                failures.append(f"{name} agent: no {attrs} request went through the proxy")
    unused = sorted((cluster_rules | set().union(*ns_rules.values())) - used)
    print(f"granted but not used in this run ({len(unused)}): {unused}")
    shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"\n{len(failures)} failure(s):")
        for f in failures:
            print(f"  {f}")
        return 1
    print("\nevery request of the agents is allowed by the chart's RBAC")
    return 0


if __name__ == "__main__":
    sys.exit(main())
