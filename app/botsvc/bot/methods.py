"""One method per /v2 method, generated from the catalogue by
app/botsvc/devkit/bot_methods.py: do not edit (tests/bot/test_generated.py
fails when this file is stale; run ``python -m botsvc.devkit.bot_methods``).
Long because it is generated: every /v2 method twice (``Methods`` and
``AsyncMethods``) and every resource the contract names as a TypedDict.

Parameters are named as the contract names them; a parameter left as None is
not sent. A file parameter takes a file_id (str) or the file itself (bytes,
a path, an open file, or ``(file_name, bytes)``), sent as multipart. Results
are the contract's JSON, typed: each object is a TypedDict of its fields.
"""
from __future__ import annotations

import os
from typing import IO, Any, Literal, Required, TypedDict

FileInput = str | bytes | os.PathLike | IO[bytes] | tuple[str, bytes]


class Bot(TypedDict, total=False):
    id: Required[int]
    is_bot: Required[Literal[True]]
    username: Required[str]
    display_name: Required[str]
    description: Required[str]


class Chat(TypedDict, total=False):
    id: Required[str]
    type: Required[Literal['private']]
    status: Required[Literal['active', 'stopped']]
    started_at: Required[int]
    stopped_at: int


class Update(TypedDict, total=False):
    update_id: Required[int]
    message: Message
    membership: Membership
    callback_query: CallbackQuery


class Message(TypedDict, total=False):
    message_id: Required[int]
    chat: Required[MessageChat]
    date: Required[int]
    type: Required[Literal['text', 'photo', 'video', 'animation', 'audio', 'voice', 'document', 'card']]
    from_bot: Required[bool]
    text: str
    caption: str
    media: MessageMedia
    card: Card
    reply_markup: InlineKeyboard
    reply_to_message_id: int
    media_group_id: str
    edit_date: int


class MessageChat(TypedDict, total=False):
    id: Required[str]
    type: Required[Literal['private']]


class MessageMedia(TypedDict, total=False):
    file_id: Required[str]
    kind: Required[Literal['photo', 'video', 'animation', 'audio', 'document']]
    mime_type: Required[str]
    file_size: Required[int]
    file_name: str
    width: int
    height: int
    duration: float


class Card(TypedDict, total=False):
    type: Required[Literal['info', 'product', 'status', 'receipt']]
    title: Required[str]
    text: str
    subtitle: str
    fields: list[CardField]


class CardField(TypedDict, total=False):
    label: Required[str]
    value: Required[str]


class InlineKeyboard(TypedDict, total=False):
    inline_keyboard: Required[list[list[Button]]]


class Button(TypedDict, total=False):
    text: Required[str]
    url: str
    callback_data: str
    copy_text: str


class Membership(TypedDict, total=False):
    chat_id: Required[str]
    status: Required[Literal['active', 'stopped']]
    reason: Literal['blocked']
    start_parameter: str


class CallbackQuery(TypedDict, total=False):
    id: Required[str]
    chat_id: Required[str]
    message_id: Required[int]
    data: Required[str]


class WebhookInfo(TypedDict, total=False):
    url: Required[str]
    pending_update_count: Required[int]
    last_error: str
    last_error_at: int
    last_success_at: int


class MediaGroupItem(TypedDict, total=False):
    type: Required[Literal['photo', 'video']]
    media: Required[str]
    caption: str


class File(TypedDict, total=False):
    file_id: Required[str]
    kind: Required[Literal['photo', 'video', 'animation', 'audio', 'document']]
    mime_type: Required[str]
    file_name: Required[str]
    file_size: Required[int]
    sha256: Required[str]
    width: int
    height: int
    duration: float
    pages: int


class FileWithLink(TypedDict, total=False):
    file_id: Required[str]
    kind: Required[Literal['photo', 'video', 'animation', 'audio', 'document']]
    mime_type: Required[str]
    file_name: Required[str]
    file_size: Required[int]
    sha256: Required[str]
    width: int
    height: int
    duration: float
    pages: int
    download_url: Required[str]
    expires_at: Required[int]


class SubscribersPage(TypedDict, total=False):
    subscribers: Required[list[Subscriber]]
    next_cursor: Required[str]


