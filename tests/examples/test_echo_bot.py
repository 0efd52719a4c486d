"""The echo bot against a real botsvc, through the botsvc pytest plugin."""
import pytest
from echo_bot import bot


@pytest.fixture
def echo_bot(botsvc_bot):
    polling = bot.polling(botsvc_bot.base_url, botsvc_bot.token)   # the bot, in a thread
    thread = polling.start_in_thread()
    yield polling
    polling.stop()
    thread.join(timeout=30)


def test_it_echoes_what_the_user_says(echo_bot, botsvc_user):
    botsvc_user.start()
    botsvc_user.say("hello, bot")
    assert botsvc_user.wait_for_message()["text"] == "hello, bot"


def test_it_rides_out_rate_limits_and_server_errors(botsvc, botsvc_bot, botsvc_user, echo_bot):
    botsvc.inject_fault(botsvc_bot, "getUpdates", error_code="INTERNAL_ERROR", count=2)
    botsvc.inject_fault(botsvc_bot, "sendMessage", error_code="RATE_LIMITED", count=1)
    botsvc_user.start()
    botsvc_user.say("still there?")
    assert botsvc_user.wait_for_message()["text"] == "still there?"
    assert [m["text"] for m in botsvc_user.messages_from_bot()] == ["still there?"]
    assert botsvc.wait_for_call(botsvc_bot, "sendMessage")["error_code"] == "RATE_LIMITED"
