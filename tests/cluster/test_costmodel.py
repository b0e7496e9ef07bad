"""The GPU cost model (docs/cluster.md §GPU cost model): data files, formulas, errors, the ``costmodel``
command, workers."""

from __future__ import annotations

import math

import orjson
import pytest

from kvtheory.cli import main
from kvtheory.cluster.cluster import Cluster, Worker
from kvtheory.cluster.costmodel import cost_model, gpu, load_gpus, load_models, model
from kvtheory.errors import InputError

GPUS = {"L40", "L40S", "A100-80G", "H100-SXM", "H200", "B200", "MI300X", "H20", "RTX-4090"}
MODELS = {
    "Llama-3.1-8B",
    "Llama-3.1-70B",
    "Qwen2.5-7B",
    "Qwen2.5-72B",
    "Mixtral-8x7B",
    "Qwen3-30B-A3B",
    "DeepSeek-V2-Lite",
    "DeepSeek-V3",
}


def test_packaged_tables_have_every_row_with_a_public_source():
    gpus, models = load_gpus(), load_models()
    assert {g.name for g in gpus.values()} == GPUS
    assert {m.name for m in models.values()} == MODELS
    for row in [*gpus.values(), *models.values()]:
        assert row.source.startswith("https://"), row.name


def test_gpu_figures_are_dense_bf16_and_plausible():
    g = load_gpus()
    # dense, not the 2:4-sparsity figures (which are twice these)
    assert g["l40"].peak_bf16_flops == pytest.approx(181.05e12)
    assert g["l40s"].peak_bf16_flops == pytest.approx(362.05e12)
    assert g["a100-80g"].peak_bf16_flops == pytest.approx(312e12)
    assert g["h100-sxm"].peak_bf16_flops == g["h200"].peak_bf16_flops == pytest.approx(989.4e12)
    assert g["h200"].hbm_bytes == 141e9 and g["h100-sxm"].hbm_bytes == 80e9
    assert g["h200"].hbm_bandwidth > g["h100-sxm"].hbm_bandwidth > g["a100-80g"].hbm_bandwidth > g["l40"].hbm_bandwidth


def test_model_shapes_and_kv_bytes_per_token():
    m = load_models()
    assert m["llama-3.1-8b"].kv_bytes_per_token == 2 * 32 * 8 * 128 * 2 == 131072
    assert m["llama-3.1-70b"].kv_bytes_per_token == 2 * 80 * 8 * 128 * 2 == 327680
    mixtral = m["mixtral-8x7b"]
    assert mixtral.kv_bytes_per_token == 131072
    assert mixtral.active_params < mixtral.total_params
    assert round(mixtral.total_params / 1e9, 1) == 46.7 and round(mixtral.active_params / 1e9, 1) == 12.9


def test_formulas_for_llama_8b_on_l40():
    g, m = gpu("L40"), model("llama-3.1-8b")
    cm = cost_model(g, m, mem_fraction=0.9, mfu=0.5)
    assert cm.a_miss == pytest.approx(2 * m.active_params / (g.peak_bf16_flops * 0.5))
    assert cm.a_cached == pytest.approx(m.kv_bytes_per_token / g.hbm_bandwidth)
    assert cm.decode_per_output_token() == pytest.approx(m.active_params * 2 / g.hbm_bandwidth)
    assert cm.decode_per_output_token(1000) == pytest.approx((m.active_params * 2 + 1000 * 131072) / g.hbm_bandwidth)
    assert cm.budget == math.floor((48e9 * 0.9 - m.weight_bytes) / 131072)
    assert 0 < cm.a_cached < cm.a_miss


def test_tensor_parallel_splits_weights_kv_and_compute():
    one = cost_model(gpu("H100-SXM"), model("Llama-3.1-8B"))
    two = cost_model(gpu("H100-SXM"), model("Llama-3.1-8B"), tp=2)
    assert two.a_miss == pytest.approx(one.a_miss / 2)
    assert two.kv_bytes_per_token_per_gpu == one.kv_bytes_per_token_per_gpu // 2
    assert two.budget > 2 * one.budget  # the weights are split too
    sixteen = cost_model(gpu("H100-SXM"), model("Llama-3.1-8B"), tp=16)  # 8 KV heads: replicated beyond tp=8
    assert sixteen.kv_bytes_per_token_per_gpu == 2 * 32 * 1 * 128 * 2


def test_mixture_of_experts_decodes_its_active_weights_but_stores_all():
    cm = cost_model(gpu("H100-SXM"), model("Mixtral-8x7B"), tp=2)
    m = model("Mixtral-8x7B")
    assert cm.weight_bytes == m.total_params * 2
    assert cm.decode_base == pytest.approx(m.active_params * 2 / 2 / 3.35e12)
    assert cm.a_miss == pytest.approx(2 * m.active_params / (2 * 989.4e12 * 0.5))


