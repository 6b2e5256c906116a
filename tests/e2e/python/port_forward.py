#!/usr/bin/env python3
"""Port-forward through the official Python client (Debian python3-kubernetes), which speaks
the WebSocket channel protocol v4.channel.k8s.io.

Usage: port_forward.py KUBECONFIG POD PORT

GETs /hostname of Pod POD (namespace default) through a forwarded connection to PORT and
prints "port_forward: hostname=<body>"; then forwards a port nobody listens on and prints
"port_forward: refused=<the error the server sent on the error channel>". Exits 1 with a
message on a failure.
"""

import sys

from kubernetes import client, config
from kubernetes.stream import portforward


def fetch(api, pod, port, path):
    """One HTTP/1.1 GET through a port-forward; returns (body, error channel text)."""
    pf = portforward(api.connect_get_namespaced_pod_portforward, pod, "default",
                     ports=str(port))
    sock = pf.socket(port)
    sock.settimeout(20)
    data = b""
    try:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
                     .encode())
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except (BrokenPipeError, ConnectionResetError):
        # A refused port: the server may close the forwarded connection before the request is
        # written; what it said is on the error channel.
        pass
    sock.close()
    body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else data
    return body.decode(errors="replace"), pf.error(port)


def main():
    kubeconfig, pod, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    config.load_kube_config(config_file=kubeconfig)
    api = client.CoreV1Api()
    body, error = fetch(api, pod, port, "/hostname")
    if error:
        print(f"port_forward: FAILED: error channel: {error}")
        return 1
    print(f"port_forward: hostname={body}", flush=True)
    if body != pod:
        print(f"port_forward: FAILED: expected {pod!r}")
        return 1
    body, error = fetch(api, pod, 9, "/")
    if not error or "connection refused" not in error:
        print(f"port_forward: FAILED: no refusal on the error channel (body {body!r}, "
              f"error {error!r})")
        return 1
    print(f"port_forward: refused={error}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
