"""``CallFacts``: what the /v2 dispatcher knows of one call, the one value
it hands the call log (app/botsvc/call_log/capture.py: ``call_started``,
``call_ended``), and what a record is made of (app/botsvc/call_log/record.py).
Plain values, no Flask."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botsvc import clock

if TYPE_CHECKING:   # types only: the catalogue and the answer are not needed at run time
    from botsvc.catalogue.body import RequestBody
    from botsvc.catalogue.entry import Method


class CallFacts:
    """What the dispatcher knows of one /v2 call: filled in on the way,
    handed to the call log as the call starts and as it ends."""
    __slots__ = ("method", "key", "arrived_at", "arrived_ns", "bot_id", "token", "entry", "body", "fault",
                 "resent_from", "answer", "logged")

    def __init__(self, method: str, key: str | None):
        self.method = method                # the name called, known or not
        self.arrived_at = clock.machine_time()   # the record's date, with the clock's offset
        self.arrived_ns = clock.order_stamp()    # what the bot knew when it called (its order)
        self.key = key                      # the Idempotency-Key header, as sent
        self.bot_id: int | None = None      # the token's bot, once identified
        self.token: str | None = None
        self.entry: Method | None = None    # the catalogue's entry, once the body is read
        self.body: RequestBody | None = None
        self.fault = None                   # the testing tools' fault taken (domain.faults)
        self.resent_from: int | None = None  # resendCall's: the call of the log sent again
        # (status, body, headers) made in the call's transaction, then the
        # Response (None: the call unwound unanswered).
        self.answer: Any = None
        self.logged: Any = None   # the call log's own note of the call (None: the log is off)
