"""What botsvc's gunicorn worker (app/botsvc/gunicorn_worker.py) reads in its
main loop, which holds no thread: a request's head, until it is whole, and a
parked body (app/botsvc/connection/body.py), until it is whole, each under its
deadline; then the request goes to a thread. A connection on its way is an
``Arriving``; a refusal is answered whole and the connection closed without
waiting (``sockets.Lingering``).
"""
from __future__ import annotations

import contextlib
import selectors
import socket
import time
from functools import partial

from gunicorn import util

from botsvc.connection import body, chunked, request_head, sockets, spool, wire
from botsvc.errors import ApiError, RateLimited

HEAD_SECONDS = 10.0


class Arriving:
    """A connection whose request head, or parked body (``spool``), is on
    its way, read by the main loop."""

    __slots__ = ("conn", "scanner", "deadline", "waiting", "spool", "body_left", "holding",
                 "framing")

    def __init__(self, conn, deadline: float):
        self.conn = conn
        self.scanner = request_head.HeadScanner()
        self.deadline = deadline
        self.waiting = False        # registered with the poller
        self.spool = None
        self.body_left = 0          # of a body of declared length
        self.holding: spool.Holding | None = None     # its share of the spool's bounds
        self.framing: chunked.ChunkedEnd | None = None  # a chunked body's


