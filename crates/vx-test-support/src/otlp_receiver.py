"""An OTLP/HTTP receiver for vx's tests: every POST to /v1/traces is decoded with the official
OpenTelemetry protobuf definitions (PyPI `opentelemetry-proto`) from OTLP's JSON encoding, and
anything they reject is answered 400 and recorded as an error.

OTLP's JSON encoding is protobuf's JSON mapping with one change the receiver undoes first, as the
OTLP specification tells receivers to: trace and span ids are hex strings, not base64.

Usage: otlp_receiver.py OUT_DIR [--silent]
Prints `listening on <port>` once bound to 127.0.0.1. Each request N writes OUT_DIR/N.json:
{"path", "headers", "header_names", "ok", "error"?, "request"?}, where "request" is the decoded message printed
back with protobuf's JSON mapping (ids as hex again). With --silent it accepts connections and
never answers (a server that hangs).
"""

import base64
import binascii
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

OUT = sys.argv[1]
SILENT = "--silent" in sys.argv
COUNT = [0]
LOCK = threading.Lock()


def ids_to_base64(value):
    """Hex trace/span ids (OTLP JSON) to base64 (protobuf JSON), checking their length."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(item, str):
                raw = binascii.unhexlify(item)  # raises on anything but hex
                want = 16 if key == "traceId" else 8
                if len(raw) != want:
                    raise ValueError(f"{key} {item!r} is {len(raw)} bytes, not {want}")
                out[key] = base64.b64encode(raw).decode()
            else:
                out[key] = ids_to_base64(item)
        return out
    if isinstance(value, list):
        return [ids_to_base64(v) for v in value]
    return value


def ids_to_hex(value):
    if isinstance(value, dict):
        return {
            k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else ids_to_hex(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [ids_to_hex(v) for v in value]
    return value


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        if SILENT:
            time.sleep(3600)
            return
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        with LOCK:
            COUNT[0] += 1
            n = COUNT[0]
        record = {
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            # Every name as sent, repeats included (the dict above keeps the last value).
            "header_names": [k.lower() for k in self.headers.keys()],
            "ok": False,
        }
        status = 400
        try:
            if self.path != "/v1/traces":
                raise ValueError(f"unexpected path {self.path}")
            if self.headers.get("Content-Type", "").split(";")[0] != "application/json":
                raise ValueError(f"Content-Type {self.headers.get('Content-Type')!r}")
            message = ExportTraceServiceRequest()
            json_format.Parse(json.dumps(ids_to_base64(json.loads(body))), message)
            decoded = json_format.MessageToDict(message)
            record["request"] = ids_to_hex(decoded)
            record["ok"] = True
            status = 200
        except Exception as error:  # noqa: BLE001 - every rejection is the test's finding
            record["error"] = f"{type(error).__name__}: {error}"
        path = os.path.join(OUT, f"{n}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(record, f)
        os.rename(path + ".tmp", path)
        reply = b"{}" if status == 200 else json.dumps({"error": record.get("error")}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"listening on {server.server_address[1]}", flush=True)
server.serve_forever()
