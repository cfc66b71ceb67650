"""Small documents the pasted-change tests (snippets, diffs, SEARCH/REPLACE blocks) edit."""

PY = """import os


def load(path):
    with open(path) as fh:
        data = fh.read()
    return data


def save(path, data):
    with open(path, "w") as fh:
        fh.write(data)
    return len(data)
"""
