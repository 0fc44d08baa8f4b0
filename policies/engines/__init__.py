"""Inference engines behind `policies.engine.InferenceEngine`: sync, async, RTC, ensemble, remote."""
