"""Durable capture queue: hook events -> episodes -> per-provider deliveries."""

from __future__ import annotations
