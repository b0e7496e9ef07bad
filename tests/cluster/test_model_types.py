"""reproduce/model_types.py (docs/results.md, by model type and size): the tensor-parallel degree it picks is the
smallest that leaves the cache it asks for, the fp8 KV cache runs on the same GPUs as the bf16 one and halves
the bytes per token, and a model that fits no worker of 8 GPUs is reported as such, not dropped."""

import importlib.util
import sys
from pathlib import Path

import orjson
import pytest

from kvtheory.cluster.costmodel import cost_model, gpu
from kvtheory.cluster.model_config import packaged_models, with_dtypes
from kvtheory.errors import InputError


def _load():
    path = Path(__file__).resolve().parents[2] / "reproduce" / "model_types.py"
    spec = importlib.util.spec_from_file_location("reproduce_model_types", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


model_types = _load()
MODELS = packaged_models()


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("gpu_name", ["H200", "L40"])
def test_the_chosen_tp_is_the_smallest_that_leaves_the_cache(name, gpu_name):
    g, spec = gpu(gpu_name), MODELS[name]
    chosen = model_types.smallest_tp(g, spec, 100_000)

    def enough(tp):
        try:
            return cost_model(g, spec, tp=tp).budget >= 100_000
        except InputError:
            return False

    fitting = [tp for tp in model_types.TP_CHOICES if enough(tp)]
    assert (chosen.tp if chosen else None) == (fitting[0] if fitting else None)


def test_large_models_get_the_gpus_their_weights_need():
    """Llama-3.1-70B's bf16 weights (141.1 GB) exceed 0.9 of one H200 (126.9 GB); DeepSeek-V3's fp8 weights
    (671 GB) need more than 4 of them and fit 8."""
    h200 = gpu("H200")
    assert model_types.smallest_tp(h200, MODELS["llama-3.1-8b"], 100_000).tp == 1
    assert model_types.smallest_tp(h200, MODELS["llama-3.1-70b"], 100_000).tp == 2
    assert model_types.smallest_tp(h200, MODELS["deepseek-v3"], 100_000).tp == 8
    assert model_types.smallest_tp(gpu("L40"), MODELS["deepseek-v3"], 100_000) is None


def test_an_fp8_kv_cache_halves_the_bytes_and_doubles_the_budget():
    spec = MODELS["llama-3.1-8b"]
    bf16 = cost_model(gpu("H200"), with_dtypes(spec, kv_dtype="bf16"))
    fp8 = cost_model(gpu("H200"), with_dtypes(spec, kv_dtype="fp8"))
    assert 2 * fp8.kv_bytes_per_token == bf16.kv_bytes_per_token == 131_072
    assert fp8.budget in (2 * bf16.budget, 2 * bf16.budget + 1)


def test_the_kinds_name_dense_moe_and_mla():
    assert model_types.kind(MODELS["llama-3.1-70b"]) == "dense, GQA"
    assert model_types.kind(MODELS["mixtral-8x7b"]) == "MoE 8, 2 per token, GQA"
    assert model_types.kind(MODELS["deepseek-v3"]) == "MoE 256, 8 per token, MLA"


@pytest.mark.slow
def test_every_model_and_kv_dtype_gets_a_row_and_deepseek_v3_fits_no_l40_worker(capsys):
    assert model_types.main(["--quick", "--gpu", "L40", "--pair", "round-robin+lru"]) == 0
    out = orjson.loads(capsys.readouterr().out)
    rows = {(m["model"], m["kv_dtype"]): m for m in out["models"]}
    assert set(rows) == {(spec.name, d) for spec in MODELS.values() for d in ("bf16", "fp8")}
    assert not rows[("DeepSeek-V3", "bf16")]["fits"]  # 671 GB of fp8 weights; 8 x 48 GB is 384 GB
    for spec in MODELS.values():  # the KV dtype is all that changes: the same GPUs per worker
        assert rows[(spec.name, "bf16")].get("tp") == rows[(spec.name, "fp8")].get("tp")
    small = rows[("Llama-3.1-8B", "bf16")]
    assert small["tp"] == 1 and 0 <= small["runs"]["round-robin+lru"]["hit_rate"] <= 1


@pytest.mark.slow
def test_the_blocks_half_rounds_every_budget_down_to_whole_blocks(capsys):
    """--block-size 16: each worker's B is the token run's B rounded down to a multiple of 16, the setting says
    the block size, and hits are counted (vllm on every worker)."""
    assert model_types.main(["--quick", "--gpu", "L40", "--pair", "round-robin+vllm", "--block-size", "16"]) == 0
    out = orjson.loads(capsys.readouterr().out)
    assert out["setting"]["block_size"] == 16
    g = gpu("L40")
    for m in out["models"]:
        if m["fits"]:
            spec = with_dtypes(MODELS[m["model"].lower()], kv_dtype=m["kv_dtype"])
            assert m["budget"] == 16 * (cost_model(g, spec, tp=m["tp"]).budget // 16)
            assert 0 < m["runs"]["round-robin+vllm"]["hit_rate"] < 1
