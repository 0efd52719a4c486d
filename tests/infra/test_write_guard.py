"""The rule "nothing is written before the body is read" fails loudly
(app/botsvc/write_guard.py): a request that carries a body cannot write
until it has read it, or has answered without it. Routes of a test
blueprint on the real app, through Flask's test client."""
from __future__ import annotations

import logging

import pytest
from flask import Blueprint, jsonify, request

from botsvc.db import get_db, transaction

probe = Blueprint("write_probe", __name__)


def write(conn) -> None:
    with transaction(conn):
        conn.execute("UPDATE platform SET clock_offset = clock_offset WHERE id = 1")


@probe.route("/write-probe/before", methods=["GET", "POST"])
def write_before_the_body():
    write(get_db())
    request.get_data()
    return jsonify(wrote=True)


@probe.route("/write-probe/after", methods=["POST"])
def write_after_the_body():
    request.get_data()
    write(get_db())
    return jsonify(wrote=True)


@probe.route("/write-probe/unread", methods=["POST"])
def answer_without_the_body():
    return jsonify(read=False)


@probe.after_request
def write_once_answered(response):
    if request.path.endswith("/unread"):
        write(get_db())      # the answer is made: never parked
    return response


@pytest.fixture
def probed(make_app):
    app = make_app()
    app.register_blueprint(probe)
    return app.test_client()


@probe.route("/write-probe/bare", methods=["POST"])
def write_bare_before_the_body():
    get_db().execute("UPDATE platform SET clock_offset = clock_offset WHERE id = 1")
    request.get_data()
    return jsonify(wrote=True)


def test_a_write_before_the_body_is_read_fails_loudly(probed, caplog):
    with caplog.at_level(logging.ERROR):
        answer = probed.post("/write-probe/before", data=b'{"a": 1}',
                             content_type="application/json")
    assert answer.status_code == 500
    assert "WrittenBeforeTheBody: a write began before the request's body was read" \
        in caplog.text


def test_a_bare_write_before_the_body_is_read_fails_loudly_too(probed, caplog):
    """Written outside ``transaction``: caught once the body is read."""
    with caplog.at_level(logging.ERROR):
        answer = probed.post("/write-probe/bare", data=b'{"a": 1}',
                             content_type="application/json")
    assert answer.status_code == 500
    assert "WrittenBeforeTheBody: rows were written before the request's body was read" \
        in caplog.text


def test_writes_go_on_once_the_body_is_read_or_without_a_body(probed):
    answer = probed.post("/write-probe/after", data=b'{"a": 1}', content_type="application/json")
    assert (answer.status_code, answer.get_json()) == (200, {"wrote": True})
    assert probed.get("/write-probe/before").status_code == 200       # no body: nothing to park
    answer = probed.post("/write-probe/unread", data=b"x" * 100)
    assert (answer.status_code, answer.get_json()) == (200, {"read": False})
    # The thread's connection is writable again for the next request.
    assert probed.get("/write-probe/before").status_code == 200
