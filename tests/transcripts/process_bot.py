"""A bot that is its own process, as a bot in any language is: it reads
BOTSVC_BASE_URL and BOTSVC_BOT_TOKEN, polls getUpdates and answers, with
nothing of botsvc imported (the standard library only). Start is welcomed
with two buttons, a click edits that message and is answered, a text is
echoed. Its arguments make it misbehave for the tests:

- ``--shout``: echoes in capitals (a transcript of the polite bot fails);
- ``--exit-on TEXT``: prints a last line and exits with status 3 on TEXT;
- ``--hang``: starts a child, ignores SIGTERM and answers nothing (only
  SIGKILL stops it), writing its own and its child's pid to ``--pids FILE``.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

KEYBOARD = {"inline_keyboard": [[{"text": "Yes", "callback_data": "yes"},
                                 {"text": "No", "callback_data": "no"}]]}


def call(method, **params):
    request = urllib.request.Request(
        f"{os.environ['BOTSVC_BASE_URL']}/v2/{method}", data=json.dumps(params).encode(),
        headers={"Authorization": f"Bearer {os.environ['BOTSVC_BOT_TOKEN']}",
                 "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)["result"]


def handle(update, options):
    if "callback_query" in update:
        query = update["callback_query"]
        call("editMessageText", chat_id=query["chat_id"], message_id=query["message_id"],
             text=f"You picked {query['data']}")
        call("answerCallbackQuery", callback_query_id=query["id"], text="Saved")
        return
    message = update.get("message") or {}
    text = message.get("text", "")
    if options.exit_on and text == options.exit_on:
        print(f"giving up on {text!r}", file=sys.stderr, flush=True)
        sys.exit(3)
    if text.startswith("/start"):
        call("sendMessage", chat_id=message["chat"]["id"], text="Welcome",
             reply_markup=KEYBOARD)
    elif text:
        echo = text.upper() if options.shout else text
        call("sendMessage", chat_id=message["chat"]["id"], text=f"You said: {echo}")


def hang(pids_file):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open(pids_file, "a") as f:
        f.write(f"{os.getpid()} {child.pid}\n")
    print("hanging", flush=True)
    while True:
        time.sleep(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shout", action="store_true")
    parser.add_argument("--exit-on")
    parser.add_argument("--hang", action="store_true")
    parser.add_argument("--pids")
    options = parser.parse_args()
    print(f"process bot polling {os.environ['BOTSVC_BASE_URL']}", flush=True)
    if options.hang:
        hang(options.pids)
    offset = 0
    while True:
        for update in call("getUpdates", offset=offset):
            offset = update["update_id"] + 1
            handle(update, options)
        time.sleep(0.05)


if __name__ == "__main__":
    main()
