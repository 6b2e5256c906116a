#!/usr/bin/env python3
"""Smoke test of the official Python client (Debian python3-kubernetes) against a server.

Usage: client_smoke.py KUBECONFIG

Loads the kubeconfig, then creates, lists, watches (with timeout_seconds), patches (JSON
merge, strategic merge, JSON patch) and deletes pods and configmaps, and reads a missing
object as ApiException 404. Prints one line per step; exits 1 with a message on the first
failure.
"""

import json
import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "py-smoke"
# Every request gets a client-side timeout so that a server that never answers fails the
# script instead of hanging it.
TIMEOUT = 20


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def step(name):
    print(f"--- {name}", flush=True)


def expect_status(fn, code, what):
    """Calls fn() and requires an ApiException with HTTP `code` and a Status body."""
    try:
        fn()
    except ApiException as e:
        check(e.status == code, f"{what}: want HTTP {code}, got {e.status}: {e.body}")
        try:
            body = json.loads(e.body)
        except (TypeError, ValueError):
            raise Failure(f"{what}: error body is not JSON: {e.body!r}")
        check(body.get("kind") == "Status", f"{what}: error body is not a Status: {body}")
        check(body.get("code") == code, f"{what}: Status.code {body.get('code')} != {code}")
        return body
    raise Failure(f"{what}: want HTTP {code}, the call succeeded")


def merge_patch(api_client, path, body):
    """PATCH with application/merge-patch+json (the generated methods send strategic merge
    for dicts and JSON patch for lists)."""
    data, status, _ = api_client.call_api(
        path, "PATCH", header_params={"Content-Type": "application/merge-patch+json",
                                      "Accept": "application/json"},
        body=body, response_type="object", auth_settings=["BearerToken"],
        _return_http_data_only=False, _request_timeout=TIMEOUT)
    check(status == 200, f"merge patch {path}: HTTP {status}")
    return data


def pod(name, labels, containers):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(containers=[
            client.V1Container(name=n, image=img, command=["sleep", "3600"])
            for n, img in containers
        ]))


def wait_gone(read, what, deadline=30):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            read()
        except ApiException as e:
            if e.status == 404:
                return
            raise
        time.sleep(0.1)
    raise Failure(f"{what} still exists {deadline}s after delete")


