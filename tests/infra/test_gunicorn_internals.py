"""app/botsvc/gunicorn_worker.py extends gunicorn's gthread worker by overriding its
methods and reading its state, none of which gunicorn documents as an API.
setup.cfg pins gunicorn to one minor range; this test names every internal
the worker (and app/botsvc/connection/) relies on, so that an upgrade which changes
one fails here, loudly, rather than as a dropped request in production."""
from __future__ import annotations

import inspect
from importlib.metadata import version

from gunicorn import util
from gunicorn.http import body as gunicorn_body
from gunicorn.http import message, unreader, wsgi
from gunicorn.http.errors import LimitRequestHeaders, LimitRequestLine
from gunicorn.workers import gthread

from botsvc.gunicorn_worker import BotsvcWorker
from tests.support.pins import pinned


def test_the_installed_gunicorn_is_the_pinned_minor_range():
    pin = pinned("gunicorn")
    assert str(pin.specifier) == "<27.1,>=27.0.1"
    assert version("gunicorn") in pin.specifier


def params(function) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_the_thread_worker_methods_the_worker_overrides_or_calls_are_there():
    worker = gthread.ThreadWorker
    overridden = {"check_config": ["cfg", "log"], "init_process": ["self"], "run": ["self"],
                  "enqueue_req": ["self", "conn"], "murder_keepalived": ["self", "force"],
                  "handle": ["self", "conn"], "handle_request": ["self", "req", "conn"],
                  "finish_request": ["self", "conn", "fs"],
                  "handle_error": ["self", "req", "client", "addr", "exc"],
                  "on_client_socket_readable": ["self", "conn", "client"]}
    for name, expected in overridden.items():
        assert params(getattr(worker, name)) == expected, name
    assert issubclass(BotsvcWorker, worker)
    # State the worker reads and changes: the kept-alive connections (oldest
    # first), the count of open connections, the poller.
    source = inspect.getsource(worker)
    for attribute in ("self.keepalived_conns = deque()", "self.nr_conns = 0",
                      "self.poller = selectors.DefaultSelector()"):
        assert attribute in source, attribute


def test_the_connection_parts_the_worker_uses_are_there():
    conn = gthread.TConn
    assert params(conn.__init__) == ["self", "cfg", "sock", "client", "server"]
    for attribute in ("self.parser = None", "self.initialized = False", "self.timeout = None"):
        assert attribute in inspect.getsource(conn.__init__), attribute
    assert params(conn.init) == ["self"]
    # The head read by the main loop goes back into the parser's buffer.
    reader = unreader.Unreader()
    reader.unread(b"ahead")
    assert reader.take_buffered() == b"ahead"
    assert params(util.close) == ["sock"]
    assert issubclass(LimitRequestLine, Exception) and issubclass(LimitRequestHeaders, Exception)


def test_a_parked_request_unwinds_through_handle_request():
    # body.Parked is a BaseException: gthread's handle_request lets it
    # through (it catches only Exception and SystemExit), and so does handle.
    source = inspect.getsource(gthread.ThreadWorker.handle_request)
    assert "except (Exception, SystemExit):" in source
    assert "except BaseException" not in inspect.getsource(gthread.ThreadWorker.handle)
    assert "except:" not in source


def test_the_body_parts_wire_reads_are_there():
    # wire._declared_rest counts down a body of known length; ParkingInput
    # serves read/readline/readlines (Werkzeug uses readinto only when it exists).
    length_reader = gunicorn_body.LengthReader(unreader.IterUnreader([b"abc"]), 3)
    stream = gunicorn_body.Body(length_reader)
    assert stream.reader is length_reader and length_reader.length == 3
    assert stream.read(2) == b"ab" and length_reader.length == 0   # Body buffers ahead
    assert not hasattr(gunicorn_body.Body, "readinto")
    for name in ("read", "readline", "readlines"):
        assert callable(getattr(gunicorn_body.Body, name))
    # close_connection sets the request's own flag, which the answer obeys.
    assert "self.must_close = False" in inspect.getsource(message.Message.__init__)
    assert "if self.must_close:" in inspect.getsource(message.Message.should_close)
    assert "_expected_100_continue" in inspect.getsource(wsgi.create)


def test_the_quit_path_the_worker_replaces_is_the_one_it_knows():
    """BotsvcWorker.handle_quit replaces gthread's quick shutdown, which shuts
    the thread pool, runs the worker_int hook, sleeps 0.1 s in the signal
    handler and exits through the interpreter (waiting for the pool's
    threads); handle_exit (SIGTERM) is extended. Both are the handlers
    Worker.init_signals installs, with these parameters."""
    from gunicorn.workers import base

    for name in ("handle_quit", "handle_exit"):
        assert params(getattr(gthread.ThreadWorker, name)) == ["self", "sig", "frame"], name
        assert name in vars(BotsvcWorker), name
    signals = inspect.getsource(base.Worker.init_signals)
    for installed in ("signal.signal(signal.SIGQUIT, self.handle_quit)",
                      "signal.signal(signal.SIGINT, self.handle_quit)",
                      "signal.signal(signal.SIGTERM, self.handle_exit)"):
        assert installed in signals, installed
    quit_source = inspect.getsource(base.Worker.handle_quit)
    assert "self.cfg.worker_int(self)" in quit_source   # the hook ours runs too
    assert "time.sleep(0.1)" in quit_source             # what ours leaves out
    assert "self.tpool.shutdown" in inspect.getsource(gthread.ThreadWorker.handle_quit)