class MainLoopReading:
    """The worker's part that runs in its main loop. The worker gives it
    ``poller``, ``lingering``, ``log``, ``nr_conns``, ``arriving`` (conn ->
    Arriving), ``ledger`` (spool.Ledger), ``spool_dir``, ``upload_max_bytes``,
    ``to_thread(conn)`` and ``refusal(error, request_id) -> bytes``."""

    # -- the head ---------------------------------------------------------------------

    def read_head(self, arriving: Arriving, data: bytes = b"", *,
                  last_call: bool = False) -> None:
        sock = arriving.conn.sock.raw
        scanner = arriving.scanner
        try:
            complete = scanner.feed(data) if data else False
            while not complete:
                data = sock.recv(sockets.RECV_BYTES)
                if not data:
                    return self.drop(arriving)     # the client went away
                complete = scanner.feed(data)
        except BlockingIOError:
            if last_call:
                return self.refuse(arriving, wire.request_timeout())
            return self._wait(arriving)
        except ApiError as refused:
            return self.refuse(arriving, refused)
        except OSError:
            return self.drop(arriving)
        self._stop_waiting(arriving)
        dsock = arriving.conn.sock
        dsock.head, dsock.request_id = scanner.data, scanner.request_id
        dsock.declared = declared = body.declared(scanner.data, scanner.head_end)
        dsock.head_end = scanner.head_end
        dsock.body_length = declared.length if declared.length and declared.parkable else 0
        dsock.body_in_head = len(scanner.data) - scanner.head_end
        dsock.chunked_whole = declared.chunked and self._whole_in_head(dsock)
        self.to_thread(arriving.conn)

    def _whole_in_head(self, dsock) -> bool:
        """Whether a chunked body came whole with its head (then it is not parked)."""
        framing = chunked.ChunkedEnd(dsock.declared.limit(self.upload_max_bytes))
        try:
            return framing.feed(bytes(dsock.head[dsock.head_end:])) is not None
        except (ApiError, chunked.Malformed):
            return True     # the thread reads what there is and answers it

    # -- a parked body ------------------------------------------------------------------

    def park(self, conn) -> None:
        """The app read a body that has not all arrived: read it here, then
        serve the request again from its first byte."""
        dsock = conn.sock
        replay, dsock.replay = dsock.replay, None
        conn.parser, conn.initialized = None, False
        dsock.raw.setblocking(False)
        arriving = Arriving(conn, 0.0)
        arriving.scanner.data = replay
        arriving.holding, dsock.holding = dsock.holding, None
        if arriving.holding.probation:
            arriving.deadline = time.monotonic() + spool.PROBATION_SECONDS
        arriving.spool = spool.new_spool(self.spool_dir)
        if dsock.declared.chunked:
            arriving.framing = chunked.ChunkedEnd(dsock.declared.limit(self.upload_max_bytes))
            return self._read_chunked(arriving, bytes(replay[dsock.head_end:]))
        arriving.body_left = (dsock.body_length - dsock.body_in_head
                              - (len(replay) - dsock.head_length))   # what the app's try read
        self._read_body(arriving)

    def _read_body(self, arriving: Arriving, *, last_call: bool = False) -> None:
        dsock = arriving.conn.sock
        try:
            while arriving.body_left > 0:
                data = dsock.raw.recv(min(sockets.RECV_BYTES, arriving.body_left))
                if not data:
                    return self.drop(arriving)
                self.ledger.write(arriving.holding, arriving.spool, data)
                arriving.body_left -= len(data)
        except ApiError as refused:   # the spool's disk is full
            return self.refuse(arriving, refused)
        except BlockingIOError:
            return self._body_late(arriving, dsock.body_length - arriving.body_left, last_call)
        except OSError:
            return self.drop(arriving)
        self._body_whole(arriving)

    def _read_chunked(self, arriving: Arriving, already: bytes = b"", *,
                      last_call: bool = False) -> None:
        """A chunked body: bytes are peeked, and only those up to its end taken
        (what follows is the connection's next request)."""
        dsock = arriving.conn.sock
        try:
            if already and self._chunk_arrived(arriving, already, taken=True):
                return self._body_whole(arriving)
            while True:
                data = dsock.raw.recv(sockets.RECV_BYTES, socket.MSG_PEEK)
                if not data:
                    return self.drop(arriving)
                if self._chunk_arrived(arriving, data):
                    return self._body_whole(arriving)
        except chunked.Malformed:
            return self._body_whole(arriving)   # gunicorn answers it, in a thread
        except ApiError as refused:   # too large, or no room
            return self.refuse(arriving, refused)
        except BlockingIOError:
            return self._body_late(arriving, arriving.spool.tell(), last_call)
        except OSError:
            return self.drop(arriving)

    def _chunk_arrived(self, arriving: Arriving, data: bytes, *, taken: bool = False) -> bool:
        """``data``, peeked, or ``taken`` already (then it is in the request's
        head, to be served again from there): is the body's end in it?"""
        end = arriving.framing.feed(data)
        if not taken:
            data = data if end is None else data[:end]
            arriving.conn.sock.raw.recv(len(data))   # what was peeked, no more
            self.ledger.grow(arriving.holding, len(data))
            self.ledger.write(arriving.holding, arriving.spool, data)
        return end is not None

    def _body_late(self, arriving: Arriving, received: int, last_call: bool) -> None:
        probation = arriving.holding is not None and arriving.holding.probation
        if last_call:
            return self.refuse(arriving, RateLimited(1, "parked requests") if probation
                               else wire.request_timeout())
        if not probation:
            arriving.deadline = sockets.body_deadline(arriving.conn.sock.started, received)
        return self._wait(arriving)

    def _body_whole(self, arriving: Arriving) -> None:
        self._stop_waiting(arriving)
        self._let_go(arriving)
        dsock = arriving.conn.sock
        arriving.spool.seek(0)
        dsock.head, dsock.spool, arriving.spool = arriving.scanner.data, arriving.spool, None
        dsock.body_length = 0        # whole: the app reads it without parking
        dsock.chunked_whole = True
        self.to_thread(arriving.conn)

    # -- waiting, refusing, dropping ----------------------------------------------------

    def _wait(self, arriving: Arriving) -> None:
        if not arriving.waiting:
            self.poller.register(arriving.conn.sock.raw, selectors.EVENT_READ,
                                 partial(self.readable, arriving))
            arriving.waiting = True
            self.arriving[arriving.conn] = arriving

    def readable(self, arriving: Arriving, _sock, *, last_call: bool = False) -> None:
        if arriving.spool is None:
            self.read_head(arriving, last_call=last_call)
        elif arriving.framing is not None:
            self._read_chunked(arriving, last_call=last_call)
        else:
            self._read_body(arriving, last_call=last_call)

    def _stop_waiting(self, arriving: Arriving) -> None:
        if arriving.waiting:
            arriving.waiting = False
            del self.arriving[arriving.conn]
            with contextlib.suppress(OSError, ValueError, KeyError):
                self.poller.unregister(arriving.conn.sock.raw)

    def refuse(self, arriving: Arriving, error: ApiError) -> None:
        self._stop_waiting(arriving)
        self._discard(arriving)
        sock = arriving.conn.sock.raw
        self.log.info("Refused a request from ip=%s: %s %s", ip_of(arriving.conn.client),
                      error.http_status, error.code)
        with contextlib.suppress(OSError):
            sock.send(self.refusal(error, arriving.scanner.request_id))   # a few hundred bytes
        self.lingering.close(sock)

    def drop(self, arriving: Arriving) -> None:
        self._stop_waiting(arriving)
        self._discard(arriving)
        util.close(arriving.conn.sock.raw)
        self.closed()

    def _discard(self, arriving: Arriving) -> None:
        self._let_go(arriving)
        if arriving.spool is not None:
            arriving.spool.close()
            arriving.spool = None

    def _let_go(self, arriving: Arriving) -> None:
        if arriving.holding is not None:
            self.ledger.release(arriving.holding)
            arriving.holding = None

    def closed(self) -> None:
        self.nr_conns -= 1


def ip_of(addr) -> str:
    return addr[0] if isinstance(addr, tuple) and addr else ""
