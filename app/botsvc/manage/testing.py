"""The testing tools as operator methods. getClock and
getWebhookDeliveries are always there; the rest exist only with
BOTSVC_TEST_TOOLS=1 (``test_tool=True``), since they would wreck a real
installation."""
from __future__ import annotations

from flask import current_app
from marshmallow import validate

from botsvc import clock
from botsvc.catalogue import results
from botsvc.catalogue.validation import Bool, CursorField, Int, LimitField, Str, StrictSchema
from botsvc.db import transaction
from botsvc.domain import faults, installation, webhook_deliveries
from botsvc.domain.bots import require_bot
from botsvc.jobs import make_periodic_jobs_due, wake_all
from botsvc.manage.dispatch import operator_method
from botsvc.manage.methods import ApiMethodName, BotIdSchema


class AdvanceClockSchema(StrictSchema):
    seconds = Int(min=1, max=clock.MAX_ADVANCE_SECONDS, required=True)


class InjectFaultSchema(BotIdSchema):
    method = ApiMethodName(required=True)
    error_code = Str(validate=[validate.OneOf(
        [code.value for code in faults.INJECTABLE_CODES],
        error="must be one of " + ", ".join(code.value for code in faults.INJECTABLE_CODES))])
    delay_ms = Int(min=0, max=faults.MAX_DELAY_MS, load_default=0)
    count = Int(min=1, max=faults.MAX_COUNT, load_default=1)


class WebhookDeliveriesSchema(BotIdSchema):
    limit = LimitField()
    cursor = CursorField()
    detail = Bool(load_default=False, metadata={
        "description": "add each attempt's request and response (headers and body, 4 KiB each)"})


@operator_method("getClock", result=results.ClockReading,
                 summary="The service's clock and its offset from the machine's")
def get_clock(conn, p):
    return clock.reading()


@operator_method("advanceClock", AdvanceClockSchema(), result=results.ClockReading,
                 summary="Move the service's clock ahead (BOTSVC_TEST_TOOLS=1)", test_tool=True)
def advance_clock(conn, p):
    with transaction(conn):
        clock.advance(conn, p["seconds"])
        make_periodic_jobs_due(conn)
        # Retries, expiries and clean-ups that just became due run now here;
        # the other processes see the new offset at their next tick (<= 1 s).
        conn.after_commit(wake_all)
    return clock.reading()


@operator_method("injectFault", InjectFaultSchema(), result=results.TRUE,
                 summary="Delay or fail a bot's next calls of a method (BOTSVC_TEST_TOOLS=1)",
                 test_tool=True)
def inject_fault(conn, p):
    faults.inject(conn, p["bot_id"], p["method"], p.get("error_code"), p["delay_ms"],
                  p["count"])
    return True


@operator_method("clearFaults", BotIdSchema(), result=results.TRUE,
                 summary="Drop a bot's pending injected faults (BOTSVC_TEST_TOOLS=1)", test_tool=True)
def clear_faults(conn, p):
    faults.clear(conn, p["bot_id"])
    return True


@operator_method("reset", result=results.TRUE,
                 summary="Empty the installation (BOTSVC_TEST_TOOLS=1)", test_tool=True)
def reset(conn, p):
    installation.reset_installation(conn, current_app.config["SETTINGS"].data_dir)
    return True


@operator_method("getWebhookDeliveries", WebhookDeliveriesSchema(),
                 result=results.WebhookDeliveriesPage,
                 summary="A bot's webhook delivery attempts of the last 24 hours, newest first")
def get_webhook_deliveries(conn, p):
    require_bot(conn, p["bot_id"])
    return webhook_deliveries.deliveries_page(conn, p["bot_id"], p["limit"], p.get("cursor"),
                                              clock.time(), detail=p["detail"])