def main():
    check(len(sys.argv) == 2, "usage: client_smoke.py KUBECONFIG")
    config.load_kube_config(config_file=sys.argv[1])
    api_client = client.ApiClient()
    v1 = client.CoreV1Api(api_client)

    step("version")
    info = client.VersionApi(api_client).get_code(_request_timeout=TIMEOUT)
    check(info.major == "1", f"version major {info.major}")

    step("create namespace")
    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)),
                        _request_timeout=TIMEOUT)
    ns = v1.read_namespace(NS, _request_timeout=TIMEOUT)
    check(ns.status.phase == "Active", f"namespace phase {ns.status.phase}")

    step("create configmaps")
    cm = v1.create_namespaced_config_map(NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="cm1", labels={"app": "smoke"}),
        data={"a": "1"}), _request_timeout=TIMEOUT)
    check(cm.metadata.uid, "created configmap has no uid")
    check(cm.metadata.resource_version, "created configmap has no resourceVersion")
    check(cm.metadata.creation_timestamp is not None, "no creationTimestamp")
    v1.create_namespaced_config_map(NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="cm-other", labels={"app": "other"})),
        _request_timeout=TIMEOUT)
    expect_status(lambda: v1.create_namespaced_config_map(NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="cm1")), _request_timeout=TIMEOUT),
        409, "create an existing configmap")

    step("list configmaps")
    cms = v1.list_namespaced_config_map(NS, label_selector="app=smoke",
                                        _request_timeout=TIMEOUT)
    check([c.metadata.name for c in cms.items] == ["cm1"],
          f"label-selected list: {[c.metadata.name for c in cms.items]}")
    check(cms.metadata.resource_version, "list has no resourceVersion")

    step("read missing -> 404")
    body = expect_status(lambda: v1.read_namespaced_config_map("nope", NS,
                                                               _request_timeout=TIMEOUT),
                         404, "read a missing configmap")
    check(body.get("reason") == "NotFound", f"reason {body.get('reason')}")
    check('configmaps "nope" not found' in body.get("message", ""),
          f"message {body.get('message')!r}")
    check((body.get("details") or {}).get("name") == "nope", f"details {body.get('details')}")

    step("watch configmaps from a list resourceVersion")
    rv = v1.list_namespaced_config_map(NS, _request_timeout=TIMEOUT).metadata.resource_version
    v1.create_namespaced_config_map(NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="cm-after-list"), data={"x": "y"}),
        _request_timeout=TIMEOUT)
    seen = []
    w = watch.Watch()
    for ev in w.stream(v1.list_namespaced_config_map, NS, resource_version=rv,
                       timeout_seconds=10, _request_timeout=TIMEOUT):
        seen.append((ev["type"], ev["object"].metadata.name))
        if ev["object"].metadata.name == "cm-after-list":
            w.stop()
    check(("ADDED", "cm-after-list") in seen, f"watch events {seen}")
    check(("ADDED", "cm1") not in seen,
          f"watch from a resourceVersion replayed older objects: {seen}")

    step("watch ends after timeout_seconds")
    start = time.monotonic()
    events = list(watch.Watch().stream(v1.list_namespaced_config_map, NS,
                                       resource_version=rv, timeout_seconds=2,
                                       _request_timeout=TIMEOUT))
    took = time.monotonic() - start
    check(took < 15, f"watch with timeout_seconds=2 lasted {took:.1f}s")
    check(any(e["object"].metadata.name == "cm-after-list" for e in events),
          f"second watch from rv {rv} missed cm-after-list: {events}")

    step("create and list pods")
    v1.create_namespaced_pod(NS, pod("p1", {"app": "smoke"},
                                     [("main", "busybox:1.36"), ("side", "nginx:1.25")]),
                             _request_timeout=TIMEOUT)
    p = v1.read_namespaced_pod("p1", NS, _request_timeout=TIMEOUT)
    check(p.status.phase == "Pending", f"new pod phase {p.status.phase}")
    pods = v1.list_namespaced_pod(NS, label_selector="app=smoke", _request_timeout=TIMEOUT)
    check([x.metadata.name for x in pods.items] == ["p1"], f"pods {pods.items}")
    all_pods = v1.list_pod_for_all_namespaces(field_selector=f"metadata.namespace={NS}",
                                              _request_timeout=TIMEOUT)
    check([x.metadata.name for x in all_pods.items] == ["p1"],
          f"all-namespaces pods {[x.metadata.name for x in all_pods.items]}")

    step("watch pods: a change made by another thread")
    rv = pods.metadata.resource_version
    got = []

    def make_pod():
        time.sleep(0.2)
        client.CoreV1Api(client.ApiClient()).create_namespaced_pod(
            NS, pod("p2", {"app": "smoke"}, [("main", "busybox:1.36")]),
            _request_timeout=TIMEOUT)

    t = threading.Thread(target=make_pod)
    t.start()
    w = watch.Watch()
    for ev in w.stream(v1.list_namespaced_pod, NS, label_selector="app=smoke",
                       resource_version=rv, timeout_seconds=15, _request_timeout=TIMEOUT):
        got.append((ev["type"], ev["object"].metadata.name))
        if ev["object"].metadata.name == "p2":
            w.stop()
    t.join()
    check(("ADDED", "p2") in got, f"pod watch events {got}")

    step("merge patch")
    merge_patch(api_client, f"/api/v1/namespaces/{NS}/configmaps/cm1",
                {"data": {"a": None, "b": "2"}, "metadata": {"labels": {"patched": "merge"}}})
    cm = v1.read_namespaced_config_map("cm1", NS, _request_timeout=TIMEOUT)
    check(cm.data == {"b": "2"}, f"merge patch data {cm.data}")
    check(cm.metadata.labels == {"app": "smoke", "patched": "merge"},
          f"merge patch labels {cm.metadata.labels}")

    step("strategic merge patch keeps the other container")
    v1.patch_namespaced_pod("p1", NS, {"metadata": {"labels": {"patched": "strategic"}},
                                       "spec": {"containers": [
                                           {"name": "side", "image": "nginx:1.26"}]}},
                            _request_timeout=TIMEOUT)
    p = v1.read_namespaced_pod("p1", NS, _request_timeout=TIMEOUT)
    images = {c.name: c.image for c in p.spec.containers}
    check(images == {"main": "busybox:1.36", "side": "nginx:1.26"},
          f"strategic merge patch containers {images}")
    check(p.metadata.labels.get("patched") == "strategic", f"labels {p.metadata.labels}")

    step("JSON patch")
    v1.patch_namespaced_config_map("cm1", NS, [
        {"op": "add", "path": "/data/c", "value": "3"},
        {"op": "test", "path": "/data/b", "value": "2"},
    ], _request_timeout=TIMEOUT)
    cm = v1.read_namespaced_config_map("cm1", NS, _request_timeout=TIMEOUT)
    check(cm.data == {"b": "2", "c": "3"}, f"json patch data {cm.data}")
    expect_status(lambda: v1.patch_namespaced_config_map("cm1", NS, [
        {"op": "test", "path": "/data/b", "value": "wrong"}], _request_timeout=TIMEOUT),
        422, "JSON patch with a failing test op")

    step("update with a stale resourceVersion -> 409")
    stale = cm
    stale.data = {"stale": "yes"}
    v1.patch_namespaced_config_map("cm1", NS, {"data": {"d": "4"}}, _request_timeout=TIMEOUT)
    body = expect_status(lambda: v1.replace_namespaced_config_map("cm1", NS, stale,
                                                                  _request_timeout=TIMEOUT),
                         409, "replace with a stale resourceVersion")
    check(body.get("reason") == "Conflict", f"reason {body.get('reason')}")

    step("delete")
    v1.delete_namespaced_config_map("cm1", NS, _request_timeout=TIMEOUT)
    expect_status(lambda: v1.read_namespaced_config_map("cm1", NS, _request_timeout=TIMEOUT),
                  404, "read a deleted configmap")
    v1.delete_namespaced_pod("p1", NS, _request_timeout=TIMEOUT)
    wait_gone(lambda: v1.read_namespaced_pod("p1", NS, _request_timeout=TIMEOUT), "pod p1")
    expect_status(lambda: v1.delete_namespaced_pod("p1", NS, _request_timeout=TIMEOUT),
                  404, "delete a deleted pod")

    step("delete namespace")
    v1.delete_namespace(NS, _request_timeout=TIMEOUT)
    wait_gone(lambda: v1.read_namespace(NS, _request_timeout=TIMEOUT), f"namespace {NS}")

    print("client_smoke: OK", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"client_smoke: FAIL: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
    except ApiException as e:
        print(f"client_smoke: FAIL: unexpected API error {e.status} {e.reason}: {e.body}",
              file=sys.stderr, flush=True)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - any other error is a failure with its trace
        import traceback
        traceback.print_exc()
        print(f"client_smoke: FAIL: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
