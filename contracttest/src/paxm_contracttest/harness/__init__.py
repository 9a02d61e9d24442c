"""Helpers shared by the real-binary harness tests of several integration distributions."""
