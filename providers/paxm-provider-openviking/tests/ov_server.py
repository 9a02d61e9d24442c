"""The real openviking-server (0.5.2) on 127.0.0.1, from its own cached venv, with a fake OpenAI.

Session-scoped helper used by conftest.py: ``OpenVikingServer``.
The server's embedder and VLM point at the fake endpoint; its workspace and HOME are temp dirs.
"""

from __future__ import annotations

import json
from pathlib import Path

from paxm_contracttest.servers import BackendServer, provision_venv, venv_python

OPENVIKING_VERSION = "0.5.2"
REQUIREMENTS = [f"openviking=={OPENVIKING_VERSION}"]
#: The root key of the keyed test server (tenant data APIs refuse it; it mints user keys).
ROOT_KEY = "ov-root-key-for-tests-0042"


def openviking_venv() -> Path:
    """The cached venv holding openviking-server (built on first use, ~5 min cold)."""
    return provision_venv("openviking", OPENVIKING_VERSION, REQUIREMENTS)


class OpenVikingServer(BackendServer):
    """openviking-server with a config in ``workdir``; restartable on the same data."""

    def __init__(self, workdir: Path, fake_openai: str, *, root_api_key: str | None = None) -> None:
        super().__init__(workdir)
        conf = {
            "server": {"host": "127.0.0.1", "port": self.port, "root_api_key": root_api_key},
            "storage": {
                "workspace": str(workdir / "data"),
                "vectordb": {"name": "context", "backend": "local"},
                "agfs": {"backend": "local"},
            },
            "embedding": {
                "dense": {
                    "provider": "openai",
                    "model": "fake-embed",
                    "api_key": "sk-offline",
                    "api_base": fake_openai,
                    "dimension": 256,
                    "input": "text",
                    "encoding_format": "float",
                }
            },
            "vlm": {
                "provider": "openai",
                "model": "fake-llm",
                "api_key": "sk-offline",
                "api_base": fake_openai,
                "temperature": 0.0,
                "max_retries": 0,
            },
            "encryption": {"enabled": False},
            "log": {"level": "WARNING", "output": "stdout"},
        }
        (workdir / "home").mkdir(exist_ok=True)
        (workdir / "ov.conf").write_text(json.dumps(conf))
        venv = openviking_venv()
        argv = [str(venv_python(venv)), str(venv / "bin" / "openviking-server"), "--config", str(workdir / "ov.conf")]
        self.launch(argv, {"HOME": str(workdir / "home")})


if __name__ == "__main__":  # CI warm-up: build the venv ahead of the tests
    print(openviking_venv())
