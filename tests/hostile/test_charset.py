"""A byte-order mark decides a page's encoding; bytes that are not text in the encoding that
applies are a reject with a reason, never mis-decoded text in a field. Checked on the pure
decoder (`text.charset`), on the landing extractor and through `openmsd-build inspect`."""

from __future__ import annotations

import json

import pytest

from openmsd_build.cli import main
from openmsd_build.text.charset import UndecodableText, declared_encoding, decode_page
from openmsd_build.text.extract.landing import LandingParseError, extract_landing

TITLE = "Études sur la qualité du sommeil — 睡眠 и здоровье"
PAGE = ("<html><head><meta charset=\"{charset}\"><meta name=\"citation_title\" content=\"" + TITLE + "\">"
        "<title>x</title></head><body><p>Texte.</p></body></html>")


def _page(charset: str) -> str:
    return PAGE.replace("{charset}", charset)


@pytest.mark.parametrize("bom,encoding", [(b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"),
                                          (b"\xfe\xff", "utf-16-be")])
@pytest.mark.parametrize("declared", ["iso-8859-1", "shift_jis", "utf-8", "utf-16"])
def test_a_bom_decides_whatever_the_page_declares(bom, encoding, declared):
    body = bom + _page(declared).encode(encoding)
    assert decode_page(body) == _page(declared)
    assert extract_landing(body, with_content=False)["title"] == TITLE


@pytest.mark.parametrize("body,why", [
    (b"\xef\xbb\xbf<html>caf\xe9</html>", "byte-order mark"),          # UTF-8 BOM, Latin-1 bytes
    (b"\xff\xfe<\x00h\x00\x00\xd8", "byte-order mark"),                # UTF-16LE lone surrogate
    (b"\xff\xfe<\x00h\x00x", "byte-order mark"),                       # odd length
    (b'<meta charset="utf-8"><p>caf\xe9 \xff</p>', "declared"),       # declared UTF-8, is not
    (b'<meta charset="shift_jis"><p>\x81\x7f\xff</p>', "declared"),   # invalid Shift_JIS
    (b'<meta charset="utf-16"><p>caf\xe9</p>', "declared"),           # declared UTF-16 = UTF-8
    (b"<p>caf\xe9 \x81\x8d</p>", "no declaration"),                   # undefined in cp1252
])
def test_undecodable_bytes_are_a_reject_with_a_reason(body, why):
    with pytest.raises(UndecodableText, match=why):
        decode_page(body)
    with pytest.raises(LandingParseError, match="undecodable_text"):
        extract_landing(body, with_content=False)


@pytest.mark.parametrize("label,codec", [("ISO-8859-1", "iso8859-1"), ("utf-7", None), ("base64", None),
                                         ("rot13", None), ("x-no-such", None), ("UTF-16LE", "utf-8"),
                                         ("windows-1251", "cp1251")])
def test_declared_encodings(label, codec):
    assert declared_encoding(f'<meta charset="{label}">'.encode()) == codec


def test_valid_declared_and_undeclared_pages_decode():
    assert decode_page(_page("windows-1251").replace(TITLE, "Здоровье").encode("cp1251")).count("Здоровье") == 1
    assert decode_page(b"<p>caf\xe9</p>") == "<p>café</p>"  # cp1252, the web's default
    assert decode_page('<?xml version="1.0" encoding="koi8-r"?><p>Сон</p>'.encode("koi8_r")).endswith("Сон</p>")


def test_inspect_reports_the_reject_and_keeps_no_text(tmp_path, capsys):
    utf16 = tmp_path / "utf16.html"
    utf16.write_bytes(b"\xff\xfe" + _page("iso-8859-1").encode("utf-16-le"))
    assert main(["inspect", str(utf16), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["extracted"]["title"] == TITLE and out["error"] is None  # (a title alone is not kept)

    broken = tmp_path / "broken.html"
    broken.write_bytes(b'<html><head><meta charset="utf-8"><meta name="citation_title" content="caf\xe9 \xff'
                       b' au lait"></head></html>')
    main(["inspect", str(broken), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["error"] == "parse_error" and "undecodable_text" in out["error_detail"]
    assert out["title"] is None and out["content"] is None and out["extracted"] is None


@pytest.mark.parametrize("label", ["unicode_escape", "raw-unicode-escape", "undefined", "idna", "punycode"])
def test_python_codecs_that_are_no_web_encoding_are_not_honoured(label):
    """Python knows these names as text encodings, but they are no page's encoding: the escape
    codecs read `\\u00e9` and `\\ud835` in the page as characters (a lone surrogate, a NUL),
    `undefined` raises a UnicodeError that is no UndecodableText (the page's reject said
    "UnicodeError: undefined encoding"), `idna` and `punycode` read host names. Such a
    declaration is an unknown one: windows-1252 applies (WHATWG: an unknown label is ignored)."""
    assert declared_encoding(f'<meta charset="{label}">'.encode()) is None
    body = (f'<meta charset="{label}"><meta name="citation_title" content="Caf\xe9 \\u00e9tudes \\ud835 of soils">'
            "<title>x</title>").encode("latin-1")
    assert decode_page(body).endswith('content="Café \\u00e9tudes \\ud835 of soils"><title>x</title>')
    assert extract_landing(body, with_content=False)["title"] == "Café \\u00e9tudes \\ud835 of soils"
