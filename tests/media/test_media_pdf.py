"""PDFs: only passive documents, every object checked, kept byte for byte."""
from __future__ import annotations

import hashlib
import io

import pikepdf
import pytest
from pikepdf import Array, Dictionary, Name, String

from botsvc.errors import ApiError
from botsvc.media.pdf import check_pdf


def raw_pdf(*objects: str, root: int = 1) -> bytes:
    """A hand-written PDF with a correct xref, for names pikepdf would not
    write itself (``/J#61vaScript``)."""
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1"))
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root {root} 0 R >>\n"
              f"startxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


PAGES = ("<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
         "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>")


def catalog(extra: str = "") -> str:
    return f"<< /Type /Catalog /Pages 2 0 R {extra} >>"


def built(edit=None, **save) -> bytes:
    pdf = pikepdf.new()
    pdf.add_blank_page(page_size=(200, 200))
    if edit:
        edit(pdf)
    buf = io.BytesIO()
    pdf.save(buf, **save)
    return buf.getvalue()


def test_passive_pdf_is_kept_byte_for_byte(upload):
    data = raw_pdf(catalog("/OpenAction [3 0 R /Fit]"), *PAGES)
    result = upload(data, "report.pdf", "application/pdf")
    assert (result.kind, result.mime_type, result.file_name) == ("document", "application/pdf", "report.pdf")
    assert result.metadata == {"pages": 1}
    assert open(result.path, "rb").read() == data
    assert result.sha256 == hashlib.sha256(data).hexdigest()


def test_internal_links_and_goto_open_action_are_passive(upload):
    def edit(pdf):
        page = pdf.pages[0].obj
        pdf.Root.OpenAction = Dictionary(S=Name.GoTo, D=Array([page, Name.Fit]))
        page.Annots = Array([pdf.make_indirect(Dictionary(
            Type=Name.Annot, Subtype=Name.Link, Rect=Array([0, 0, 10, 10]),
            A=Dictionary(S=Name.GoTo, D=Array([page, Name.Fit]))))])

    assert upload(built(edit), "nav.pdf").kind == "document"


def test_javascript_inside_an_object_stream(reject):
    def edit(pdf):
        action = pdf.make_indirect(Dictionary(S=Name.JavaScript, JS=String("app.alert(1)")))
        pdf.Root.Names = Dictionary(JavaScript=Dictionary(Names=Array([String("x"), action])))

    data = built(edit, object_stream_mode=pikepdf.ObjectStreamMode.generate)
    assert b"JavaScript" not in data and b"/JS" not in data  # invisible to a byte search
    reject(data, "objstm.pdf", "pdf_active")


def test_hex_escaped_javascript_name(reject, config, tmp_path):
    data = raw_pdf(catalog("/OpenAction 4 0 R"), *PAGES, "<< /S /J#61vaScript /J#53 (app.alert(1)) >>")
    assert b"JavaScript" not in data
    # ClamAV's built-in PDF heuristics see the needless escapes first ...
    err = reject(data, "escaped.pdf", "infected")
    assert "Heuristics.PDF.ObfuscatedNameObject" in err.description
    # ... and the inspector, given the same bytes, decodes the name itself.
    job = tmp_path / "job"
    job.mkdir()
    (job / "in").write_bytes(data)
    with pytest.raises(ApiError) as info:
        check_pdf(config, str(job), "in", "file")
    assert info.value.parameters == {"field": "file", "reason": "pdf_active"}


@pytest.mark.parametrize(
    "extra, objects, reason",
    [
        ("/OpenAction 4 0 R", ["<< /S /Launch /F (calc.exe) >>"], "pdf_active"),
        ("/OpenAction 4 0 R", ["<< /Type /Action /S /SubmitForm /F (http://x.test/) >>"], "pdf_active"),
        ("/AA << /WC 4 0 R >>", ["<< /S /GoTo /D [3 0 R /Fit] >>"], "pdf_active"),
        ("/OpenAction 4 0 R", ["<< /S /URI /URI (http://x.test/) >>"], "pdf_linked"),
        ("/OpenAction 4 0 R", ["<< /S /GoToR /F (other.pdf) /D [0 /Fit] >>"], "pdf_linked"),
        ("/OpenAction 4 0 R", ["<< /D [3 0 R /Fit] >>"], "pdf_active"),
        ("/AcroForm << /Fields [] >>", [], "pdf_form"),
        ("/Names << /EmbeddedFiles << /Names [(a.exe) 4 0 R] >> >>",
         ["<< /Type /Filespec /F (a.exe) >>"], "pdf_embedded"),
    ],
)
def test_active_linked_form_and_embedded_pdfs(reject, extra, objects, reason):
    reject(raw_pdf(catalog(extra), *PAGES, *objects), "x.pdf", reason)


def test_uri_link_annotation(reject):
    def edit(pdf):
        pdf.pages[0].obj.Annots = Array([pdf.make_indirect(Dictionary(
            Type=Name.Annot, Subtype=Name.Link, Rect=Array([0, 0, 10, 10]),
            A=Dictionary(S=Name.URI, URI=String("https://example.test/"))))])

    reject(built(edit), "link.pdf", "pdf_linked")


def test_file_attachment_annotation(reject):
    def edit(pdf):
        stream = pdf.make_stream(b"MZ...", Type=Name.EmbeddedFile)
        spec = Dictionary(Type=Name.Filespec, F=String("a.exe"), EF=Dictionary(F=stream))
        pdf.pages[0].obj.Annots = Array([pdf.make_indirect(Dictionary(
            Type=Name.Annot, Subtype=Name.FileAttachment, Rect=Array([0, 0, 10, 10]), FS=spec))])

    reject(built(edit), "attach.pdf", "pdf_embedded")


def test_encrypted_pdfs(reject):
    no_password = built(encryption=pikepdf.Encryption(owner="owner", user=""))
    with_password = built(encryption=pikepdf.Encryption(owner="owner", user="secret"))
    reject(no_password, "open.pdf", "pdf_encrypted")
    reject(with_password, "locked.pdf", "pdf_encrypted")


def test_corrupt_pdf(reject):
    reject(b"%PDF-1.7\n" + b"\x00garbage" * 50, "broken.pdf", "corrupt_file")
