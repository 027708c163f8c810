"""Device choice and the GPU batch budget, checked without a GPU (torch's CUDA queries simulated)."""

import pytest
import torch

from bertlens.encoding.device import CPU_TOKENS, batch_tokens, resolve_device, token_budget
from bertlens.errors import BertlensError


def test_auto_takes_cuda_only_when_torch_sees_it(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu" and resolve_device(None) == "cpu" and resolve_device("CPU") == "cpu"
    with pytest.raises(BertlensError, match="torch sees no CUDA device"):
        resolve_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert (
        resolve_device("auto") == "cuda:0"
        and resolve_device("cuda") == "cuda:0"
        and resolve_device("cuda:1") == "cuda:1"
    )
    with pytest.raises(BertlensError, match="only 2 CUDA device"):
        resolve_device("cuda:2")
    with pytest.raises(BertlensError, match="must be a number"):
        resolve_device("cuda:x")
    with pytest.raises(BertlensError, match="unknown --device 'tpu'"):
        resolve_device("tpu")


def test_the_gpu_budget_grows_with_free_memory_and_fits_it():
    shape = dict(hidden_size=768, num_layers=12, heads=12, max_length=512)
    small, large = token_budget(8 * 2**30, **shape), token_budget(80 * 2**30, **shape)
    assert CPU_TOKENS < small < large
    per_token = 2 * (13 * 768 + 7 * 768 + 12 * 512)
    assert small * per_token <= 0.5 * 8 * 2**30 < (small + 1) * per_token  # the largest that fits half the memory
    assert token_budget(1, **shape) == 512  # never below one full-length text


def test_cpu_keeps_its_budget_of_kept_states_and_cuda_asks_the_card(monkeypatch):
    class Config:
        hidden_size, num_hidden_layers, num_attention_heads = 384, 6, 12

    class Model:
        config = Config()

    assert batch_tokens("cpu", Model(), 256) == CPU_TOKENS

    class Base:  # 12 x 768: the same bytes of kept hidden states per batch as the default model at CPU_TOKENS
        class config:
            hidden_size, num_hidden_layers, num_attention_heads = 768, 12, 12

    assert batch_tokens("cpu", Base(), 256) == CPU_TOKENS * 7 * 384 // (13 * 768) == 4411
    assert batch_tokens("cpu", Base(), 8192) == 8192  # never below one full-length text
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (40 * 2**30, 140 * 2**30))
    assert batch_tokens("cuda:0", Model(), 256) == token_budget(
        40 * 2**30, hidden_size=384, num_layers=6, heads=12, max_length=256
    )