def test_attention_context_adds_prefill_flops():
    base = cost_model(gpu("L40"), model("Llama-3.1-8B"))
    ctx = cost_model(gpu("L40"), model("Llama-3.1-8B"), context=4096)
    extra = 4 * 32 * 32 * 128 * 4096 / (181.05e12 * 0.5)
    assert ctx.a_miss == pytest.approx(base.a_miss + extra)


def test_weights_that_do_not_fit_are_an_input_error_saying_by_how_much():
    with pytest.raises(InputError, match=r"does not fit.*GB short.*--tp 2"):
        cost_model(gpu("H200"), model("Llama-3.1-70B"))
    with pytest.raises(InputError, match="short"):
        cost_model(gpu("L40"), model("Llama-3.1-70B"), tp=2)
    assert cost_model(gpu("H200"), model("Llama-3.1-70B"), tp=2).budget > 300_000


@pytest.mark.parametrize(
    "options", [{"mem_fraction": 0.0}, {"mem_fraction": 1.5}, {"mfu": 0}, {"mbu": 2}, {"tp": 0}, {"context": -1}]
)
def test_bad_options_are_input_errors(options):
    with pytest.raises(InputError):
        cost_model(gpu("L40"), model("Llama-3.1-8B"), **options)


def test_unknown_names_list_the_known_ones():
    with pytest.raises(InputError, match="known: L40"):
        gpu("TPU-v5e")
    with pytest.raises(InputError, match="Mixtral"):
        model("gpt-5")


def test_user_files_add_and_override_rows(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text(
        "name,peak_bf16_flops,hbm_bytes,hbm_bandwidth,source\nMyGPU,1e15,192e9,8e12,internal\nL40,1e14,48e9,864e9,\n"
    )
    table = load_gpus(path)
    assert table["mygpu"].hbm_bytes == 192e9 and table["l40"].peak_bf16_flops == 1e14
    assert cost_model(gpu("mygpu", path), model("Llama-3.1-70B")).budget > 0
    bad = tmp_path / "bad.csv"
    bad.write_text("name,peak_bf16_flops,hbm_bytes\nX,1,2\n")
    with pytest.raises(InputError, match="missing column"):
        load_gpus(bad)
    bad.write_text("name,peak_bf16_flops,hbm_bytes,hbm_bandwidth,source\nX,-1,2,3,s\n")
    with pytest.raises(InputError, match=r"bad.csv:2.*positive"):
        load_gpus(bad)
    models = tmp_path / "models.csv"
    models.write_text(
        "name,total_params,active_params,layers,attention_heads,kv_heads,head_dim,dtype_bytes,source\n"
        "Tiny,1000000,1000000,2,4,2,16,2,x\n"
    )
    assert model("tiny", models).kv_bytes_per_token == 2 * 2 * 2 * 16 * 2


def test_costmodel_command(capsys):
    assert main(["costmodel", "--gpu", "L40", "--model", "Llama-3.1-8B", "--json"]) == 0
    record = orjson.loads(capsys.readouterr().out)
    for key in ("a_miss", "a_cached", "decode_per_output_token", "kv_bytes_per_token", "budget"):
        assert key in record
    assert record["budget"] == cost_model(gpu("L40"), model("Llama-3.1-8B")).budget
    assert main(["costmodel", "--gpu", "H200", "--model", "Llama-3.1-70B", "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "short" in err
    assert main(["costmodel", "--gpu", "H200", "--model", "Llama-3.1-70B", "--tp", "2", "--mem-fraction", "0.8"]) == 0
    assert main(["costmodel", "--list"]) == 0
    assert "H200" in capsys.readouterr().out


def test_worker_cost_is_the_linear_model():
    w = Worker(a_miss=2.0, a_cached=0.5, budget=100, decode_base=1.0, decode_per_context=0.01)
    # Cost = a_cached h + a_miss (L - h) + O, O = sum_{t<o} (base + per_ctx (L + t))
    assert w.cost(10, 4, 3) == pytest.approx(0.5 * 4 + 2.0 * 6 + sum(1.0 + 0.01 * (10 + t) for t in range(3)))
    assert w.output_time(10, 0) == 0.0
    done, total = w.decode_batch([10], [3])
    assert done == [w.output_time(10, 3)] and total == done[0]
    done, total = w.decode_batch([10, 20, 5], [3, 1, 0])
    steps = [1.0 + 0.01 * (10 + 20 + 0), 1.0 + 0.01 * (10 + 1), 1.0 + 0.01 * (10 + 2)]
    assert done[2] == 0.0 and done[1] == pytest.approx(steps[0]) and done[0] == pytest.approx(sum(steps))
    assert total == pytest.approx(sum(steps))
    with pytest.raises(InputError):
        Worker(a_miss=1.0, a_cached=2.0, budget=10)
    with pytest.raises(InputError):
        Cluster.uniform(0, 10)
