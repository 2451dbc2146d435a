"""dsh-conformance: the conformance suite for the DeepSeek Harness tool execution pipeline."""

__version__ = "0.1.0"
