#!/usr/bin/env python3
"""A Lookout command hook: one JSON call per line on stdin, one reply per line on stdout.
It marks JSON request bodies as signed and adds an HMAC of method, URL and body."""
import base64, hashlib, hmac, json, sys

KEY = b"change-me"
for line in sys.stdin:
    call = json.loads(line)
    request = call["request"]
    body = base64.b64decode(request.get("body_base64", ""))
    reply = {"action": "modify", "id": call["id"], "phase": call["phase"], "headers": {"set": {}}}
    content_type = {n.lower(): v for n, v in request["headers"]}.get("content-type", "")
    if "json" in content_type and body and not request.get("body_truncated"):
        document = json.loads(body)
        document["signed"] = True
        body = json.dumps(document).encode()
        reply["body_base64"] = base64.b64encode(body).decode()
    message = request["method"].encode() + b" " + request["url"].encode() + b"\n" + body
    reply["headers"]["set"]["X-Signature"] = hmac.new(KEY, message, hashlib.sha256).hexdigest()
    print(json.dumps(reply), flush=True)
