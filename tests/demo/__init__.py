"""Tests of demo_tools: the demo server's tools, resources and prompts."""
