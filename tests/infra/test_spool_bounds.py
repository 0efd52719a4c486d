"""The parts under a parked body, alone: where a chunked body ends
(app/botsvc/connection/chunked.py) and what the spool admits
(app/botsvc/connection/spool.py). The real server's behaviour is in
test_parked_bounds.py and test_slow_bodies.py."""
from __future__ import annotations

import pytest

from botsvc.connection.chunked import ChunkedEnd, Malformed
from botsvc.connection.spool import SPOOL_MEMORY_BYTES, Bounds, Ledger, caller_of, new_spool
from botsvc.errors import ApiError

BODY = b"5\r\nhello\r\n3;name=value\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n"
NEXT = b"POST /v2/getMe HTTP/1.1\r\n"


@pytest.mark.parametrize("step", [1, 2, 3, 7, len(BODY) + len(NEXT)])
def test_the_end_of_a_chunked_body_is_found_however_it_arrives(step):
    framing, stream, seen = ChunkedEnd(100), BODY + NEXT, 0
    for start in range(0, len(stream), step):
        end = framing.feed(stream[start:start + step])
        if end is not None:
            assert seen + end == len(BODY)      # nothing of the next request
            break
        seen += len(stream[start:start + step])
    else:
        pytest.fail("no end found")
    assert framing.data_bytes == 8


def test_a_body_without_trailers_ends_at_its_last_crlf():
    assert ChunkedEnd(100).feed(b"2\r\nhi\r\n0\r\n\r\n" + NEXT) == 12


@pytest.mark.parametrize("bad", [b"zz\r\n", b"\r\n", b"2\r\nhiXY", b"1" * 9000])
def test_framing_that_is_not_chunked_is_left_to_gunicorn(bad):
    with pytest.raises(Malformed):
        ChunkedEnd(10_000).feed(bad)


def test_data_past_the_limit_is_request_too_large():
    framing = ChunkedEnd(8)
    framing.feed(b"5\r\nhello\r\n")
    with pytest.raises(ApiError) as refused:
        framing.feed(b"4\r\n")
    assert (refused.value.code.value, refused.value.parameters) == (
        "REQUEST_TOO_LARGE", {"limit": 8})


def ledger(tmp_path, **bounds) -> Ledger:
    values = dict(data_dir=str(tmp_path), min_free_bytes=0, total_bytes=1000,
                  caller_bytes=600, caller_requests=2)
    return Ledger(Bounds(**{**values, **bounds}))


def test_a_caller_past_its_bytes_or_the_total_is_storage_full(tmp_path):
    spool = ledger(tmp_path)
    held = spool.admit("a", 500)
    with pytest.raises(ApiError) as refused:
        spool.admit("a", 200)                       # 700 > 600 for one caller
    assert refused.value.code.value == "STORAGE_FULL"
    spool.admit("b", 450)
    with pytest.raises(ApiError):
        spool.admit("c", 100)                       # 1050 > 1000 in all
    spool.release(held)
    assert spool.admit("c", 100).counted == 100     # let go, the room is back


def test_a_caller_past_its_count_parks_on_probation(tmp_path):
    spool = ledger(tmp_path)
    first, second = spool.admit("a", 1), spool.admit("a", 1)
    third = spool.admit("a", 1)
    assert (first.probation, second.probation, third.probation) == (False, False, True)
    assert spool.admit("b", 1).probation is False   # another caller's own count
    spool.release(first)
    assert spool.admit("a", 1).probation is False


def test_a_body_that_would_take_the_disk_below_its_reserve_is_refused(tmp_path):
    spool = ledger(tmp_path, min_free_bytes=1 << 60, total_bytes=1 << 62, caller_bytes=1 << 62)
    with pytest.raises(ApiError) as refused:
        spool.admit("a", SPOOL_MEMORY_BYTES + 1)
    assert refused.value.code.value == "STORAGE_FULL"
    assert spool.admit("a", SPOOL_MEMORY_BYTES).counted   # kept in memory: no disk taken


def test_written_bytes_are_counted_once(tmp_path):
    spool = ledger(tmp_path)
    held = spool.admit("a", 10)
    with new_spool(str(tmp_path)) as file:
        spool.write(held, file, b"x" * 10)
        spool.grow(held, 5)
        spool.write(held, file, b"y" * 5)
    assert (held.counted, held.written) == (15, 15)
    spool.release(held)
    assert spool.admit("a", 600).counted == 600


def test_the_caller_is_its_credential_kept_as_a_digest():
    token = "123:abc"
    key = caller_of({"HTTP_AUTHORIZATION": f"Bearer {token}"})
    assert key == caller_of({"HTTP_AUTHORIZATION": f"bearer  {token}"}) and token not in key
    assert key != caller_of({"HTTP_COOKIE": "botsvc_sandbox=x"})
