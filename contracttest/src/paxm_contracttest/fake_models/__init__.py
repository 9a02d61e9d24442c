"""Fake model APIs on 127.0.0.1 for driving real harness binaries offline (one kit for every e2e suite).

* :class:`FakeAnthropic` -- Anthropic Messages (Claude Code);
* :class:`FakeResponses` -- OpenAI Responses (Codex);
* :class:`FakeOpenAI` -- OpenAI Chat Completions (OpenCode, Kilo Code, Pi, Qwen Code ...).

Each is a context manager running a ``ThreadingHTTPServer`` on a free loopback port in a
thread; every request is recorded (arrival time, method, path, parsed body) in memory and
appended to a JSONL log, so a test can check exactly what the model was sent.  The reply is
``reply`` plus `` [marker-seen]`` / `` [marker-absent]`` when a ``marker`` is set, so a test sees
in the harness's own output whether recalled text reached the model.  The shared machinery is
:class:`~paxm_contracttest.fake_models.server.FakeModelServer`.

Stdlib only, so any harness test can import it.  (``paxm_contracttest.fake_openai`` is a
different thing: an embeddings + chat endpoint that backend *servers* run against.)
"""

from __future__ import annotations

from paxm_contracttest.fake_models.anthropic import FakeAnthropic
from paxm_contracttest.fake_models.chat_completions import FakeOpenAI
from paxm_contracttest.fake_models.responses import FakeResponses
from paxm_contracttest.fake_models.server import FakeModelServer, Recorded

__all__ = ["FakeAnthropic", "FakeModelServer", "FakeOpenAI", "FakeResponses", "Recorded"]
