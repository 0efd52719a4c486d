"""Files: uploadFile and getFile, and the upload step every media method shares.

An upload is processed in the method's ``prepare`` step (outside any write
transaction: ffmpeg and ClamAV may take minutes), its output moved into
storage; the handler then records the row inside the write transaction, where
the quota check and the insert are one step.
"""
from __future__ import annotations

from flask import current_app

from botsvc import metrics
from botsvc.api.registry import Call, api_method
from botsvc.catalogue import results
from botsvc.catalogue.validation import FilePart, StrictSchema, Text, UploadedFile
from botsvc.domain import file_links, files
from botsvc.domain.files import StoredUpload
from botsvc.errors import ApiError, ErrorCode
from botsvc.limits import UPLOAD
from botsvc.media import MediaConfig


def media_config() -> MediaConfig:
    return current_app.config["MEDIA"]


def store_uploaded(call: Call, uploaded: UploadedFile, field: str) -> StoredUpload:
    """Quota room first (free), then the pipeline; the output lands in storage."""
    files.check_quota_room(call.conn, call.bot.id, call.settings.storage_quota_bytes, field)
    try:
        stored = files.process_and_store(media_config(), call.settings.data_dir, uploaded.path,
                                         uploaded.file_name, uploaded.content_type, field)
    except ApiError as refused:
        metrics.upload_refused(refused)
        raise
    metrics.upload("clean")
    return stored


class UploadFileSchema(StrictSchema):
    file = FilePart(required=True)


class GetFileSchema(StrictSchema):
    # Any non-empty string: one that is not a clean file of this bot is refused as such.
    file_id = Text(min_bytes=1, required=True)


def prepare_upload(call: Call) -> StoredUpload:
    return store_uploaded(call, call.params["file"], "file")


@api_method("uploadFile", UploadFileSchema(), buckets=(UPLOAD,), prepare=prepare_upload,
            result=results.File, errors=(ErrorCode.DEPENDENCY_UNAVAILABLE,),
            summary="Upload a file (multipart field file): quarantined, scanned, normalized")
def upload_file(call: Call) -> dict:
    with files.discarded_on_error(call.prepared):
        row = files.record_file(call.conn, call.bot.id, call.prepared,
                                call.settings.storage_quota_bytes, "file")
    return files.render_file(row)


@api_method("getFile", GetFileSchema(), result=results.FileWithLink,
            summary="A clean file of this bot, with a signed download link valid one hour")
def get_file(call: Call) -> dict:
    row = files.require_clean_file(call.conn, call.bot.id, call.params["file_id"], "file_id")
    url, expires_at = file_links.signed_url(call.settings.base_url, call.settings.secret_key,
                                            row["file_id"], call.bot.id)
    return {**files.render_file(row), "download_url": url, "expires_at": expires_at}
