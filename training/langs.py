"""Languages the data build knows: file extensions, line-comment syntax, and default source roots.

A language is a name, the file suffixes that belong to it, the prefix of a line comment (used for
snippet placeholders and added comments) and a function-definition pattern (used to name the
function an edit is in). ``TRAIN_LANGS`` are mined for training; ``HELD_OUT_LANGS`` exist only in
the evaluation split, so the benchmark measures a language the model never saw.

Default roots are the Debian source/header packages (``golang-src``, ``rust-src``,
``libstdc++-12-dev``, ``node-*``, ``ruby``, openjdk's ``src.zip``) and the running interpreter's
third-party ``site-packages``; configuration files (YAML, TOML, INI/cfg/conf, shell scripts) come
from ``/etc``, ``/usr/share`` and the same ``site-packages``. The Python standard library is never a
root (``training.sources`` also rejects any file whose content equals a standard-library file).
"""
from __future__ import annotations

import glob
import re
import site
import sysconfig
from dataclasses import dataclass


@dataclass(frozen=True)
class Lang:
    name: str
    suffixes: tuple[str, ...]
    comment: str                      # line-comment prefix
    func_re: re.Pattern               # group "name": a function defined on this line
    fence: str                        # markdown fence tag
    block_close: str | None = None    # a line that closes a block ("}") or None (indentation)


_NO_FUNCTIONS = re.compile(r"(?!)")   # configuration files define no functions
_C_FUNC = re.compile(r"^\s*(?:[A-Za-z_][\w:<>,\s\*&]*?[\s\*&])?(?P<name>[A-Za-z_]\w*)\s*\([^;]*\)\s*(?:const\s*)?\{?\s*$")

LANGS: dict[str, Lang] = {
    "python": Lang("python", (".py",), "#", re.compile(r"^\s*(?:async\s+)?def\s+(?P<name>\w+)\s*\("), "python"),
    "javascript": Lang("javascript", (".js", ".mjs", ".cjs"), "//",
                       re.compile(r"^\s*(?:export\s+)?(?:async\s+)?function\s*\*?\s*(?P<name>\w+)\s*\(|"
                                  r"^\s*(?:const|let|var)\s+(?P<name2>\w+)\s*=\s*(?:async\s*)?(?:function|\()"),
                       "javascript", "}"),
    "typescript": Lang("typescript", (".ts",), "//",
                       re.compile(r"^\s*(?:export\s+)?(?:async\s+)?function\s+(?P<name>\w+)|"
                                  r"^\s*(?:public|private|protected|static|\s)*(?P<name2>\w+)\s*\([^)]*\)\s*(?::[^{]*)?\{\s*$"),
                       "typescript", "}"),
    "go": Lang("go", (".go",), "//", re.compile(r"^func\s+(?:\([^)]*\)\s*)?(?P<name>\w+)\s*\("), "go", "}"),
    "rust": Lang("rust", (".rs",), "//", re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(?P<name>\w+)"),
                 "rust", "}"),
    "c": Lang("c", (".c", ".h"), "//", _C_FUNC, "c", "}"),
    "cpp": Lang("cpp", (".cc", ".cpp", ".hpp", ".tcc", ".hh"), "//", _C_FUNC, "cpp", "}"),
    "java": Lang("java", (".java",), "//",
                 re.compile(r"^\s*(?:(?:public|private|protected|static|final|synchronized|abstract|native)\s+)*"
                            r"(?:<[^>]+>\s+)?[\w<>\[\],.? ]+\s+(?P<name>\w+)\s*\([^;]*$"), "java", "}"),
    "ruby": Lang("ruby", (".rb",), "#", re.compile(r"^\s*def\s+(?:self\.)?(?P<name>\w+[?!]?)"), "ruby", "end"),
    # configuration and scripts: what editor users change most often ("set the port to 8080")
    "yaml": Lang("yaml", (".yaml", ".yml"), "#", _NO_FUNCTIONS, "yaml"),
    "toml": Lang("toml", (".toml",), "#", _NO_FUNCTIONS, "toml"),
    "ini": Lang("ini", (".ini", ".cfg", ".conf"), "#", _NO_FUNCTIONS, "ini"),
    "shell": Lang("shell", (".sh", ".bash"), "#",
                  re.compile(r"^\s*(?:function\s+)?(?P<name>[A-Za-z_][\w-]*)\s*\(\)\s*\{?\s*$"), "bash", "}"),
}

TRAIN_LANGS = ("python", "javascript", "typescript", "go", "rust", "c", "cpp", "java", "yaml", "toml", "ini", "shell")
HELD_OUT_LANGS = ("ruby",)


def function_name(lang: Lang, line: str) -> str | None:
    """The name of the function defined on ``line``, if the language's pattern sees one."""
    m = lang.func_re.match(line)
    if not m:
        return None
    name = m.groupdict().get("name") or m.groupdict().get("name2")
    if name in {"if", "for", "while", "switch", "return", "catch", "sizeof", "else", "do", "elif"}:
        return None
    return name


def third_party_site_packages() -> list[str]:
    """The running interpreter's site-packages directories (third-party code only)."""
    paths = set(site.getsitepackages()) | {sysconfig.get_paths()["purelib"]}
    stdlib = sysconfig.get_paths()["stdlib"]
    return sorted(p for p in paths if "site-packages" in p and not p.rstrip("/") == stdlib.rstrip("/"))


def default_roots() -> dict[str, list[str]]:
    """Where each language's sources are installed on a Debian machine (globs expanded)."""
    def g(*patterns: str) -> list[str]:
        return sorted({p for pat in patterns for p in glob.glob(pat)})

    return {
        "python": third_party_site_packages(),
        "javascript": g("/usr/share/nodejs", "/usr/lib/node_modules"),
        "typescript": g("/usr/share/nodejs/typescript", "/usr/share/nodejs/@types"),
        "go": g("/usr/share/go-*/src", "/usr/lib/go-*/src"),
        "rust": g("/usr/src/rustc-*/library"),
        "c": g("/usr/include"),
        "cpp": g("/usr/include/c++/*"),
        "java": g("/usr/lib/jvm/java-17-openjdk-*/lib/src.zip"),
        "ruby": g("/usr/lib/ruby/[0-9]*"),
        # configuration: Debian's /etc and /usr/share, and the third-party packages' own files
        "yaml": g("/etc", "/usr/share", "/usr/src", "/usr/lib/google-cloud-sdk") + third_party_site_packages(),
        "toml": g("/usr/share", "/usr/src") + third_party_site_packages(),
        "ini": g("/etc", "/usr/share") + third_party_site_packages(),
        "shell": g("/etc", "/usr/share", "/usr/lib/git-core") + third_party_site_packages(),
    }


def language_of_name(filename: str) -> str | None:
    """The language a file name's suffix says (any language of ``LANGS``), None for other files."""
    lower = filename.lower()
    return next((lang.name for lang in LANGS.values() if lower.endswith(lang.suffixes)), None)


def lang_of(path: str, root_lang: str) -> str | None:
    """The language of a file found under a root of ``root_lang`` (None: not a source file)."""
    lower = path.lower()
    if root_lang == "cpp":
        base = lower.rsplit("/", 1)[-1]
        if "." not in base or lower.endswith((".h", ".tcc", ".hpp")):
            return "cpp"
    if root_lang == "c" and "/c++/" in lower:
        return None
    if lower.endswith(".d.ts") and root_lang != "typescript":
        return None
    for suffix in LANGS[root_lang].suffixes:
        if lower.endswith(suffix):
            return root_lang
    return None
