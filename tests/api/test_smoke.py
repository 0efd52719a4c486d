def test_bot_sends_a_message_to_a_started_chat(bot, chat, operator):
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hello")
    assert sent["text"] == "hello" and sent["type"] == "text" and sent["from_bot"] is True
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)
    assert [m["text"] for m in view["messages"]] == ["/start", "hello"]
