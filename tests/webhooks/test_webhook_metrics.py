"""Webhook attempts in /metrics: each attempt counted once,
``delivered`` or ``failed``, after its outcome is recorded."""
import pytest

from botsvc import metrics
from botsvc.devkit.receivers import statuses


@pytest.fixture
def app(make_app, ca_file):
    return make_app(webhook_allow_private=True, webhook_ca_bundle=ca_file)


def attempts(result: str) -> float:
    return metrics.OWN.get_sample_value("botsvc_webhook_deliveries_total",
                                        {"result": result}) or 0.0


def test_each_attempt_is_counted_delivered_or_failed(bot, chat, operator, hook, run_pass,
                                                     clock):
    delivered, failed = attempts("delivered"), attempts("failed")
    receiver = hook(bot, statuses(500))
    run_pass()                                     # the start update: refused
    assert len(receiver.requests) == 1
    assert (attempts("delivered"), attempts("failed")) == (delivered, failed + 1)

    receiver = hook(bot)                           # a receiver that takes everything
    operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="two")
    run_pass()
    assert len(receiver.requests) == 2
    assert (attempts("delivered"), attempts("failed")) == (delivered + 2, failed + 1)
