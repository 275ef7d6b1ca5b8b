"""A real HTTP receiver for alert webhook tests: http.server on a free local port, on its own
thread, recording every POST (path, headers, body, arrival time). It can be stopped and started again on the
same port (a receiver that is down, then up), answer with any status and body, and answer slowly
(`delay` seconds per call, calls answered in parallel)."""
import hashlib
import hmac
import http.server
import json
import socket
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def signature(secret, body):
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class Receiver:
    def __init__(self, port=None, status=200, body=b"ok", delay=0):
        self.port = port or free_port()
        self.status = status
        self.body = body
        self.delay = delay
        self.calls = []
        self.lock = threading.Lock()
        self.httpd = None
        self.thread = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.lock:
                    receiver.calls.append({"path": self.path, "headers": dict(self.headers),
                                           "body": body, "t": time.time()})
                if receiver.delay:
                    time.sleep(receiver.delay)
                self.send_response(receiver.status)
                self.send_header("Content-Length", str(len(receiver.body)))
                self.end_headers()
                self.wfile.write(receiver.body)

            def log_message(self, *args):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def payloads(self):
        with self.lock:
            return [json.loads(c["body"]) for c in self.calls]

    def snapshot(self):
        with self.lock:
            return list(self.calls)
