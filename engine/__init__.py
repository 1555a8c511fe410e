"""The local inference engine: plan, serve, supervise and benchmark vLLM for Kimi K3.1 Pro."""
