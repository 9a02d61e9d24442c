"""Reading versions from a simple index (HTML and JSON), find-links, and choosing the target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paxm_core import PaxmError
from paxm_core.cli.update_cmd import _choose_target
from paxm_core.cli.update_index import available_versions, canonical_name, is_prerelease, version_key
from tests._kit import QuietHandler, ServeHttp

PAGES: dict[str, tuple[str, str]] = {
    "/simple/paxm/": (
        "text/html",
        '<a href="/f/paxm-0.1.0-py3-none-any.whl#sha256=00">paxm-0.1.0-py3-none-any.whl</a>\n'
        '<a href="/f/paxm-0.3.0-py3-none-any.whl" data-yanked="broken">paxm-0.3.0-py3-none-any.whl</a>\n'
        '<a href="/f/paxm-0.2.0.tar.gz">paxm-0.2.0.tar.gz</a>\n'
        '<a href="/f/paxm-0.2.1rc1-py3-none-any.whl">paxm-0.2.1rc1-py3-none-any.whl</a>\n'
        '<a href="/f/paxm_provider_zep-9.0.0-py3-none-any.whl">not ours</a>\n',
    ),
    "/simple/paxm-provider-zep/": (
        "application/vnd.pypi.simple.v1+json",
        json.dumps(
            {
                "files": [
                    {"filename": "paxm_provider_zep-0.1.0-py3-none-any.whl"},
                    {"filename": "paxm_provider_zep-0.2.0-py3-none-any.whl", "yanked": "bad"},
                ]
            }
        ),
    ),
}
SEEN: list[dict[str, str]] = []


class _Index(QuietHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        SEEN.append({"path": self.path, "auth": self.headers.get("Authorization", "")})
        page = PAGES.get(self.path)
        if page is None:
            self.send_error(404)
            return
        self.reply(200, page[1].encode(), page[0])


@pytest.fixture
def index_url(http_server: ServeHttp) -> str:
    return http_server(_Index) + "/simple"


def test_html_and_json_pages_give_versions_without_yanked_files(index_url: str) -> None:
    assert available_versions("paxm", index_url) == {"0.1.0", "0.2.0", "0.2.1rc1"}
    assert available_versions("paxm_provider.zep", index_url + "/") == {"0.1.0"}
    assert available_versions("paxm-integration-pi", index_url) == set()  # a 404 is "no release"


def test_credentials_in_the_index_url_go_in_a_basic_header(index_url: str) -> None:
    SEEN.clear()
    url = index_url.replace("http://", "http://me:s3cret@")
    available_versions("paxm", url)
    assert SEEN[-1]["auth"] == "Basic bWU6czNjcmV0"


def test_unreachable_index_is_an_error_naming_it_without_credentials() -> None:
    with pytest.raises(PaxmError) as info:
        available_versions("paxm", "http://me:s3cret@127.0.0.1:9/simple")
    assert "127.0.0.1:9/simple" in str(info.value) and "s3cret" not in str(info.value)


def test_find_links_directory_is_read(tmp_path: Path) -> None:
    for name in ("paxm-1.0.0-py3-none-any.whl", "paxm-1.1.0-py3-none-any.whl", "paxm_provider_sqlite-1.1.0.tar.gz"):
        (tmp_path / name).write_text("")
    assert available_versions("paxm", None, find_links=[str(tmp_path)]) == {"1.0.0", "1.1.0"}
    assert available_versions("paxm-provider-sqlite", None, find_links=[f"file://{tmp_path}"]) == {"1.1.0"}


def test_target_is_the_newest_version_every_installed_distribution_has() -> None:
    installed = {"paxm": "0.1.0", "paxm-provider-zep": "0.1.0"}
    offered = {"paxm": {"0.1.0", "0.2.0", "0.3.0", "0.4.0rc1"}, "paxm-provider-zep": {"0.1.0", "0.2.0"}}
    assert _choose_target(installed, offered, None, pre=False) == "0.2.0"
    assert _choose_target({"paxm": "0.1.0"}, offered, None, pre=True) == "0.4.0rc1"
    assert _choose_target(installed, offered, "0.1.0", pre=False) == "0.1.0"
    with pytest.raises(PaxmError, match="version 0.3.0 is not on the index for: paxm-provider-zep"):
        _choose_target(installed, offered, "0.3.0", pre=False)
    with pytest.raises(PaxmError, match="no release of paxm"):
        _choose_target(installed, {}, None, pre=False)


def test_pep440_ordering() -> None:
    ordered = ["1.0.dev1", "1.0a1", "1.0a2", "1.0b1", "1.0rc1", "1.0", "1.0.post1", "1.0.1", "1.1", "10.0"]
    keys = [version_key(v) for v in ordered]
    assert all(k is not None for k in keys)
    assert sorted(ordered, key=lambda v: version_key(v) or ()) == ordered
    assert version_key("1.0") == version_key("1.0.0")
    assert version_key("not-a-version") is None
    assert [is_prerelease(v) for v in ("1.0rc1", "1.0.dev3", "1.0", "1.0.post2")] == [True, True, False, False]
    assert canonical_name("Paxm_Provider.Zep") == "paxm-provider-zep"


@given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=4), st.integers(0, 50))
def test_release_numbers_compare_numerically(parts: list[int], bump: int) -> None:
    base = ".".join(map(str, parts))
    bigger = ".".join(map(str, [*parts[:-1], parts[-1] + bump + 1]))
    assert (version_key(bigger) or ()) > (version_key(base) or ())
