"""The plugin's own ``bot_under_test``: an exported test asks for it, and
until the developer's conftest.py defines it, it fails saying what to define
(no server is started for that: the in-process run below would refuse
one, as this suite refuses a server to a test without the server marker)."""
from __future__ import annotations


def test_the_default_fixture_says_what_to_define(pytester):
    pytester.makepyfile(test_exported="def test_conversation(bot_under_test, botsvc_bot):\n"
                                      "    pass\n")
    run = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    out = run.stdout.str()
    assert run.ret == 1, out + run.stderr.str()
    assert "1 error" in out, out
    assert ("bot_under_test: set botsvc_bot_command (your bot as a process, e.g."
            " 'botsvc_bot_command = node bot.js' in pytest.ini) or botsvc_bot_object") in out
    assert ("or define a fixture named bot_under_test in your conftest.py: it starts your bot"
            " with botsvc_bot.base_url and botsvc_bot.token") in out, out
