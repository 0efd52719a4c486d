"""PDFs that need repair are refused (issue 13 point 7): what one reader
repairs another may read differently, so a PDF that does not open cleanly is
``pdf_damaged``; the inspector finishes on every one of them."""
from __future__ import annotations

import dataclasses
import io
import re

import pikepdf
import pytest
from PIL import Image

from tests.media.test_media_pdf import PAGES, catalog, raw_pdf
from tests.support.media_files import multipart

PAGE = "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Resources << >> {extra} >>"


def _xref_offset(data: bytes) -> int:
    return int(re.search(rb"startxref\n(\d+)", data).group(1))


def xref_loop() -> bytes:
    """The trailer's /Prev points at its own xref table: a loop qpdf breaks
    by reconstructing the table, which other readers may do differently."""
    data = raw_pdf(catalog(), *PAGES)
    return data.replace(b"/Root 1 0 R >>", b"/Root 1 0 R /Prev %d >>" % _xref_offset(data))


def two_section_xref_loop() -> bytes:
    """An update section whose /Prev leads to the first, whose /Prev leads back."""
    first = raw_pdf(catalog(), *PAGES)
    first_xref = _xref_offset(first)
    second_xref = len(first)
    update = (f"xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size 4 /Root 1 0 R /Prev {first_xref} >>"
              f"\nstartxref\n{second_xref}\n%%EOF\n").encode()
    first = first.replace(b"/Root 1 0 R >>", b"/Root 1 0 R /Prev %d >>" % second_xref)
    shift = len(first) - second_xref  # the first trailer grew; the update starts later
    update = update.replace(f"startxref\n{second_xref}".encode(),
                            f"startxref\n{second_xref + shift}".encode())
    first = first.replace(b"/Prev %d" % second_xref, b"/Prev %d" % (second_xref + shift))
    return first + update


def wrong_startxref() -> bytes:
    data = raw_pdf(catalog(), *PAGES)
    return data[:data.rindex(b"startxref")] + b"startxref\n5\n%%EOF\n"


def wrong_stream_length() -> bytes:
    return raw_pdf(catalog(), "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                   PAGE.format(extra="/Contents 4 0 R"),
                   "<< /Length 99 >>\nstream\nBT ET\nendstream")


def wrong_object_offset() -> bytes:
    data = raw_pdf(catalog(), "<< /Type /Pages /Kids [3 0 R] /Count 1 >>", PAGE.format(extra=""))
    entries = re.findall(rb"(\d{10}) 00000 n ", data)
    third = entries[2]
    return data.replace(third + b" 00000 n ", b"%010d 00000 n " % (int(third) + 3))


def page_without_size() -> bytes:
    return raw_pdf(catalog(), "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                   "<< /Type /Page /Parent 2 0 R /Resources << >> >>")


def page_tree_loop() -> bytes:
    return raw_pdf(catalog(), "<< /Type /Pages /Kids [3 0 R 2 0 R] /Count 2 >>",
                   PAGE.format(extra=""))


@pytest.fixture
def quick(config):
    """A short inspector time limit: a loop would be a 503 in seconds, not a pass."""
    return dataclasses.replace(config, probe_timeout=10.0)


@pytest.mark.parametrize("make", [xref_loop, two_section_xref_loop, wrong_startxref,
                                  wrong_stream_length, wrong_object_offset])
def test_a_pdf_that_opens_only_after_repair_is_refused(reject, quick, make):
    data = make()
    with pikepdf.open(io.BytesIO(data)) as repaired:  # qpdf does open it, by repairing
        assert len(repaired.pages) == 1
    err = reject(data, "damaged.pdf", "pdf_damaged", cfg=quick)
    assert err.description.startswith("Damaged PDFs are not accepted")


def test_a_page_without_a_size_is_damage(reject):
    # Readers' default page sizes differ (Letter, A4): qpdf's guess is no repair.
    reject(page_without_size(), "sizeless.pdf", "pdf_damaged")


def test_a_looping_page_tree_is_refused_and_the_inspector_finishes(reject, quick):
    reject(page_tree_loop(), "pages.pdf", "corrupt_file", cfg=quick)


def _pillow_pdf() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), "green").save(buf, "PDF")
    return buf.getvalue()


def _incremental_update() -> bytes:
    pdf = pikepdf.new()
    pdf.add_blank_page(page_size=(200, 200))
    first = io.BytesIO()
    pdf.save(first)
    with pikepdf.open(io.BytesIO(first.getvalue())) as again:
        again.docinfo["/Title"] = "second revision"
        out = io.BytesIO()
        again.save(out)
    return out.getvalue()


@pytest.mark.parametrize("make", [
    _pillow_pdf,
    _incremental_update,
    # A page without /Resources: qpdf gives it an empty set, as every reader
    # does; that is no damage.
    lambda: raw_pdf(catalog(), *PAGES),
    lambda: raw_pdf(catalog(), *PAGES) + b"\n",
])
def test_clean_pdfs_still_pass(upload, make):
    data = make()
    result = upload(data, "clean.pdf")
    assert (result.kind, result.metadata) == ("document", {"pages": 1})
    assert open(result.path, "rb").read() == data


def test_a_damaged_pdf_upload_is_refused_over_http(bot, storage):
    response = multipart(bot, "uploadFile", {"file": (xref_loop(), "report.pdf")})
    body = response.get_json()
    assert response.status_code == 400 and body["error_code"] == "INVALID_PARAMETER", body
    assert body["parameters"] == {"field": "file", "reason": "pdf_damaged"}
    storage.assert_nothing_stored()
