"""The contract suite judged with pytester: a good provider passes, each broken one fails clearly."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from xml.etree import ElementTree

import pytest

FAKES = (Path(__file__).parent / "_fake_providers.py").read_text()

pytest_plugins = ["pytester"]


def run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(fakes_src=FAKES)
    pytester.makepyfile(test_subject="from fakes_src import *\n" + body)
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q", *args)


def test_good_provider_passes_everything(pytester: pytest.Pytester) -> None:
    result = run(pytester, "TestGood = contract_for(GoodProvider)\n", "-ra")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0, result.stdout.str()
    # every capability is declared, so only router neutrality may skip (router absent)
    assert outcomes.get("skipped", 0) <= 1, result.stdout.str()
    assert outcomes["passed"] >= 20


def test_plugin_module_has_no_autouse_fixtures_and_no_side_effects(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_plain=(
            "import sys\n"
            "def test_plain(request):\n"
            "    assert 'paxm_contracttest.plugin' in sys.modules  # the plugin is loaded...\n"
            "    assert not [f for f in request.fixturenames if f.startswith('paxm')]  # ...and adds nothing autouse\n"
        )
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=1)


def test_checks_carry_the_marker(pytester: pytest.Pytester) -> None:
    body = "TestGood = contract_for(GoodProvider)\ndef test_unrelated():\n    pass\n"
    result = run(pytester, body, "-m", "paxm_contract", "-k", "test_health or unrelated", "--strict-markers")
    result.assert_outcomes(passed=1, deselected=22)  # test_unrelated is left out by -m
    result.stdout.no_fnmatch_line("*test_unrelated*PASSED*")


# case -> (test module body, pytest arguments, outcomes, messages that must be in the output)
OUTCOMES: dict[str, tuple[str, tuple[str, ...], dict[str, int], list[str]]] = {
    "missing_type_override_is_a_clear_error": (
        "class TestForgot(ProviderContract):\n    pass\n",
        ("-k", "test_health"),
        {"errors": 1},
        ["*TestForgot must override the paxm_provider_type fixture*"],
    ),
    "uninstalled_type_names_the_entry_point": (
        "class TestMissing(ProviderContract):\n"
        "    @pytest.fixture\n"
        "    def paxm_provider_type(self):\n"
        "        return 'no-such-type'\n",
        ("-k", "test_health"),
        {"errors": 1},
        ["*'no-such-type' is not installed*[[]project.entry-points.paxm[]]*"],
    ),
    "class_attributes_name_the_type_and_the_capabilities": (
        "class TestByName(ProviderContract):\n"
        "    provider_type = 'no-such-type'\n"
        "class TestCapabilities(contract_for(GoodProvider)):\n"
        "    expected_capabilities = frozenset({'put_batch', 'teleport'})\n",
        ("-k", "test_health"),
        {"errors": 2},
        ["*'no-such-type' is not installed*", "*lists unknown capabilities [[]'teleport'[]]*"],
    ),
    "misspelled_expected_capability_is_an_error": (
        "class TestTypo(contract_for(GoodProvider)):\n"
        "    @pytest.fixture\n"
        "    def paxm_expected_capabilities(self):\n"
        "        return {'putbatch'}\n",
        ("-k", "test_health"),
        {"errors": 1},
        ["*unknown capabilities [[]'putbatch'[]]*"],
    ),
    "capability_not_declared_is_skipped_not_failed": (
        "class P(GoodProvider):\n    delete = None\nTestPartial = contract_for(P, capabilities=('put_batch',))\n",
        ("-k", "test_delete", "-rs"),
        {"skipped": 1},
        ["*'delete' is not declared by this provider*"],
    ),
    "expected_capabilities_fixture_overrides_declaration": (
        "class P(GoodProvider):\n    delete = None\n"
        "class TestStrict(contract_for(P, capabilities=())):\n"
        "    @pytest.fixture\n"
        "    def paxm_expected_capabilities(self):\n"
        "        return {'delete'}\n",
        ("-k", "test_delete or test_declared"),
        {"failed": 2},
        ["*declared but not implemented: delete*"],
    ),
    "eventually_consistent_backend_passes_with_read_after_write": (
        "import time\n"
        "class P(GoodProvider):\n"
        "    def put(self, item, deadline):\n"
        "        ref = super().put(item, deadline)\n"
        "        self.visible_at = getattr(self, 'visible_at', {})\n"
        "        self.visible_at[ref.id] = time.monotonic() + 0.3\n"
        "        return ref\n"
        "    def search(self, query, deadline):\n"
        "        now = time.monotonic()\n"
        "        return [h for h in super().search(query, deadline) if self.visible_at.get(h.id, 0) <= now]\n"
        "class TestLagging(contract_for(P)):\n"
        "    @pytest.fixture\n"
        "    def paxm_read_after_write(self):\n"
        "        from paxm_contracttest import ReadAfterWrite\n"
        "        return ReadAfterWrite(timeout=2.0, interval=0.1)\n"
        "TestImpatient = contract_for(P)\n",
        ("-k", "test_search_returns_written_memory_faithfully"),
        {"passed": 1, "failed": 1},
        ["*override the paxm_read_after_write fixture*"],
    ),
}


@pytest.mark.parametrize("case", sorted(OUTCOMES))
def test_contract_outcome_and_message(pytester: pytest.Pytester, case: str) -> None:
    body, args, outcomes, messages = OUTCOMES[case]
    result = run(pytester, body, *args)
    result.assert_outcomes(**outcomes)
    for message in messages:  # each on its own: the order of the errors is not part of the contract
        result.stdout.fnmatch_lines([message])


BROKEN = {
    "scores_outside_unit_interval": (
        "class P(GoodProvider):\n    def relevance(self, matched, wanted):\n        return 0.5 + matched / wanted\n",
        "test_scores",
        "*relevance 1.5 is outside [[]0, 1[]]*",
    ),
    "lower_is_better": (
        "class P(GoodProvider):\n    def relevance(self, matched, wanted):\n        return 1 - matched / wanted / 2\n",
        "test_scores",
        "*must be higher-is-better*",
    ),
    "raw_score_without_kind": (
        "class P(GoodProvider):\n    def search(self, query, deadline):\n"
        "        return [h.copy(raw_score_kind='') for h in super().search(query, deadline)]\n",
        "test_scores",
        "*raw_score is set but raw_score_kind is empty*",
    ),
    "unstable_name": (
        "class P(GoodProvider):\n    @property\n    def name(self):\n        return 'renamed'\n",
        "test_name_is_stable",
        "*must be the instance name the factory was given*",
    ),
    "ref_for_other_provider": (
        "class P(GoodProvider):\n    def put(self, item, deadline):\n"
        "        ref = super().put(item, deadline)\n        return MemoryRef('other', ref.id)\n",
        "test_put_returns_ref",
        "*ref for provider 'other'*instance name 'contract'*",
    ),
    "text_not_faithful": (
        "class P(GoodProvider):\n    def text_of(self, item):\n        return item.text.upper()\n",
        "test_search_returns_written_memory_faithfully",
        "*differs from the written text*",
    ),
    "ignores_deadline": (
        "class P(GoodProvider):\n    def _check(self, op, deadline):\n        pass\n",
        "test_deadline_is_honoured and put and cancelled",
        "*put with an already cancelled Deadline returned normally*",
    ),
    "metadata_used_as_filter": (
        "class P(GoodProvider):\n    def accepts(self, item, query):\n"
        "        return all(item.metadata.get(k, v) == v for k, v in query.metadata.items())\n",
        "test_metadata_is_never_a_filter",
        "*did not return the memory just written*",
    ),
    "declared_capability_missing": (
        "class P(GoodProvider):\n    delete = None\n",
        "test_delete",
        "*declares 'delete' but does not implement delete(ref, deadline)*",
    ),
    "delete_does_nothing": (
        "class P(GoodProvider):\n    def delete(self, ref, deadline):\n        pass\n",
        "test_delete",
        "*still searchable after delete*",
    ),
    "batch_out_of_order": (
        "class P(GoodProvider):\n    def put_batch(self, items, deadline):\n"
        "        return list(reversed([self.put(i, deadline) for i in reversed(items)]))[::-1]\n",
        "test_put_batch",
        "*put_batch refs are out of order*",
    ),
    "drops_attribution": (
        "class P(GoodProvider):\n    def search(self, query, deadline):\n"
        "        from paxm_core import MemoryOrigin\n"
        "        return [h.copy(origin=MemoryOrigin()) for h in super().search(query, deadline)]\n",
        "test_origin_and_scope_round_trip",
        "*attribution did not round-trip*",
    ),
    "close_keeps_working": (
        "class P(GoodProvider):\n    def close(self):\n        pass\n",
        "test_close",
        "*DID NOT RAISE*",
    ),
    "cleanup_removes_nothing": (
        "class P(GoodProvider):\n    def cleanup_expired(self, limit, deadline):\n        return 0\n",
        "test_cleanup_expired",
        "*removed nothing although a memory expired*",
    ),
}


def test_broken_providers_fail_with_clear_messages(pytester: pytest.Pytester) -> None:
    # One pytester run for every broken provider keeps this fast; the JUnit report tells
    # which check failed for which provider and with what message.
    body = ""
    for case, (provider_src, _, _) in sorted(BROKEN.items()):
        body += provider_src.replace("class P(", f"class P_{case}(") + f"TestBroken_{case} = contract_for(P_{case})\n"
    result = run(pytester, body, "--junitxml=report.xml")
    root = ElementTree.parse(pytester.path / "report.xml").getroot()
    failures: dict[str, list[tuple[str, str]]] = {}
    for case_el in root.iter("testcase"):
        failure = case_el.find("failure")
        if failure is not None:
            cls = case_el.get("classname", "").rsplit(".", 1)[-1]
            failures.setdefault(cls, []).append(
                (case_el.get("name", ""), failure.get("message", "") + (failure.text or ""))
            )
    for case, (_, selector, message) in sorted(BROKEN.items()):
        failed = failures.get(f"TestBroken_{case}", [])
        words = selector.split(" and ")
        relevant = [text for name, text in failed if all(word in name for word in words)]
        assert relevant, f"{case}: no failing check matching {selector!r}; failures: {[n for n, _ in failed]}"
        assert any(fnmatch.fnmatch(text.replace("\n", " "), message) for text in relevant), (
            f"{case}: failure message does not match {message!r}: {relevant[0][:500]}"
        )
    assert result.ret != 0


def test_config_fixture_is_parametrizable(pytester: pytest.Pytester) -> None:
    body = (
        "from paxm_core import ProviderConfig\n"
        "seen = []\n"
        "class P(GoodProvider):\n"
        "    def __init__(self, name, config):\n"
        "        super().__init__(name, config)\n"
        "        seen.append(config.path)\n"
        "class TestTwoConfigs(contract_for(P)):\n"
        "    @pytest.fixture(params=['first', 'second'])\n"
        "    def paxm_provider_config(self, request):\n"
        "        return ProviderConfig(type='fake', path=request.param)\n"
        "def test_zz_both_configs_used():\n"
        "    assert {'first', 'second'} <= set(seen)\n"
    )
    result = run(pytester, body, "-k", "test_health or test_zz")
    result.assert_outcomes(passed=3)
