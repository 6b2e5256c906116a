#!/usr/bin/env python3
"""An admission webhook server for the e2e tests (admission.k8s.io/v1 over HTTPS).

Usage: webhook_server.py CERT KEY PORT_FILE

Listens on 127.0.0.1 on a free port and writes that port to PORT_FILE once serving.
  /mutate  adds the label webhook=added (JSONPatch)
  /deny    refuses objects whose name starts with "bad" (403, "no objects named bad")
  anything else allows.
One line per request on stdout: path, operation, namespace/name.
"""

import base64
import json
import os
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        review = json.loads(self.rfile.read(length) or b"{}")
        req = review.get("request", {})
        path = self.path.split("?")[0]
        resp = {"uid": req.get("uid", ""), "allowed": True}
        obj = req.get("object") or {}
        if path == "/mutate" and obj:
            ops = []
            if "labels" not in obj.get("metadata", {}):
                ops.append({"op": "add", "path": "/metadata/labels", "value": {}})
            ops.append({"op": "add", "path": "/metadata/labels/webhook", "value": "added"})
            resp["patchType"] = "JSONPatch"
            resp["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
        elif path == "/deny" and req.get("name", "").startswith("bad"):
            resp["allowed"] = False
            resp["status"] = {"code": 403, "reason": "Forbidden", "message": "no objects named bad"}
        print(path, req.get("operation"), "%s/%s" % (req.get("namespace", ""), req.get("name", "")),
              flush=True)
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        pass


def main():
    cert, key, port_file = sys.argv[1:4]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
