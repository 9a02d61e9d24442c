"""Every row of the upstream inventory §3 (memory core) names the tests that prove it.

Fails when a row loses its tests (renamed or deleted), so the coverage claim in
docs/router.md cannot drift.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

#: inventory §3 row -> "file::test" (paths relative to tests/)
COVERAGE: dict[str, list[str]] = {
    "MemoryItem": ["router/test_write.py::test_attribution_is_synced_into_canonical_metadata"],
    "SearchQuery": ["router/test_search.py::test_query_metadata_loses_forged_attribution_and_tiers_are_passed"],
    "MemoryHit": [
        "router/test_search.py::test_hits_get_attribution_restored_and_provider_stamped",
        "router/test_search.py::test_recall_result_json_shape",
    ],
    "Provider interface": ["test_runtime.py::test_every_fake_provider_type_through_the_plugin_manager"],
    "Optional capabilities": [
        "router/test_write.py::test_put_batch_used_when_supported_else_sequential",
        "router/test_write.py::test_runtime_capabilities_narrow_put_batch",
        "router/test_write.py::test_cleanup_expired_sums_capable_providers",
        "router/test_write.py::test_close_closes_providers_and_is_idempotent",
    ],
    "Provider registry": [
        "test_runtime.py::test_builds_only_enabled_providers_with_required_set",
        "test_runtime.py::test_unknown_provider_type_names_the_package",
        "test_runtime.py::test_factory_failure_closes_what_was_built",
    ],
    "Router fan-out": [
        "router/test_search.py::test_unknown_route_is_a_clear_error",
        "router/test_search.py::test_no_providers_is_an_error",
        "router/test_search.py::test_policy_without_routes_reads_every_provider",
        "router/test_search.py::test_best_effort_failure_is_reported_and_healthy_hits_kept",
        "router/test_search.py::test_required_failure_raises_with_partial_result",
        "router/test_bulkhead.py::test_providers_are_searched_and_written_concurrently",
    ],
    "Bulkhead": [
        "router/test_bulkhead.py::test_hanging_best_effort_provider_cannot_stall_recall",
        "router/test_bulkhead.py::test_busy_lane_does_not_delay_other_providers",
        "router/test_bulkhead.py::test_stuck_best_effort_writer_returns_after_its_timeout",
    ],
    "Candidate pool": [
        "router/test_search.py::test_candidate_pool_rules",
        "router/test_search.py::test_provider_is_asked_for_the_pool_and_results_truncated",
    ],
    "Thresholds": [
        "router/test_search.py::test_profile_thresholds_and_route_overrides",
        "router/test_search.py::test_relevance_falls_back_to_score_and_is_clamped",
        "router/test_search.py::test_tier_filter_uses_field_then_metadata_default_ltm",
        "router/test_properties.py::test_filters_admit_exactly_what_they_should",
    ],
    "Recency boost": [
        "router/test_search.py::test_recency_boost_formula_and_ordering",
        "router/test_search.py::test_weight_scales_score_beyond_one",
    ],
    "Calibration / ranking formula": [
        "router/test_search.py::test_flat_and_graded_providers_interleave",
        "router/test_search.py::test_final_tie_break_newer_then_provider_then_id",
        "router/test_properties.py::test_output_independent_of_completion_and_route_order",
    ],
    "Dedupe": [
        "router/test_search.py::test_dedupe_same_text_across_providers_keeps_best",
        "router/test_search.py::test_dedupe_keeps_identical_text_in_different_scopes",
        "router/test_search.py::test_dedupe_empty_text_by_provider_and_id",
    ],
    "Provider recall diagnostics": [
        "router/test_search.py::test_provider_recall_diagnostics",
        "cli/test_memory_cli.py::test_recall_json_shows_provider_errors_and_recalls",
    ],
    "Put path": [
        "router/test_write.py::test_writes_go_to_every_route_and_refs_are_sorted",
        "router/test_write.py::test_sequential_put_stops_at_first_error",
        "router/test_write.py::test_write_errors_and_empty_input",
        "router/test_write.py::test_write_policy_sets_tier_and_expiry",
        "router/test_write.py::test_put_to_provider_uses_the_same_pipeline",
    ],
    "Attribution sync (canonical keys)": [
        "router/test_write.py::test_attribution_is_synced_into_canonical_metadata",
        "router/test_write.py::test_attribution_round_trip_through_string_metadata_provider",
        "router/test_attribution_properties.py::test_canonical_keys_mirror_fields_and_round_trip",
        "router/test_tools.py::test_recall_metadata_is_trusted_context_only",
    ],
    "Write provenance": [
        "router/test_tools.py::test_write_provenance_agent_rules",
        "router/test_tools.py::test_remember_carries_trusted_identity_and_drops_caller_keys",
    ],
    "LTM admission (fingerprint)": [
        "router/test_write.py::test_ltm_admission_fingerprint",
        "router/test_write.py::test_admission_uses_admission_text_and_skips_stm_and_explicit_ids",
        "cli/test_memory_cli.py::test_ltm_remember_twice_consolidates",
    ],
    "Expiry rules": [
        "router/test_search.py::test_expired_hits_are_dropped_by_field_or_metadata",
        "cli/test_memory_cli.py::test_stm_profile_json_and_expiry",
    ],
    "Session sequence allocation": [
        "router/test_write.py::test_session_sequences_are_monotonic_and_explicit_ones_kept",
        "router/test_session_sequence.py::test_two_processes_get_strictly_increasing_distinct_sequences",
        "cli/test_memory_cli.py::test_two_processes_remembering_get_increasing_sequences",
    ],
    "Active session identity": [
        "router/test_tools.py::test_cli_session_id_formula",
        "test_runtime.py::test_cli_session_is_stable_per_workspace",
    ],
    "Recall-provenance stripping (memory echo)": [
        "router/test_envelope.py::test_wrap_escapes_nested_envelopes_and_modes",
        "router/test_envelope.py::test_strip_removes_complete_envelopes_only",
        "router/test_envelope.py::test_wrapped_memory_never_escapes_and_strips_cleanly",
    ],
    "Health": ["router/test_bulkhead.py::test_health_and_cleanup_survive_a_hanging_provider"],
    "CleanupExpired": [
        "router/test_write.py::test_cleanup_expired_sums_capable_providers",
        "router/test_write.py::test_cleanup_required_failure_raises",
    ],
}


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


@pytest.mark.parametrize("row", sorted(COVERAGE))
def test_inventory_row_has_tests(row: str) -> None:
    assert COVERAGE[row], f"inventory §3 row {row!r} has no test"
    for ref in COVERAGE[row]:
        file, name = ref.split("::")
        assert name in _test_names(TESTS / file), f"{row}: {ref} does not exist"
