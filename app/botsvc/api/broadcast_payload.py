"""A broadcast's payload: checked at createBroadcast by the method's own
schema (the one validator) and, where only the handler can tell, by trying
it on a member and rolling back; and sent to each recipient by the method's
own prepare step and handler, as if the bot had called it with the
recipient's chat_id (``make_sender``, used by the delivery job in
``broadcast_delivery.py``).
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from marshmallow import ValidationError

from botsvc.api.registry import METHODS, Call
from botsvc.auth import Bot
from botsvc.catalogue.validation import translate_error
from botsvc.config import Settings
from botsvc.contract import CHAT_ID_HEX_DIGITS, CHAT_ID_PREFIX
from botsvc.db import transaction
from botsvc.errors import ApiError, ErrorCode, invalid

BROADCAST_METHODS = ("sendMessage", "sendPhoto", "sendVoice", "sendVideo", "sendAudio",
                     "sendDocument", "sendAnimation", "sendCard")
NOT_IN_BULK = ("chat_id", "reply_to_message_id")
# Stands in for the recipient while a payload is checked without one; any
# well-formed chat_id would do, the schema only checks the shape.
PLACEHOLDER_CHAT_ID = CHAT_ID_PREFIX + "0" * CHAT_ID_HEX_DIGITS



def validate_payload(method_name: str, payload: dict) -> dict:
    """The payload checked by the method's own schema (the one validator), as
    if sent with a chat_id; errors name field ``payload`` and give the path."""
    method = METHODS.get(method_name)
    if method_name not in BROADCAST_METHODS:
        raise invalid("method", f"method must be one of {', '.join(BROADCAST_METHODS)}")
    if method is None or method.schema is None:
        raise invalid("method", f"method {method_name} is not available on this server")
    for name in NOT_IN_BULK:
        if name in payload:
            raise invalid("payload", f"payload.{name}: not allowed in a broadcast",
                          path=f"payload.{name}")
    try:
        loaded = method.schema.load({**payload, "chat_id": PLACEHOLDER_CHAT_ID})
    except ValidationError as err:
        raise translate_error({"payload": err.messages}) from None
    loaded.pop("chat_id", None)
    return loaded


@dataclass(frozen=True)
class Sender:
    """``one(chat_id) -> Message`` through the method's own path, and, when
    the method has one, ``many(chats) -> [Message]``: the same for many
    active chats in one go (``Method.send_to_many``)."""
    one: Callable[[str], dict]
    many: Callable[[list[sqlite3.Row]], list[dict]] | None = None


def make_sender(conn: sqlite3.Connection, settings: Settings, bot: Bot, method_name: str,
                payload: dict) -> Sender:
    """The method's sender for this payload. Its prepare step (if any) runs
    here, outside the write transaction, as the dispatcher runs it; a
    broadcast payload has no file parts, so it depends on the payload alone.
    A payload that no longer passes gives a sender that fails every
    recipient with that error."""
    try:
        params = validate_payload(method_name, payload)
        method = METHODS[method_name]
        prepared = None
        if method.prepare is not None:
            prepared = method.prepare(Call(conn, settings, bot, method_name, dict(params)))
    except ApiError as error:
        setup_error = error

        def fail(chat_id: str) -> dict:
            raise setup_error
        return Sender(fail)

    def send(chat_id: str) -> dict:
        call = Call(conn, settings, bot, method_name, {**params, "chat_id": chat_id},
                    prepared=prepared)
        return method.handler(call)

    many = None
    if method.send_to_many is not None:
        def many(chats: list[sqlite3.Row]) -> list[dict]:
            call = Call(conn, settings, bot, method_name, dict(params), prepared=prepared)
            return method.send_to_many(call, chats)
    return Sender(send, many)


class _Rollback(Exception):
    pass


def try_payload(conn: sqlite3.Connection, settings: Settings, bot: Bot, method_name: str,
                payload: dict, chat: sqlite3.Row) -> None:
    """Send the payload to ``chat`` and undo it, so that what only the handler
    checks (say, a file_id that is unknown or of the wrong kind) is refused at
    createBroadcast as a payload error instead of failing every recipient.
    Runs inside createBroadcast's transaction: with no file parts in a
    broadcast payload, a prepare step has no slow work to do."""
    send = make_sender(conn, settings, bot, method_name, payload).one
    try:
        with transaction(conn):  # a savepoint, always rolled back
            send(chat["chat_id"])
            raise _Rollback
    except _Rollback:
        return
    except ApiError as error:
        if error.code != ErrorCode.INVALID_PARAMETER:
            return  # about this chat, not the payload; the worker will record it
        raise as_payload_error(error) from None


def check_payload_references(conn: sqlite3.Connection, bot_id: int, method_name: str,
                             payload: dict) -> None:
    """What the payload refers to (a file_id: known, this bot's, clean, of the
    method's kind), checked whether or not any member is there to try it on."""
    check = METHODS[method_name].check_references
    if check is None:
        return
    try:
        check(conn, bot_id, payload)
    except ApiError as error:
        raise as_payload_error(error) from None


def as_payload_error(error: ApiError) -> ApiError:
    """A method's INVALID_PARAMETER restated against createBroadcast's payload."""
    field = error.parameters.get("field", "")
    extra = {k: v for k, v in error.parameters.items() if k not in ("field", "path")}
    path = error.parameters.get("path", field)
    return invalid("payload", error.description, path=f"payload.{path}", **extra)