class Subscriber(TypedDict, total=False):
    chat_id: Required[str]
    started_at: Required[int]


class Broadcast(TypedDict, total=False):
    broadcast_id: Required[str]
    status: Required[Literal['queued', 'running', 'completed', 'cancelled']]
    counts: Required[BroadcastCounts]
    created_at: Required[int]
    completed_at: Required[int]


class BroadcastCounts(TypedDict, total=False):
    queued: Required[int]
    sent: Required[int]
    failed: Required[int]
    cancelled: Required[int]


class RecipientsPage(TypedDict, total=False):
    recipients: Required[list[Recipient]]
    next_cursor: Required[str]


class Recipient(TypedDict, total=False):
    chat_id: Required[str]
    status: Required[Literal['queued', 'sent', 'failed', 'cancelled']]
    message_id: int
    last_error: str


METHOD_NAMES = ("getMe", "getChat", "getChatMember", "getUpdates", "setWebhook", "deleteWebhook", "getWebhookInfo", "sendMessage", "sendPhoto", "sendVoice", "sendVideo", "sendAudio", "sendDocument", "sendAnimation", "sendMediaGroup", "sendCard", "answerCallbackQuery", "editMessageText", "editMessageCard", "editMessageCaption", "editMessageMedia", "editMessageReplyMarkup", "deleteMessage", "deleteMessages", "uploadFile", "getFile", "getSubscribers", "createBroadcast", "getBroadcast", "getBroadcastRecipients", "cancelBroadcast",)


