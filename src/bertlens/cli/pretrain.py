"""`bertlens pretrain`: continued masked-LM pre-training (DAPT on corpus files, TAPT on a task's own texts), or from
scratch. Its flags are derived from `PretrainOptions` (api/pretrain.py; cli/derived.py)."""

from __future__ import annotations

from bertlens.cli.console import progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "pretrain",
    "bertlens.api.pretrain:PretrainOptions",
    "Continue masked-LM training of a model on in-domain text (DAPT, --texts) or on a task's own texts (TAPT, "
    "--task), or train one from scratch (--scratch); writes a model directory every command accepts, with the "
    "masked-LM head kept.",
    required={"out": "the model directory to write (an interrupted run resumes here)"},
    config_moved="to train from scratch (pretrain's --config before), give --scratch SIZE|FILE --tokenizer DIR",
)


def run(options) -> None:
    from bertlens.api.pretrain import run_pretrain_command
    from bertlens.training import distributed

    writer = distributed.setup().writer  # under torchrun: joins the group now (run_pretrain_command reuses it)
    with progress_bar("pretrain", unit="steps", enabled=not options.quiet and writer) as update:
        done = run_pretrain_command(options, progress=update)
    if done is None:  # another rank than 0 under torchrun: rank 0 prints
        return
    outcome, out = done.outcome, options.out
    say(
        f"pretrain: {outcome.tokens:,} tokens from {done.source}, {outcome.result.steps} steps; held-out masked-LM "
        f"loss {outcome.base_heldout:.3f} (base) -> {outcome.final_heldout:.3f}; {outcome.head}"
    )
    say(f"saved {out} (use --model {out}, or --from {out} to continue)")
