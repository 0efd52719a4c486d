"""Local webhook receivers and their behaviours, for the webhook tests and
the benchmarks: a real HTTP(S) server on 127.0.0.1 that records every
request (path, lower-cased headers, body, arrival time, and which of its TCP
connections carried it) and counts the connections it accepted. It keeps a
connection open between requests (HTTP/1.1), as receivers do."""
from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    receiver: Receiver

    def get_request(self):
        sock, address = super().get_request()
        self.receiver.connections += 1
        # As production servers do: without it, the answer waits behind
        # Nagle's algorithm for the ACK of the TLS 1.3 session tickets, which
        # the client delays by up to 40 ms.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, address

    def handle_error(self, request, client_address):
        # A client that refuses our certificate, or hangs up at the deadline,
        # is part of what these tests provoke; keep it out of the output.
        self.receiver.errors += 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        receiver = self.server.receiver
        receiver.requests.append({
            "connection": id(self.connection),
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
            "at": time.perf_counter(),
        })
        receiver.respond(self)

    def log_message(self, *args):
        pass

    def finish(self):
        super().finish()
        self.server.receiver.closed += 1


def answer(status: int, *, headers: dict[str, str] | None = None, body: bytes = b"ok"):
    def respond(handler: _Handler) -> None:
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    return respond


class Receiver:
    def __init__(self, ssl_context: ssl.SSLContext | None, respond: Callable[[_Handler], None],
                 host: str = "127.0.0.1", port: int = 0):
        self.requests: list[dict] = []
        self.sni: list[str | None] = []
        self.errors = 0
        self.connections = 0   # TCP connections accepted
        self.closed = 0        # ... and ended (by either side)
        self.respond = respond
        self.release = threading.Event()   # lets hanging handlers finish at teardown
        self.server = _Server((host, port), _Handler)
        self.server.receiver = self
        if ssl_context is not None:
            ssl_context.sni_callback = lambda sock, name, ctx: self.sni.append(name)
            # Handshake in the handler thread, not in the accept loop.
            self.server.socket = ssl_context.wrap_socket(
                self.server.socket, server_side=True, do_handshake_on_connect=False)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def statuses(*codes):
    """A receiver that answers each code in turn, then the last one forever."""
    remaining = list(codes)

    def respond(handler):
        code = remaining.pop(0) if len(remaining) > 1 else remaining[0]
        handler.send_response(code)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    return respond


def hang(handler):
    """Never answer (until the receiver is released at teardown)."""
    handler.server.receiver.release.wait(30)


def hold(handler):
    """Answer 200 once the test releases the receiver."""
    handler.server.receiver.release.wait(30)
    statuses(200)(handler)
