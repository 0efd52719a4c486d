"""The user's file name: only ever a display string, never a path.

It is cleaned to a safe display name and its extension read; unsafe double
extensions (``x.php.jpg``) are rejected because a misconfigured web server or
a desktop that hides the last extension would treat the file by the inner one.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from botsvc.errors import Reason, media_rejected

# Inner extensions that a server would execute, a browser render, or a
# desktop run. Media extensions and ordinary words are fine as inner parts.
DANGEROUS_INNER = frozenset(
    """
    exe com bat cmd scr pif msi msp msc dll cpl ocx sys drv lnk inf reg hta
    vb vbs vbe js jse mjs cjs ws wsf wsc wsh ps1 psm1 psd1 ps1xml psc1 msh
    jar class apk sh bash zsh ksh csh fish py pyc pyw pl pm cgi rb lua tcl
    php php3 php4 php5 php7 php8 phtml pht phar phps inc asp aspx ascx ashx
    asmx axd jsp jspx jsf cfm cfc shtml shtm html htm xhtml xht mht mhtml
    svg svgz xml xsl xslt swf docm dotm xlsm xltm xlam pptm potm ppsm sldm
    doc docx xls xlsx ppt pptx rtf zip rar 7z tar gz tgz bz2 xz cab iso
    """.split()
)

# Unicode controls, format characters (bidi overrides such as U+202E, which
# make ``gpj.exe`` read ``exe.jpg``), separators, surrogates, private use.
_BAD_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
_UNSAFE_CHARS = re.compile(r'[\\/:*?"<>|]')
_MAX_STEM_BYTES = 200


@dataclass(frozen=True)
class UploadName:
    stem: str  # safe display stem, never empty
    ext: str   # lower-case final extension, without the dot


def _clean(raw: str) -> str:
    text = unicodedata.normalize("NFC", raw)
    text = "".join(ch for ch in text if unicodedata.category(ch) not in _BAD_CATEGORIES)
    # Keep only the last path component, whichever separator the client used.
    text = re.split(r"[\\/]", text)[-1]
    # Windows drops trailing dots and spaces: "x.php." is x.php there.
    return text.strip().rstrip(". ")


def parse_name(raw: str | None, field: str) -> UploadName:
    cleaned = _clean(raw or "")
    parts = cleaned.split(".")
    if len(parts) < 2 or not parts[-1].strip():
        raise media_rejected(field, Reason.UNSUPPORTED_TYPE, "The file name must end in an accepted extension")
    for inner in parts[1:-1]:
        if inner.strip().lower() in DANGEROUS_INNER:
            raise media_rejected(
                field, Reason.DOUBLE_EXTENSION, "The file name has an unsafe double extension"
            )
    ext = parts[-1].strip().lower()
    return UploadName(stem=_display_stem(".".join(parts[:-1])), ext=ext)


def _display_stem(stem: str) -> str:
    stem = _UNSAFE_CHARS.sub("_", stem)
    stem = re.sub(r"\s+", " ", stem).strip().lstrip(".").strip()
    encoded = stem.encode("utf-8")[:_MAX_STEM_BYTES]
    stem = encoded.decode("utf-8", "ignore").strip()
    return stem or "file"


def display_name(name: UploadName, out_ext: str) -> str:
    return f"{name.stem}.{out_ext}"
