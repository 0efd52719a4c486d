"""One execution of a /v2 method under the idempotency and rate rules, once
the dispatcher (app/botsvc/api/dispatch.py) has identified the bot, read the
body and computed its validation: replay a stored answer, or take the rate
and run the method, in one write transaction (``single``); a method that
prepares a file first claims its key, runs the slow part outside any
transaction, then stores (``claimed``). A call that writes nothing may still
answer on a full disk.
"""
from __future__ import annotations

import time

from flask import Response

from botsvc import disk, limits
from botsvc import idempotency as idem
from botsvc.api.registry import Call
from botsvc.call_log.capture import call_ended
from botsvc.call_log.facts import CallFacts
from botsvc.catalogue.entry import Method
from botsvc.db import transaction
from botsvc.envelope import REPLAY_HEADER, error_response, json_response, ok_body
from botsvc.errors import ApiError, ErrorCode
from botsvc.jsontext import dumps


class Run:
    """One execution of a method under the idempotency and rate rules."""

    def __init__(self, call: Call, method: Method, validated, key, fp, in_force,
                 facts: CallFacts):
        self.call, self.method, self.validated = call, method, validated
        self.facts = facts   # the call log's: its end handed in the transaction
        self.key, self.fp, self.limits = key, fp, in_force
        self.conn = call.conn
        # Whether the handler changed any row (None: it has not run): a request
        # that wrote nothing may answer on a full disk (``single``).
        self.handler_wrote: bool | None = None

    def single(self) -> Response:
        """Check, consume, execute and store in one write transaction; the
        answer is made once the write lock is released (every other writer
        waits for that lock)."""
        try:
            return json_response(*self._checked(self._execute_and_store))
        except ApiError as error:
            if error.code != ErrorCode.STORAGE_FULL or self.key or self.handler_wrote:
                raise
        return self._read_on_full_disk()

    def _read_on_full_disk(self) -> Response:
        """The disk could not take the rate's record, and the request writes
        nothing else (no Idempotency-Key, a handler that changed no row): it is
        a read, and answers. Its rate is checked against the stored state and
        counted in this process (limits.consume_unrecorded). Should the handler
        write after all, that is refused as STORAGE_FULL."""
        with transaction(self.conn):
            limits.consume_unrecorded(self.conn, self.call.bot.id, self.limits)
            status, body, headers = self._execute_in_savepoint()
            if self.handler_wrote:
                raise disk.storage_full()
        return json_response(status, body, headers)

    def claimed(self) -> Response:
        """Claim the key, run the slow part outside any transaction, then store."""
        replay = self._checked(self._claim)
        if replay is not None:
            return json_response(*replay)
        try:
            if isinstance(self.validated, ApiError):
                raise self.validated
            self.call.params = self.validated
            self.call.prepared = self.method.prepare(self.call)
            with transaction(self.conn):
                body = ok_body(self.method.handler(self.call))
                self._store(200, body)
            return json_response(200, body)
        except ApiError as error:
            if error.code == ErrorCode.STORAGE_FULL:
                self._release_claim()
                raise
            try:
                with transaction(self.conn):
                    self._store(error.http_status, dumps(error.body()))
            except ApiError as failed:
                if failed.code != ErrorCode.STORAGE_FULL:
                    raise
                self._release_claim()   # the answer could not be kept: nothing is
                raise
            return error_response(error)
        except BaseException:
            self._release_claim()
            raise

    def _release_claim(self) -> None:
        """Free the key after a failure; on a full disk, as soon as the disk
        takes it (idempotency.release_later): a failed key is never stored."""
        if not self.key:
            return
        try:
            with transaction(self.conn):
                idem.release(self.conn, self.call.bot.id, self.key)
        except ApiError as error:
            if error.code != ErrorCode.STORAGE_FULL:
                raise
            idem.release_later(self.call.bot.id, self.key)

    def _checked(self, then):
        """In one write transaction: replay a stored result, or take the rate and
        run ``then``. While a duplicate with the same key runs, wait up to 5 s."""
        deadline = time.monotonic() + idem.WAIT_FOR_RUNNING_SECONDS
        while True:
            try:
                with transaction(self.conn):
                    answer = self._replay_or_none()
                    if answer is None:
                        limits.consume(self.conn, self.call.bot.id, self.limits)
                        answer = then()
                    if answer is not None:   # the record may go with the call's rows
                        self.facts.answer = answer
                        call_ended(self.facts, self.conn)
                    return answer
            except idem.StillRunning:
                if time.monotonic() >= deadline:
                    raise idem.in_progress() from None
                time.sleep(0.05)

    def _claim(self) -> None:
        if self.key:
            idem.claim(self.conn, self.call.bot.id, self.key, self.call.method, self.fp)

    def _execute_and_store(self) -> tuple[int, str, dict]:
        status, body, headers = self._execute_in_savepoint()
        self._store(status, body)
        return status, body, headers

    def _replay_or_none(self) -> tuple[int, str, dict] | None:
        if not self.key:
            return None
        stored = idem.lookup(self.conn, self.call.bot.id, self.key, self.call.method, self.fp)
        if stored is None:
            return None
        return stored.http_status, stored.body, {REPLAY_HEADER: "true"}

    def _execute_in_savepoint(self) -> tuple[int, str, dict]:
        if isinstance(self.validated, ApiError):
            error = self.validated
        else:
            self.call.params = self.validated
            changes = self.conn.total_changes
            try:
                with transaction(self.conn):  # a savepoint: a failure undoes only the handler
                    result = self.method.handler(self.call)
                self.handler_wrote = self.conn.total_changes != changes
                return 200, ok_body(result), {}
            except ApiError as raised:
                error = raised
                if error.code == ErrorCode.STORAGE_FULL:
                    raise
        return error.http_status, dumps(error.body()), error.headers()

    def _store(self, status: int, body: str) -> None:
        if self.key:
            idem.store(self.conn, self.call.bot.id, self.key, self.call.method, self.fp,
                       status, body)
