"""What a server is configured with, validated once (the CLI and a Python caller get the same checks)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from bertlens.errors import OptionError

LONG_TEXT_POLICIES = ("truncate", "refuse")


@dataclass(frozen=True)
class ServeLimits:
    max_batch_tokens: int = 16384
    max_wait_ms: float = 5.0
    max_inputs: int = 256  # texts per request
    max_chars: int = 20000  # characters per text
    max_body_bytes: int = 4 * 1024 * 1024
    max_queue: int = 1024  # requests waiting
    long_text: str = "truncate"  # texts over the model's limit: truncate (and count) or refuse (413)
    max_client_requests: int = 0  # requests one client address may have in flight (0: no limit); over it, 429
    max_token_values: int = 4_000_000  # /embed_all: floats in one response (tokens x width); about 40 MB of JSON

    def __post_init__(self) -> None:
        for spec in fields(self):
            value, name = getattr(self, spec.name), spec.name
            if name == "long_text":
                if value not in LONG_TEXT_POLICIES:
                    raise OptionError(f"{{long_text_policy}} must be one of {', '.join(LONG_TEXT_POLICIES)}",
                                      "long_text_policy")  # fmt: skip
            elif not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
                raise OptionError(f"{{{name}}} must be a finite number, got {value!r}", name)
            elif name in ("max_wait_ms", "max_client_requests") and value < 0:
                no_limit = " (0: no limit)" if name == "max_client_requests" else ""
                raise OptionError(f"{{{name}}} must be >= 0{no_limit}, got {value}", name)
            elif name not in ("max_wait_ms", "max_client_requests") and value < 1:
                raise OptionError(f"{{{name}}} must be at least 1, got {value}", name)


@dataclass(frozen=True)
class ServeOptions:
    """Everything about a server besides its encoder: limits, encode workers, the API key, the reported name."""

    limits: ServeLimits = field(default_factory=ServeLimits)
    workers: int = 1  # batches encoded at once, each on its own thread and embedder copy (`for_thread()`)
    api_key: str | None = None  # require 'Authorization: Bearer KEY' on the embedding routes
    name: str = "bertlens"  # the model name reported in responses
    max_dimension_loss: float = 0.01  # `dimensions` below the full width: only where the recipe's measured loss is <=
    any_dimensions: bool = False  # answer any `dimensions`, measured or not (TEI's behaviour)

    def __post_init__(self) -> None:
        if not isinstance(self.workers, int) or self.workers < 1:
            raise OptionError(f"{{workers}} must be at least 1, got {self.workers!r}", "workers")
        loss = self.max_dimension_loss
        if isinstance(loss, bool) or not isinstance(loss, int | float) or not math.isfinite(loss) or loss < 0:
            raise OptionError(
                f"{{max_dimension_loss}} must be a finite number >= 0, got {loss!r}", "max_dimension_loss"
            )
