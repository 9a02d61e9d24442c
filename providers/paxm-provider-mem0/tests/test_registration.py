"""The plugin registers two fully described provider types and stays import-light."""

from __future__ import annotations

import subprocess
import sys

from paxm_core import ProviderConfig
from paxm_core.plugins import get_plugin_manager


def test_both_types_are_described_for_setup_and_validation() -> None:
    pm = get_plugin_manager()
    selfhosted, cloud = pm.provider_type("mem0"), pm.provider_type("mem0-cloud")
    assert (selfhosted.locality, cloud.locality) == ("keyed", "cloud")
    assert selfhosted.package == cloud.package == "paxm-provider-mem0"
    assert selfhosted.secret_keys == cloud.secret_keys == frozenset({"api_key"})
    for spec in (selfhosted, cloud):
        asked = {k.name for k in spec.config_keys if k.ask}
        assert asked == {"base_url", "api_key", "user_id"}
        keys = {k.name: k for k in spec.config_keys}
        assert keys["infer"].default is False and keys["score_semantics"].choices == ("similarity", "distance")
        assert {"put_batch", "delete", "close", "attribution"} <= spec.capabilities
    assert {k.name: k.default for k in selfhosted.config_keys}["base_url"] == "http://localhost:8888"
    assert {k.name: k.default for k in cloud.config_keys}["base_url"] == "https://api.mem0.ai"
    assert {k.name: k.required for k in cloud.config_keys}["api_key"] is True
    assert cloud.passive_timeout == 0.8 and selfhosted.passive_timeout is None
    assert selfhosted.validate is not None and cloud.validate is not None
    assert selfhosted.validate(ProviderConfig(type="mem0", user_id="todd")) == []
    assert cloud.validate(ProviderConfig(type="mem0-cloud", user_id="todd", api_key="m0-x")) == []
    problems = cloud.validate(ProviderConfig.of(type="mem0-cloud", score_semantics="cosine"))
    assert len(problems) == 3 and all(p.endswith((")", "distance", "run_id")) for p in problems), problems


def test_loading_the_plugin_does_not_import_httpx() -> None:
    code = (
        "import sys; from paxm_core.plugins import get_plugin_manager; "
        "get_plugin_manager().provider_type('mem0'); print('httpx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
