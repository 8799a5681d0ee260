"""`Telemetry`: an agent's (or a client's) choice of providers, and the check that costs nothing when there are none."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Final

from .attributes import CAPTURE_CONTENT, SCOPE

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider
    from opentelemetry.trace import Tracer, TracerProvider

    from .run import RunTrace

# The conventions' advised bucket boundaries (seconds) for model requests and tool calls, and for runs.
_OPERATION_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
_RUN_BUCKETS: Final = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6)
_TOKEN_BUCKETS: Final = tuple(4**power for power in range(14))
_NO_TRACER_PROVIDERS: Final = frozenset(("ProxyTracerProvider", "NoOpTracerProvider"))
_NO_METER_PROVIDERS: Final = frozenset(("_ProxyMeterProvider", "NoOpMeterProvider"))
"""The API's providers before the application sets one (the meter proxy's class is private)."""
_MISSING: Final = object()


class Telemetry:
    """Where an agent's spans and metrics go, and whether they hold message contents.

    Give it to `Agent(telemetry=...)`; the default one uses the global providers the
    application set (`opentelemetry.trace.set_tracer_provider`, `metrics.set_meter_provider`).

    Args:
        tracer_provider: The provider of the spans; the global one when None. Spans are
            recorded only when there is a provider that is not the API's default (no-op).
        meter_provider: The provider of the metrics; the global one when None (as above).
        record_content: Record prompts, answers, tool arguments and results on the spans. When
            None, `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` decides (`true` to record).
        agent_name: `gen_ai.agent.name`, and the run span's name `invoke_agent {agent_name}`.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        record_content: bool | None = None,
        agent_name: str | None = None,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.record_content = record_content
        self.agent_name = agent_name
        self._tracer: tuple[object, Tracer] | None = None
        self._instruments: tuple[object, Instruments] | None = None
        # Before asking the API for its global providers (~1 µs each: `get_*_provider()` looks the
        # environment up on every call), a run reads the API's set-once globals directly (~0.1 µs):
        # None means never set, so the API's no-op default, unless the environment names a provider
        # for the API to load (looked up once, here).
        environ = os.environ
        self._no_named_providers = (
            "OTEL_PYTHON_TRACER_PROVIDER" not in environ and "OTEL_PYTHON_METER_PROVIDER" not in environ
        )

    def start_run(self, thread_id: str, model_name: str, *, resume: bool = False) -> RunTrace | None:
        """Start a run's span; None when neither spans nor metrics are configured (the usual case).

        Call `RunTrace.end` when the run ends, in the same task.
        """
        tracer = self.tracer()
        instruments = self.instruments()
        if tracer is None and instruments is None:
            return None
        content = self.record_content
        if content is None:
            content = os.environ.get(CAPTURE_CONTENT, "").strip().lower() in ("1", "true", "yes")
        from .run import RunTrace  # loaded once something records: a client never loads it

        return RunTrace(self, tracer, instruments, thread_id, model_name, content=content, resume=resume)

    def tracer(self) -> Tracer | None:
        """The tracer of this telemetry's provider; None when no provider is configured."""
        provider = self.tracer_provider
        if provider is None:
            api = sys.modules.get("opentelemetry.trace")
            if api is None or (self._no_named_providers and getattr(api, "_TRACER_PROVIDER", _MISSING) is None):
                return None  # the API is not loaded, or its global provider was never set
            provider = api.get_tracer_provider()
            if type(provider).__name__ in _NO_TRACER_PROVIDERS:
                return None
        cached = self._tracer
        if cached is not None and cached[0] is provider:
            return cached[1]
        from .. import __version__

        tracer = provider.get_tracer(SCOPE, __version__)
        self._tracer = (provider, tracer)
        return tracer

    def instruments(self) -> Instruments | None:
        """The metric instruments of this telemetry's provider; None when no provider is configured."""
        provider = self.meter_provider
        if provider is None:
            api = sys.modules.get("opentelemetry.metrics._internal")
            if api is None or (self._no_named_providers and getattr(api, "_METER_PROVIDER", _MISSING) is None):
                return None
            provider = api.get_meter_provider()
            if type(provider).__name__ in _NO_METER_PROVIDERS:
                return None
        cached = self._instruments
        if cached is not None and cached[0] is provider:
            return cached[1]
        instruments = Instruments(provider)
        self._instruments = (provider, instruments)
        return instruments


class Instruments:
    """The metric instruments, made once per meter provider."""

    __slots__ = ("operation", "runs", "tokens", "tool_calls", "tool_duration")

    def __init__(self, provider: MeterProvider) -> None:
        from .. import __version__

        meter = provider.get_meter(SCOPE, __version__)
        self.operation: Histogram = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=_OPERATION_BUCKETS,
        )
        self.tokens: Histogram = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.runs: Histogram = meter.create_histogram(
            "gen_ai.invoke_agent.duration",
            unit="s",
            description="The duration of an agent run, from its start to its result.",
            explicit_bucket_boundaries_advisory=_RUN_BUCKETS,
        )
        self.tool_duration: Histogram = meter.create_histogram(
            "gen_ai.execute_tool.duration",
            unit="s",
            description="The duration of a tool call, from the model's call to its one result.",
            explicit_bucket_boundaries_advisory=_OPERATION_BUCKETS,
        )
        self.tool_calls: Counter = meter.create_counter(
            "toolwire.tool.calls",
            unit="{call}",
            description="Tool calls by outcome type, mode and where they ran.",
        )