class Methods:
    """Every /v2 method, called at once."""

    def _call(self, method: str, params: dict[str, Any],
              idempotency_key: str | None) -> Any:
        raise NotImplementedError

    def get_me(
            self,
            *,
            idempotency_key: str | None = None,
    ) -> Bot:
        """getMe: The bot this token belongs to."""
        return self._call("getMe", {}, idempotency_key)

    def get_chat(
            self,
            chat_id: str,
            *,
            idempotency_key: str | None = None,
    ) -> Chat:
        """getChat: One of the bot's chats and its membership."""
        return self._call("getChat", {
            "chat_id": chat_id,
        }, idempotency_key)

    def get_chat_member(
            self,
            chat_id: str,
            *,
            idempotency_key: str | None = None,
    ) -> Chat:
        """getChatMember: The membership of a chat (as getChat)."""
        return self._call("getChatMember", {
            "chat_id": chat_id,
        }, idempotency_key)

    def get_updates(
            self,
            *,
            offset: int | None = None,
            limit: int | None = None,
            timeout: Literal[0] | None = None,
            idempotency_key: str | None = None,
    ) -> list[Update]:
        """getUpdates: Acknowledge the updates below offset; the pending ones, oldest first."""
        return self._call("getUpdates", {
            "offset": offset,
            "limit": limit,
            "timeout": timeout,
        }, idempotency_key)

    def set_webhook(
            self,
            url: str,
            secret_token: str,
            *,
            drop_pending_updates: bool | None = None,
            idempotency_key: str | None = None,
    ) -> Literal[True]:
        """setWebhook: Receive updates at an HTTPS URL instead of polling."""
        return self._call("setWebhook", {
            "url": url,
            "secret_token": secret_token,
            "drop_pending_updates": drop_pending_updates,
        }, idempotency_key)

    def delete_webhook(
            self,
            *,
            drop_pending_updates: bool | None = None,
            idempotency_key: str | None = None,
    ) -> Literal[True]:
        """deleteWebhook: Stop webhook delivery and poll again."""
        return self._call("deleteWebhook", {
            "drop_pending_updates": drop_pending_updates,
        }, idempotency_key)

    def get_webhook_info(
            self,
            *,
            idempotency_key: str | None = None,
    ) -> WebhookInfo:
        """getWebhookInfo: The webhook's address, queue and last delivery outcomes."""
        return self._call("getWebhookInfo", {}, idempotency_key)

    def send_message(
            self,
            chat_id: str,
            text: str,
            *,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendMessage: Send a text message to an active chat."""
        return self._call("sendMessage", {
            "chat_id": chat_id,
            "text": text,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    def send_photo(
            self,
            chat_id: str,
            photo: FileInput,
            *,
            caption: str | None = None,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendPhoto: Send a photo: a file_id of a clean file of this bot, or (multipart) the file itself."""
        return self._call("sendPhoto", {
            "chat_id": chat_id,
            "photo": photo,
            "caption": caption,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    def send_voice(
            self,
            chat_id: str,
            voice: FileInput,
            *,
            caption: str | None = None,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendVoice: Send a voice: a file_id of a clean file of this bot, or (multipart) the file itself."""
        return self._call("sendVoice", {
            "chat_id": chat_id,
            "voice": voice,
            "caption": caption,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    def send_video(
            self,
            chat_id: str,
            video: FileInput,
            *,
            caption: str | None = None,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendVideo: Send a video: a file_id of a clean file of this bot, or (multipart) the file itself."""
        return self._call("sendVideo", {
            "chat_id": chat_id,
            "video": video,
            "caption": caption,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    def send_audio(
            self,
            chat_id: str,
            audio: FileInput,
            *,
            caption: str | None = None,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendAudio: Send a audio: a file_id of a clean file of this bot, or (multipart) the file itself."""
        return self._call("sendAudio", {
            "chat_id": chat_id,
            "audio": audio,
            "caption": caption,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    def send_document(
            self,
            chat_id: str,
            document: FileInput,
            *,
            caption: str | None = None,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendDocument: Send a document: a file_id of a clean file of this bot, or (multipart) the file itself."""
        return self._call("sendDocument", {
            "chat_id": chat_id,
            "document": document,
            "caption": caption,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    def send_animation(
            self,
            chat_id: str,
            animation: FileInput,
            *,
            caption: str | None = None,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendAnimation: Send a animation: a file_id of a clean file of this bot, or (multipart) the file itself."""
        return self._call("sendAnimation", {
            "chat_id": chat_id,
            "animation": animation,
            "caption": caption,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    def send_media_group(
            self,
            chat_id: str,
            media: list[MediaGroupItem],
            *,
            idempotency_key: str | None = None,
    ) -> list[Message]:
        """sendMediaGroup: Send 2 to 10 photos and videos (file_ids) as one album."""
        return self._call("sendMediaGroup", {
            "chat_id": chat_id,
            "media": media,
        }, idempotency_key)

    def send_card(
            self,
            chat_id: str,
            card: Card,
            *,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            parse_mode: Literal['plain'] | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendCard: Send a card (info, product, status or receipt)."""
        return self._call("sendCard", {
            "chat_id": chat_id,
            "card": card,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
            "parse_mode": parse_mode,
        }, idempotency_key)

    def answer_callback_query(
            self,
            callback_query_id: str,
            *,
            text: str | None = None,
            show_alert: bool | None = None,
            idempotency_key: str | None = None,
    ) -> Literal[True]:
        """answerCallbackQuery: Answer a callback_query this bot received (once)."""
        return self._call("answerCallbackQuery", {
            "callback_query_id": callback_query_id,
            "text": text,
            "show_alert": show_alert,
        }, idempotency_key)

    def edit_message_text(
            self,
            chat_id: str,
            message_id: int,
            text: str,
            *,
            reply_markup: InlineKeyboard | None = None,
            parse_mode: Literal['plain'] | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """editMessageText: Replace the text of the bot's text message."""
        return self._call("editMessageText", {
            "chat_id": chat_id,
            "message_id": message_id,
            "text": text,
            "reply_markup": reply_markup,
            "parse_mode": parse_mode,
        }, idempotency_key)

    def edit_message_card(
            self,
            chat_id: str,
            message_id: int,
            card: Card,
            *,
            reply_markup: InlineKeyboard | None = None,
            parse_mode: Literal['plain'] | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """editMessageCard: Replace the card of the bot's card message."""
        return self._call("editMessageCard", {
            "chat_id": chat_id,
            "message_id": message_id,
            "card": card,
            "reply_markup": reply_markup,
            "parse_mode": parse_mode,
        }, idempotency_key)

    def edit_message_caption(
            self,
            chat_id: str,
            message_id: int,
            *,
            caption: str | None = None,
            reply_markup: InlineKeyboard | None = None,
            parse_mode: Literal['plain'] | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """editMessageCaption: Set or remove ("") the caption of a media message."""
        return self._call("editMessageCaption", {
            "chat_id": chat_id,
            "message_id": message_id,
            "caption": caption,
            "reply_markup": reply_markup,
            "parse_mode": parse_mode,
        }, idempotency_key)

    def edit_message_media(
            self,
            chat_id: str,
            message_id: int,
            media: str,
            *,
            type: Literal['photo', 'voice', 'video', 'audio', 'document', 'animation'] | None = None,
            caption: str | None = None,
            reply_markup: InlineKeyboard | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """editMessageMedia: Replace the file of a media message (a file_id)."""
        return self._call("editMessageMedia", {
            "chat_id": chat_id,
            "message_id": message_id,
            "media": media,
            "type": type,
            "caption": caption,
            "reply_markup": reply_markup,
        }, idempotency_key)

    def edit_message_reply_markup(
            self,
            chat_id: str,
            message_id: int,
            reply_markup: InlineKeyboard,
            *,
            idempotency_key: str | None = None,
    ) -> Message:
        """editMessageReplyMarkup: Replace or remove (empty inline_keyboard) a message's buttons."""
        return self._call("editMessageReplyMarkup", {
            "chat_id": chat_id,
            "message_id": message_id,
            "reply_markup": reply_markup,
        }, idempotency_key)

    def delete_message(
            self,
            chat_id: str,
            message_id: int,
            *,
            idempotency_key: str | None = None,
    ) -> Literal[True]:
        """deleteMessage: Delete one of the bot's messages (again: still true)."""
        return self._call("deleteMessage", {
            "chat_id": chat_id,
            "message_id": message_id,
        }, idempotency_key)

    def delete_messages(
            self,
            chat_id: str,
            message_ids: list[int],
            *,
            idempotency_key: str | None = None,
    ) -> Literal[True]:
        """deleteMessages: Delete 1 to 100 of the bot's messages in one chat."""
        return self._call("deleteMessages", {
            "chat_id": chat_id,
            "message_ids": message_ids,
        }, idempotency_key)

    def upload_file(
            self,
            file: FileInput,
            *,
            idempotency_key: str | None = None,
    ) -> File:
        """uploadFile: Upload a file (multipart field file): quarantined, scanned, normalized."""
        return self._call("uploadFile", {
            "file": file,
        }, idempotency_key)

    def get_file(
            self,
            file_id: str,
            *,
            idempotency_key: str | None = None,
    ) -> FileWithLink:
        """getFile: A clean file of this bot, with a signed download link valid one hour."""
        return self._call("getFile", {
            "file_id": file_id,
        }, idempotency_key)

    def get_subscribers(
            self,
            *,
            limit: int | None = None,
            cursor: str | None = None,
            idempotency_key: str | None = None,
    ) -> SubscribersPage:
        """getSubscribers: The active members, in chat_id order, a page at a time."""
        return self._call("getSubscribers", {
            "limit": limit,
            "cursor": cursor,
        }, idempotency_key)

    def create_broadcast(
            self,
            method: Literal['sendMessage', 'sendPhoto', 'sendVoice', 'sendVideo', 'sendAudio', 'sendDocument', 'sendAnimation', 'sendCard'],
            payload: dict[str, Any],
            *,
            chat_ids: list[str] | None = None,
            idempotency_key: str | None = None,
    ) -> Broadcast:
        """createBroadcast: Queue one message for many members, delivered by the worker."""
        return self._call("createBroadcast", {
            "method": method,
            "payload": payload,
            "chat_ids": chat_ids,
        }, idempotency_key)

    def get_broadcast(
            self,
            broadcast_id: str,
            *,
            idempotency_key: str | None = None,
    ) -> Broadcast:
        """getBroadcast: A broadcast's status and counts."""
        return self._call("getBroadcast", {
            "broadcast_id": broadcast_id,
        }, idempotency_key)

    def get_broadcast_recipients(
            self,
            broadcast_id: str,
            *,
            limit: int | None = None,
            cursor: str | None = None,
            idempotency_key: str | None = None,
    ) -> RecipientsPage:
        """getBroadcastRecipients: A broadcast's recipients in delivery order, a page at a time."""
        return self._call("getBroadcastRecipients", {
            "broadcast_id": broadcast_id,
            "limit": limit,
            "cursor": cursor,
        }, idempotency_key)

    def cancel_broadcast(
            self,
            broadcast_id: str,
            *,
            idempotency_key: str | None = None,
    ) -> Literal[True]:
        """cancelBroadcast: Cancel what is still queued (sent messages stay)."""
        return self._call("cancelBroadcast", {
            "broadcast_id": broadcast_id,
        }, idempotency_key)


class AsyncMethods:
    """Every /v2 method, awaited."""

    async def _call(self, method: str, params: dict[str, Any],
                    idempotency_key: str | None) -> Any:
        raise NotImplementedError

    async def get_me(
            self,
            *,
            idempotency_key: str | None = None,
    ) -> Bot:
        """getMe: The bot this token belongs to."""
        return await self._call("getMe", {}, idempotency_key)

    async def get_chat(
            self,
            chat_id: str,
            *,
            idempotency_key: str | None = None,
    ) -> Chat:
        """getChat: One of the bot's chats and its membership."""
        return await self._call("getChat", {
            "chat_id": chat_id,
        }, idempotency_key)

    async def get_chat_member(
            self,
            chat_id: str,
            *,
            idempotency_key: str | None = None,
    ) -> Chat:
        """getChatMember: The membership of a chat (as getChat)."""
        return await self._call("getChatMember", {
            "chat_id": chat_id,
        }, idempotency_key)

    async def get_updates(
            self,
            *,
            offset: int | None = None,
            limit: int | None = None,
            timeout: Literal[0] | None = None,
            idempotency_key: str | None = None,
    ) -> list[Update]:
        """getUpdates: Acknowledge the updates below offset; the pending ones, oldest first."""
        return await self._call("getUpdates", {
            "offset": offset,
            "limit": limit,
            "timeout": timeout,
        }, idempotency_key)

    async def set_webhook(
            self,
            url: str,
            secret_token: str,
            *,
            drop_pending_updates: bool | None = None,
            idempotency_key: str | None = None,
    ) -> Literal[True]:
        """setWebhook: Receive updates at an HTTPS URL instead of polling."""
        return await self._call("setWebhook", {
            "url": url,
            "secret_token": secret_token,
            "drop_pending_updates": drop_pending_updates,
        }, idempotency_key)

    async def delete_webhook(
            self,
            *,
            drop_pending_updates: bool | None = None,
            idempotency_key: str | None = None,
    ) -> Literal[True]:
        """deleteWebhook: Stop webhook delivery and poll again."""
        return await self._call("deleteWebhook", {
            "drop_pending_updates": drop_pending_updates,
        }, idempotency_key)

    async def get_webhook_info(
            self,
            *,
            idempotency_key: str | None = None,
    ) -> WebhookInfo:
        """getWebhookInfo: The webhook's address, queue and last delivery outcomes."""
        return await self._call("getWebhookInfo", {}, idempotency_key)

    async def send_message(
            self,
            chat_id: str,
            text: str,
            *,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendMessage: Send a text message to an active chat."""
        return await self._call("sendMessage", {
            "chat_id": chat_id,
            "text": text,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    async def send_photo(
            self,
            chat_id: str,
            photo: FileInput,
            *,
            caption: str | None = None,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendPhoto: Send a photo: a file_id of a clean file of this bot, or (multipart) the file itself."""
        return await self._call("sendPhoto", {
            "chat_id": chat_id,
            "photo": photo,
            "caption": caption,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    async def send_voice(
            self,
            chat_id: str,
            voice: FileInput,
            *,
            caption: str | None = None,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendVoice: Send a voice: a file_id of a clean file of this bot, or (multipart) the file itself."""
        return await self._call("sendVoice", {
            "chat_id": chat_id,
            "voice": voice,
            "caption": caption,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    async def send_video(
            self,
            chat_id: str,
            video: FileInput,
            *,
            caption: str | None = None,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendVideo: Send a video: a file_id of a clean file of this bot, or (multipart) the file itself."""
        return await self._call("sendVideo", {
            "chat_id": chat_id,
            "video": video,
            "caption": caption,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    async def send_audio(
            self,
            chat_id: str,
            audio: FileInput,
            *,
            caption: str | None = None,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendAudio: Send a audio: a file_id of a clean file of this bot, or (multipart) the file itself."""
        return await self._call("sendAudio", {
            "chat_id": chat_id,
            "audio": audio,
            "caption": caption,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    async def send_document(
            self,
            chat_id: str,
            document: FileInput,
            *,
            caption: str | None = None,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendDocument: Send a document: a file_id of a clean file of this bot, or (multipart) the file itself."""
        return await self._call("sendDocument", {
            "chat_id": chat_id,
            "document": document,
            "caption": caption,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    async def send_animation(
            self,
            chat_id: str,
            animation: FileInput,
            *,
            caption: str | None = None,
            parse_mode: Literal['plain'] | None = None,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendAnimation: Send a animation: a file_id of a clean file of this bot, or (multipart) the file itself."""
        return await self._call("sendAnimation", {
            "chat_id": chat_id,
            "animation": animation,
            "caption": caption,
            "parse_mode": parse_mode,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
        }, idempotency_key)

    async def send_media_group(
            self,
            chat_id: str,
            media: list[MediaGroupItem],
            *,
            idempotency_key: str | None = None,
    ) -> list[Message]:
        """sendMediaGroup: Send 2 to 10 photos and videos (file_ids) as one album."""
        return await self._call("sendMediaGroup", {
            "chat_id": chat_id,
            "media": media,
        }, idempotency_key)

    async def send_card(
            self,
            chat_id: str,
            card: Card,
            *,
            reply_markup: InlineKeyboard | None = None,
            reply_to_message_id: int | None = None,
            parse_mode: Literal['plain'] | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """sendCard: Send a card (info, product, status or receipt)."""
        return await self._call("sendCard", {
            "chat_id": chat_id,
            "card": card,
            "reply_markup": reply_markup,
            "reply_to_message_id": reply_to_message_id,
            "parse_mode": parse_mode,
        }, idempotency_key)

    async def answer_callback_query(
            self,
            callback_query_id: str,
            *,
            text: str | None = None,
            show_alert: bool | None = None,
            idempotency_key: str | None = None,
    ) -> Literal[True]:
        """answerCallbackQuery: Answer a callback_query this bot received (once)."""
        return await self._call("answerCallbackQuery", {
            "callback_query_id": callback_query_id,
            "text": text,
            "show_alert": show_alert,
        }, idempotency_key)

    async def edit_message_text(
            self,
            chat_id: str,
            message_id: int,
            text: str,
            *,
            reply_markup: InlineKeyboard | None = None,
            parse_mode: Literal['plain'] | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """editMessageText: Replace the text of the bot's text message."""
        return await self._call("editMessageText", {
            "chat_id": chat_id,
            "message_id": message_id,
            "text": text,
            "reply_markup": reply_markup,
            "parse_mode": parse_mode,
        }, idempotency_key)

    async def edit_message_card(
            self,
            chat_id: str,
            message_id: int,
            card: Card,
            *,
            reply_markup: InlineKeyboard | None = None,
            parse_mode: Literal['plain'] | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """editMessageCard: Replace the card of the bot's card message."""
        return await self._call("editMessageCard", {
            "chat_id": chat_id,
            "message_id": message_id,
            "card": card,
            "reply_markup": reply_markup,
            "parse_mode": parse_mode,
        }, idempotency_key)

    async def edit_message_caption(
            self,
            chat_id: str,
            message_id: int,
            *,
            caption: str | None = None,
            reply_markup: InlineKeyboard | None = None,
            parse_mode: Literal['plain'] | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """editMessageCaption: Set or remove ("") the caption of a media message."""
        return await self._call("editMessageCaption", {
            "chat_id": chat_id,
            "message_id": message_id,
            "caption": caption,
            "reply_markup": reply_markup,
            "parse_mode": parse_mode,
        }, idempotency_key)

    async def edit_message_media(
            self,
            chat_id: str,
            message_id: int,
            media: str,
            *,
            type: Literal['photo', 'voice', 'video', 'audio', 'document', 'animation'] | None = None,
            caption: str | None = None,
            reply_markup: InlineKeyboard | None = None,
            idempotency_key: str | None = None,
    ) -> Message:
        """editMessageMedia: Replace the file of a media message (a file_id)."""
        return await self._call("editMessageMedia", {
            "chat_id": chat_id,
            "message_id": message_id,
            "media": media,
            "type": type,
            "caption": caption,
            "reply_markup": reply_markup,
        }, idempotency_key)

    async def edit_message_reply_markup(
            self,
            chat_id: str,
            message_id: int,
            reply_markup: InlineKeyboard,
            *,
            idempotency_key: str | None = None,
    ) -> Message:
        """editMessageReplyMarkup: Replace or remove (empty inline_keyboard) a message's buttons."""
        return await self._call("editMessageReplyMarkup", {
            "chat_id": chat_id,
            "message_id": message_id,
            "reply_markup": reply_markup,
        }, idempotency_key)

    async def delete_message(
            self,
            chat_id: str,
            message_id: int,
            *,
            idempotency_key: str | None = None,
    ) -> Literal[True]:
        """deleteMessage: Delete one of the bot's messages (again: still true)."""
        return await self._call("deleteMessage", {
            "chat_id": chat_id,
            "message_id": message_id,
        }, idempotency_key)

    async def delete_messages(
            self,
            chat_id: str,
            message_ids: list[int],
            *,
            idempotency_key: str | None = None,
    ) -> Literal[True]:
        """deleteMessages: Delete 1 to 100 of the bot's messages in one chat."""
        return await self._call("deleteMessages", {
            "chat_id": chat_id,
            "message_ids": message_ids,
        }, idempotency_key)

    async def upload_file(
            self,
            file: FileInput,
            *,
            idempotency_key: str | None = None,
    ) -> File:
        """uploadFile: Upload a file (multipart field file): quarantined, scanned, normalized."""
        return await self._call("uploadFile", {
            "file": file,
        }, idempotency_key)

    async def get_file(
            self,
            file_id: str,
            *,
            idempotency_key: str | None = None,
    ) -> FileWithLink:
        """getFile: A clean file of this bot, with a signed download link valid one hour."""
        return await self._call("getFile", {
            "file_id": file_id,
        }, idempotency_key)

    async def get_subscribers(
            self,
            *,
            limit: int | None = None,
            cursor: str | None = None,
            idempotency_key: str | None = None,
    ) -> SubscribersPage:
        """getSubscribers: The active members, in chat_id order, a page at a time."""
        return await self._call("getSubscribers", {
            "limit": limit,
            "cursor": cursor,
        }, idempotency_key)

    async def create_broadcast(
            self,
            method: Literal['sendMessage', 'sendPhoto', 'sendVoice', 'sendVideo', 'sendAudio', 'sendDocument', 'sendAnimation', 'sendCard'],
            payload: dict[str, Any],
            *,
            chat_ids: list[str] | None = None,
            idempotency_key: str | None = None,
    ) -> Broadcast:
        """createBroadcast: Queue one message for many members, delivered by the worker."""
        return await self._call("createBroadcast", {
            "method": method,
            "payload": payload,
            "chat_ids": chat_ids,
        }, idempotency_key)

    async def get_broadcast(
            self,
            broadcast_id: str,
            *,
            idempotency_key: str | None = None,
    ) -> Broadcast:
        """getBroadcast: A broadcast's status and counts."""
        return await self._call("getBroadcast", {
            "broadcast_id": broadcast_id,
        }, idempotency_key)

    async def get_broadcast_recipients(
            self,
            broadcast_id: str,
            *,
            limit: int | None = None,
            cursor: str | None = None,
            idempotency_key: str | None = None,
    ) -> RecipientsPage:
        """getBroadcastRecipients: A broadcast's recipients in delivery order, a page at a time."""
        return await self._call("getBroadcastRecipients", {
            "broadcast_id": broadcast_id,
            "limit": limit,
            "cursor": cursor,
        }, idempotency_key)

    async def cancel_broadcast(
            self,
            broadcast_id: str,
            *,
            idempotency_key: str | None = None,
    ) -> Literal[True]:
        """cancelBroadcast: Cancel what is still queued (sent messages stay)."""
        return await self._call("cancelBroadcast", {
            "broadcast_id": broadcast_id,
        }, idempotency_key)
