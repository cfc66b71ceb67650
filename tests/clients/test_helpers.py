"""Unit tests for the small client helpers: text edits (UTF-16), line endings, journal, jobs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from clients.jobs import Job, JobsFileError, OutsideRootError, confine, read_jobs_file
from clients.journal import Journal
from clients.line_endings import NotTextError, decode, encode
from clients.text_edits import Edit, TextEditError, apply_edits, lines_to_range, offset_of


def test_offsets_count_utf16_code_units():
    text = "a😀b\nxy"
    assert offset_of(text, 0, 3) == 2          # 'a' + surrogate pair = 3 units → before 'b'
    assert offset_of(text, 1, 1) == text.index("y")
    assert offset_of(text, 5, 0) == len(text)  # past the end clamps


def test_apply_edits_in_any_order_and_rejects_overlap():
    text = "one\ntwo\nthree\n"
    edits = [Edit(2, 0, 2, 5, "THREE"), Edit(0, 0, 0, 3, "ONE")]
    assert apply_edits(text, edits) == "ONE\ntwo\nTHREE\n"
    with pytest.raises(TextEditError, match="overlapping"):
        apply_edits(text, [Edit(0, 0, 1, 2, "x"), Edit(1, 0, 1, 3, "y")])


@given(st.lists(st.text(alphabet="ab😀\t ", max_size=6), min_size=1, max_size=6),
       st.integers(0, 5), st.integers(0, 5), st.text(alphabet="xy\n😀", max_size=5))
def test_replacing_a_line_range_matches_list_surgery(lines, a, b, new):
    text = "\n".join(lines)
    a, b = sorted((min(a, len(lines) - 1), min(b, len(lines) - 1)))
    rng = lines_to_range(text, a + 1, b + 1)
    edit = Edit(rng["start"]["line"], rng["start"]["character"], rng["end"]["line"], rng["end"]["character"], new)
    assert apply_edits(text, [edit]) == "\n".join(lines[:a] + [new] + lines[b + 1:])


@pytest.mark.parametrize("data", [b"a\r\nb\r\n", b"a\r\nb", b"a\nb\n", b"a\nb", b"a\r\nb\n", b"\xef\xbb\xbfa\r\n", b""])
def test_line_endings_round_trip(data):
    text, style = decode(data)
    assert "\r\n" not in text or not style.crlf
    assert encode(text, style) == data


def test_line_endings_apply_style_to_new_lines():
    text, style = decode(b"a\r\nb")
    assert encode(text + "\nc\n", style) == b"a\r\nb\r\nc"    # CRLF added, no final newline kept
    with pytest.raises(NotTextError, match="not UTF-8"):
        decode(b"\xff\xfe", where="x.bin")
    with pytest.raises(NotTextError, match="binary file"):
        decode(b"ok\x00\xff", where="x.bin")        # a NUL marks binary, whatever else is wrong


def test_journal_chain_covers_several_jobs_on_one_file(tmp_path):
    j = Journal(tmp_path / "j.jsonl")
    a = Job(Path("/f.py"), "one")
    b = Job(Path("/f.py"), "two")
    j.record(a, "h0", "h1")
    j.record(b, "h1", "h2")
    again = Journal(tmp_path / "j.jsonl")
    assert again.is_done(a, "h2") and again.is_done(b, "h2") and again.is_done(a, "h1")
    assert not again.is_done(a, "h0") and not again.is_done(b, "h1")
    assert not again.is_done(Job(Path("/f.py"), "one", (1, 2)), "h2")     # range is part of the key


def test_journal_survives_a_torn_last_line(tmp_path):
    path = tmp_path / "j.jsonl"
    j = Journal(path)
    j.record(Job(Path("/f.py"), "one"), "h0", "h1")
    with path.open("a") as fh:
        fh.write('{"path": "/g.py", "bef')          # a killed run's partial append
    j2 = Journal(path)
    j2.record(Job(Path("/g.py"), "two"), "g0", "g1")
    j3 = Journal(path)
    assert j3.is_done(Job(Path("/f.py"), "one"), "h1") and j3.is_done(Job(Path("/g.py"), "two"), "g1")


def test_jobs_file_errors_name_the_line(tmp_path):
    f = tmp_path / "jobs.jsonl"
    f.write_text(json.dumps({"path": "a.py", "instruction": "x", "range": [3, 1]}) + "\n")
    with pytest.raises(JobsFileError, match=r"jobs.jsonl:1: \"range\""):
        read_jobs_file(f)
    f.write_text("# comment\n\n" + json.dumps({"path": "a.py", "instruction": "x", "extra": 1}) + "\n")
    with pytest.raises(JobsFileError, match=r"jobs.jsonl:3: unknown key"):
        read_jobs_file(f)


def test_confine_resolves_dotdot(tmp_path):
    (tmp_path / "r").mkdir()
    with pytest.raises(OutsideRootError):
        confine(Job(tmp_path / "r" / ".." / "x.py", "i"), tmp_path / "r")
    assert confine(Job(tmp_path / "r" / "y.py", "i"), tmp_path / "r").path == (tmp_path / "r" / "y.py").resolve()
