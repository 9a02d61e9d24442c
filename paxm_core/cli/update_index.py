"""Which versions of a distribution a package index (or a ``--find-links`` location) offers.

Reads the simple repository API (PEP 503 HTML, or PEP 691 JSON when the index offers it) and
flat ``--find-links`` directories or pages, as pip and uv do, with the standard library only:
``paxm update --check`` runs in a second and imports nothing paxm does not already ship.
Versions are compared by the PEP 440 public-version rules the release files use (release
numbers, ``aN``/``bN``/``rcN``, ``.postN``, ``.devN``); a file whose version does not parse is
ignored, and so is a yanked one.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from paxm_core.api.errors import PaxmError

__all__ = ["DEFAULT_INDEX", "available_versions", "canonical_name", "is_prerelease", "version_key"]

DEFAULT_INDEX = "https://pypi.org/simple"
_TIMEOUT = 30.0
_VERSION = re.compile(
    r"^v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|rc|alpha|beta|c)[-_.]?(\d*))?(?:[-_.]?post[-_.]?(\d+))?(?:[-_.]?dev[-_.]?(\d*))?$"
)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2}
_ANCHOR = re.compile(r"<a\s([^>]*)>(.*?)</a>", re.IGNORECASE | re.DOTALL)
_HREF = re.compile(r"""href\s*=\s*["']([^"']*)["']""", re.IGNORECASE)


def canonical_name(name: str) -> str:
    """PEP 503 normalisation: ``Paxm_Provider.Zep`` -> ``paxm-provider-zep``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def version_key(version: str) -> tuple[object, ...] | None:
    """A sort key for a PEP 440 public version, or ``None`` when it does not parse."""
    match = _VERSION.match(version.strip().lower())
    if match is None:
        return None
    release_text, pre_label, pre_num, post, dev = match.groups()
    release = [int(part) for part in release_text.split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()  # 1.0 == 1.0.0
    if pre_label:
        pre: tuple[int, int, int] = (0, _PRE[pre_label], int(pre_num or 0))
    elif dev is not None and post is None:
        pre = (-1, 0, 0)  # 1.0.dev1 sorts before 1.0a1
    else:
        pre = (1, 0, 0)
    post_key = int(post) if post is not None else -1
    dev_key = (0, int(dev or 0)) if dev is not None else (1, 0)
    return (tuple(release), pre, post_key, dev_key)


def is_prerelease(version: str) -> bool:
    """An alpha, beta, release candidate or development release."""
    match = _VERSION.match(version.strip().lower())
    return bool(match and (match.group(2) or match.group(5) is not None))


def _file_version(filename: str, name: str) -> str | None:
    """The version in a wheel or sdist file name of distribution ``name``, else ``None``."""
    base = filename.rsplit("/", 1)[-1]
    if base.endswith(".whl"):
        parts = base[: -len(".whl")].split("-")
        if len(parts) < 5 or canonical_name(parts[0]) != name:
            return None
        return parts[1]
    for ext in (".tar.gz", ".zip"):
        if base.endswith(ext):
            dist, _, version = base[: -len(ext)].rpartition("-")
            return version if dist and canonical_name(dist) == name else None
    return None


def _split_auth(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without ``user:password@`` and the Basic header carrying them (never in messages)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, {}
    userinfo, host = parts.netloc.rsplit("@", 1)
    token = base64.b64encode(unquote(userinfo).encode()).decode()
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), {
        "Authorization": "Basic " + token
    }


def _fetch(url: str) -> tuple[str, str] | None:
    """``(content type, body)`` of ``url``; ``None`` for a 404 (the index has no such project)."""
    plain, headers = _split_auth(url)
    headers["Accept"] = "application/vnd.pypi.simple.v1+json, text/html;q=0.2"
    request = urllib.request.Request(plain, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:
            body = response.read().decode("utf-8", "replace")
            return response.headers.get("Content-Type", ""), body
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise PaxmError(f"package index {plain}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise PaxmError(f"package index {plain}: {reason}") from None


def _page_files(content_type: str, body: str, base_url: str) -> list[str]:
    """File names a simple-API page (JSON or HTML) or a flat links page lists, yanked ones left out."""
    if "json" in content_type:
        try:
            files = json.loads(body).get("files", [])
        except (ValueError, AttributeError):
            return []
        return [str(f.get("filename", "")) for f in files if isinstance(f, dict) and not f.get("yanked")]
    names: list[str] = []
    for attrs, text in _ANCHOR.findall(body):
        if "data-yanked" in attrs.lower():
            continue
        href = _HREF.search(attrs)
        target = urljoin(base_url, html.unescape(href.group(1))) if href else html.unescape(text)
        names.append(urlsplit(target).path.rsplit("/", 1)[-1] or html.unescape(text).strip())
    return names


def _listed(url: str) -> list[str]:
    """The files the page at ``url`` lists (none for a 404)."""
    page = _fetch(url)
    return [] if page is None else _page_files(page[0], page[1], url)


def _find_links_files(location: str) -> list[str]:
    if "://" not in location or location.startswith("file://"):
        path = Path(unquote(urlsplit(location).path) if location.startswith("file://") else location).expanduser()
        try:
            return [entry.name for entry in path.iterdir()] if path.is_dir() else []
        except OSError as exc:
            raise PaxmError(f"--find-links {path}: {exc.strerror or exc}") from None
    return _listed(location)


def default_index() -> str:
    """The index pip and uv would use: ``$UV_DEFAULT_INDEX``, ``$UV_INDEX_URL``, ``$PIP_INDEX_URL``, else PyPI."""
    for var in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"):
        value = os.environ.get(var, "").strip()
        if value:
            return value
    return DEFAULT_INDEX


def available_versions(
    name: str, index_url: str | None, extra_index_urls: Iterable[str] = (), find_links: Iterable[str] = ()
) -> set[str]:
    """Every version of distribution ``name`` the indexes and find-links locations offer.

    ``index_url`` ``None`` reads no index (``--no-index``: find-links only).
    """
    canonical = canonical_name(name)
    files: list[str] = []
    for url in ([index_url] if index_url else []) + list(extra_index_urls):
        files += _listed(url.rstrip("/") + "/" + canonical + "/")
    for location in find_links:
        files += _find_links_files(location)
    return {v for v in (_file_version(f, canonical) for f in files) if v and version_key(v) is not None}
