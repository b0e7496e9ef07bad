"""Models from a Hugging Face config.json (docs/cluster.md §Models from config.json): KV bytes per token for
GQA, MHA and MLA, parameter counts against the published totals, dtypes, the catalog, errors.

Expected values are published figures or hand computations from the configs' numbers, never a run's output.

Tolerance for parameter totals: a published total is given to a few digits (8.03B, 46.7B, 671B), rounded by
some vendors and truncated by others (Qwen: 7.6156B is published as 7.61B, 3.353B as 3.3B), so a count
passes when it lies within one unit of the last published digit. A wrong formula misses by far more: a
dropped lm_head moves Llama-3.1-8B by 0.53B, one expert too many per token moves Mixtral by 5.6B,
DeepSeek-V3 by 0.7B per MoE layer... KV bytes per token are exact integers and must match exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from kvtheory.cli import main
from kvtheory.cluster.costmodel import cost_model, gpu, load_gpus, load_models, model
from kvtheory.cluster.model_config import (
    DTYPE_BYTES,
    config_dtypes,
    packaged_configs,
    parameter_counts,
    read_model_config,
    spec_from_config,
    with_dtypes,
)
from kvtheory.errors import InputError

CONFIGS = Path(__file__).resolve().parents[2] / "kvtheory" / "data" / "model_configs"


def config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def spec(name: str, **dtypes):
    return read_model_config(CONFIGS / f"{name}.json", **dtypes)


def status(argv: list[str]) -> int:
    """The exit status of ``kvtheory ARGV`` (argparse's own errors exit through SystemExit)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


def within_last_digit(count: int, published: str, unit: float = 1e9) -> bool:
    """|count - published| < one unit of the published figure's last digit (``published`` in billions)."""
    digits = len(published.split(".")[1]) if "." in published else 0
    return abs(count / unit - float(published)) < 10.0**-digits


# --- the published KV figures -------------------------------------------------------------------------


def test_llama_31_8b_kv_bytes_per_token_is_the_published_131072():
    assert spec("Llama-3.1-8B").kv_bytes_per_token == 131_072


def test_qwen3_30b_a3b_kv_bytes_per_token():
    # by hand from its config: 48 layers, 4 KV heads of dim 128, K and V, 2 bytes (bf16)
    m = spec("Qwen3-30B-A3B")
    assert (m.attention, m.layers, m.kv_heads, m.head_dim) == ("gqa", 48, 4, 128)
    assert m.kv_bytes_per_token == 98_304


def test_deepseek_v3_mla_kv_bytes_per_token_is_the_published_70272():
    m = spec("DeepSeek-V3")
    assert m.attention == "mla" and m.layers == 61
    assert m.kv_bytes_per_token == 70_272  # 61 layers * (512 latent + 64 rope) * 2 bytes
    assert m.kv_dtype == "bf16" and m.weight_dtype == "fp8"  # fp8 checkpoint, bf16 KV cache by default


def test_other_catalog_kv_figures_by_hand():
    assert spec("Llama-3.1-70B").kv_bytes_per_token == 327_680  # 2 * 80 * 8 * 128 * 2
    assert spec("Qwen2.5-7B").kv_bytes_per_token == 57_344  # 2 * 28 * 4 * 128 * 2
    assert spec("Qwen2.5-72B").kv_bytes_per_token == 327_680  # 2 * 80 * 8 * 128 * 2
    assert spec("Mixtral-8x7B").kv_bytes_per_token == 131_072  # 2 * 32 * 8 * 128 * 2
    assert spec("DeepSeek-V2-Lite").kv_bytes_per_token == 31_104  # 27 * (512 + 64) * 2


def test_fp8_kv_halves_the_kv_bytes_and_leaves_the_weights():
    for name, bf16 in (("Llama-3.1-8B", 131_072), ("DeepSeek-V3", 70_272), ("Qwen3-30B-A3B", 98_304)):
        base, fp8 = spec(name), spec(name, kv_dtype="fp8")
        assert fp8.kv_bytes_per_token == bf16 // 2
        assert fp8.weight_bytes == base.weight_bytes
    half = with_dtypes(model("Llama-3.1-8B"), weight_dtype="fp8")
    assert half.weight_bytes == 8_030_261_248 and half.kv_bytes_per_token == 131_072


def test_mla_caches_the_latent_not_per_head_keys_and_values():
    mla = config("DeepSeek-V3")
    as_mha = {k: v for k, v in mla.items() if k not in ("kv_lora_rank", "q_lora_rank")}
    as_mha["head_dim"] = 128
    plain = spec_from_config(as_mha, "as-mha")
    assert plain.attention == "mha" and plain.kv_bytes_per_token == 2 * 61 * 128 * 128 * 2
    assert spec("DeepSeek-V3").kv_bytes_per_token * 56 < plain.kv_bytes_per_token
    # tensor parallelism splits GQA heads but not MLA's latent, which every head shares
    assert spec("DeepSeek-V3").kv_bytes_per_token_per_gpu(8) == 70_272
    assert spec("Llama-3.1-70B").kv_bytes_per_token_per_gpu(8) == 327_680 // 8


def test_mha_is_kv_heads_equal_to_heads():
    tiny = {"hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4, "intermediate_size": 128}
    tiny["vocab_size"] = 100
    m = spec_from_config(tiny, "tiny.json")
    assert (m.attention, m.kv_heads, m.head_dim) == ("mha", 4, 16)
    assert m.kv_bytes_per_token == 2 * 3 * 4 * 16 * 2


# --- parameter counts ---------------------------------------------------------------------------------


def test_parameter_formula_on_a_tiny_dense_config_by_hand():
    tiny = {"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1}
    tiny |= {"head_dim": 4, "intermediate_size": 16, "vocab_size": 10}
    # embedding 80 + lm_head 80 + final norm 8; per layer: q 8*8, k 8*4, v 8*4, o 8*8, norms 16, MLP 3*8*16
    per_layer = 64 + 32 + 32 + 64 + 16 + 384
    assert parameter_counts(tiny)["total_params"] == 168 + 2 * per_layer == 1352
    assert parameter_counts(tiny | {"tie_word_embeddings": True})["total_params"] == 1352 - 80
    assert parameter_counts(tiny | {"model_type": "qwen2"})["total_params"] == 1352 + 2 * (8 + 4 + 4)


def test_parameter_formula_on_a_tiny_moe_config_by_hand():
    tiny = {"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2}
    tiny |= {"intermediate_size": 16, "vocab_size": 10, "num_local_experts": 4, "num_experts_per_tok": 1}
    attention_and_norms = 4 * 64 + 16
    counts = parameter_counts(tiny)
    assert counts["total_params"] == 168 + 2 * (attention_and_norms + 4 * 384 + 8 * 4)
    assert counts["active_params"] == 168 + 2 * (attention_and_norms + 1 * 384 + 8 * 4)
    # DeepSeek-style: a dense first layer, one shared expert of the MoE width
    deep = tiny | {"first_k_dense_replace": 1, "n_shared_experts": 1, "moe_intermediate_size": 4}
    counts = parameter_counts(deep)
    assert counts["moe_layers"] == 1
    assert counts["total_params"] == 168 + 2 * attention_and_norms + 384 + (4 * 96 + 96 + 32)


@pytest.mark.parametrize(
    ("name", "total", "active"),
    [
        ("Llama-3.1-8B", "8.03", "8.03"),  # Hugging Face (safetensors count): 8.03B (8B on the card)
        ("Llama-3.1-70B", "70.6", "70.6"),  # Hugging Face (safetensors count): 70.6B
        ("Qwen2.5-7B", "7.61", "7.61"),  # Qwen card: 7.61B
        ("Qwen2.5-72B", "72.7", "72.7"),  # Qwen card: 72.7B
        ("Mixtral-8x7B", "46.7", "12.9"),  # Mistral: 46.7B total, 12.9B per token
        ("Qwen3-30B-A3B", "30.5", "3.3"),  # Qwen card: 30.5B total, 3.3B activated
        ("DeepSeek-V3", "671", None),  # DeepSeek card: 671B total
        ("DeepSeek-V2-Lite", "15.7", None),  # DeepSeek card: 15.7B total
    ],
)
def test_parameter_totals_match_the_published_figures(name, total, active):
    m = spec(name)
    assert within_last_digit(m.total_params, total), m.total_params
    if active is not None:
        assert within_last_digit(m.active_params, active), m.active_params
    assert (m.active_params == m.total_params) == (m.experts == 0)


def test_deepseek_activated_parameters_leave_out_the_input_embedding():
    # DeepSeek-V3's README_WEIGHTS.md: 36.6B activated, including the 0.9B output head (37B on the card);
    # DeepSeek-V2-Lite's card: 2.4B activated. Both without the input embedding (vocab * hidden).
    v3 = spec("DeepSeek-V3")
    assert within_last_digit(v3.active_params - 129_280 * 7168, "36.6")
    assert within_last_digit(v3.active_params, "37")
    lite = spec("DeepSeek-V2-Lite")
    assert within_last_digit(lite.active_params - 102_400 * 2048, "2.4")


def test_qwen3_non_embedding_parameters_match_the_card():
    m = spec("Qwen3-30B-A3B")
    assert within_last_digit(m.total_params - 2 * 151_936 * 2048, "29.9")  # card: 29.9B non-embedding


def test_moe_weights_are_all_resident_but_decode_reads_the_active_ones():
    m = spec("Mixtral-8x7B")
    assert m.experts == 8 and m.experts_per_token == 2
    assert m.weight_bytes == m.total_params * 2
    cm = cost_model(gpu("H100-SXM"), m, tp=2)
    assert cm.decode_base == pytest.approx(m.active_params * 2 / 2 / 3.35e12)


def test_fp8_weights_use_the_fp8_peak_and_halve_the_weight_bytes():
    m = spec("DeepSeek-V3")
    assert m.weight_bytes == m.total_params  # one byte per parameter
    cm = cost_model(gpu("H200"), m, tp=8)
    assert cm.a_miss == pytest.approx(2 * m.active_params / (8 * 1978.9e12 * 0.5))
    bf16 = with_dtypes(m, weight_dtype="bf16")  # 1.34 TB of bf16 weights: 16 H200s
    assert cost_model(gpu("H200"), bf16, tp=16).a_miss == pytest.approx(2 * m.active_params / (16 * 989.4e12 * 0.5))
    with pytest.raises(InputError, match="does not fit"):
        cost_model(gpu("H200"), bf16, tp=8)
    # no fp8 tensor cores on the A100: the bf16 peak
    small = with_dtypes(spec("Llama-3.1-8B"), weight_dtype="fp8")
    assert cost_model(gpu("A100-80G"), small).a_miss == pytest.approx(2 * small.active_params / (312e12 * 0.5))


# --- dtypes -------------------------------------------------------------------------------------------


def test_dtypes_from_the_config_and_their_names():
    assert config_dtypes({"torch_dtype": "bfloat16"}) == ("bf16", "bf16")
    assert config_dtypes({"torch_dtype": "float16"}) == ("fp16", "fp16")
    assert config_dtypes({"torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fp8"}}) == (
        "fp8",
        "bf16",
    )
    assert DTYPE_BYTES == {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1}
    with pytest.raises(InputError, match="unknown"):
        config_dtypes({"torch_dtype": "int4"})
    with pytest.raises(InputError, match="quantization"):
        config_dtypes({"torch_dtype": "bfloat16", "quantization_config": {"quant_method": "awq"}})
    with pytest.raises(InputError, match="unknown KV dtype"):
        spec("Llama-3.1-8B", kv_dtype="int3")


# --- the catalog --------------------------------------------------------------------------------------


def test_every_shipped_config_parses_with_its_hugging_face_source():
    shipped = packaged_configs()
    assert len(shipped) == 8
    for filename, raw in shipped.items():
        m = read_model_config(CONFIGS / filename)
        assert m.name == raw["_name"] == Path(filename).stem
        assert m.source.startswith("https://huggingface.co/") and m.source.endswith("/config.json")
        assert load_models()[m.name.lower()] == m


def test_catalog_covers_dense_moe_and_mla():
    models = load_models()
    kinds = {m.name: (m.attention, m.experts > 0) for m in models.values()}
    assert kinds["Llama-3.1-8B"] == kinds["Qwen2.5-72B"] == ("gqa", False)
    assert kinds["Mixtral-8x7B"] == kinds["Qwen3-30B-A3B"] == ("gqa", True)
    assert kinds["DeepSeek-V2-Lite"] == kinds["DeepSeek-V3"] == ("mla", True)


def test_new_gpu_rows_quote_their_sources():
    g = load_gpus()
    assert (g["mi300x"].peak_bf16_flops, g["mi300x"].peak_fp8_flops) == (1307.4e12, 2614.9e12)
    assert (g["mi300x"].hbm_bytes, g["mi300x"].hbm_bandwidth) == (192e9, 5.3e12)
    assert (g["b200"].peak_bf16_flops, g["b200"].peak_fp8_flops, g["b200"].hbm_bytes) == (2.25e15, 4.5e15, 180e9)
    assert (g["h20"].peak_bf16_flops, g["h20"].hbm_bytes, g["h20"].hbm_bandwidth) == (148e12, 96e9, 4.0e12)
    assert (g["rtx-4090"].peak_bf16_flops, g["rtx-4090"].hbm_bytes, g["rtx-4090"].hbm_bandwidth) == (
        165.2e12,
        24e9,
        1008e9,
    )
    for row in g.values():
        assert row.source.startswith("https://") and row.notes, row.name
        assert row.peak_fp8_flops == 0 or row.peak_fp8_flops >= row.peak_bf16_flops


# --- malformed configs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 9}', "lacks 'hidden_size'"),
        ('{"hidden_size": 8, "num_hidden_layers": -2, "num_attention_heads": 2, "vocab_size": 9}', "positive"),
        ('{"hidden_size": 8, "num_hidden_layers": true, "num_attention_heads": 2, "vocab_size": 9}', "positive"),
        ('{"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 9}', "intermediate"),
        (
            '{"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 3, "num_key_value_heads": 2,'
            ' "head_dim": 4, "intermediate_size": 8, "vocab_size": 9}',
            "multiple",
        ),
        (
            '{"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 3, "intermediate_size": 8,'
            ' "vocab_size": 9}',
            "head_dim",
        ),
        (
            '{"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 8,'
            ' "vocab_size": 9, "num_local_experts": 2, "num_experts_per_tok": 3}',
            "exceeds",
        ),
        (
            '{"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 8,'
            ' "vocab_size": 9, "kv_lora_rank": 4, "qk_rope_head_dim": 2, "v_head_dim": 4}',
            "qk_nope_head_dim",
        ),
        (
            '{"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 8,'
            ' "vocab_size": 9, "torch_dtype": "int8"}',
            "unknown",
        ),
    ],
)
def test_malformed_configs_are_input_errors(tmp_path, text, message):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_model_config(path)


def test_unreadable_config_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        read_model_config(tmp_path / "missing.json")


# --- the command line ---------------------------------------------------------------------------------


def test_costmodel_reads_a_model_config(capsys):
    path = str(CONFIGS / "DeepSeek-V3.json")
    assert main(["costmodel", "--gpu", "H200", "--model-config", path, "--tp", "8", "--json"]) == 0
    record = orjson.loads(capsys.readouterr().out)
    assert record["kv_bytes_per_token"] == 70_272 and record["attention"] == "mla"
    assert record["weight_dtype"] == "fp8" and record["kv_dtype"] == "bf16"
    args = ["costmodel", "--gpu", "H200", "--model-config", path, "--tp", "8", "--kv-dtype", "fp8", "--json"]
    assert main(args) == 0
    assert orjson.loads(capsys.readouterr().out)["kv_bytes_per_token"] == 35_136
    assert main(["costmodel", "--gpu", "H200", "--model", "Qwen3-30B-A3B", "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["kv_bytes_per_token"] == 98_304


@pytest.mark.parametrize(
    "extra",
    [
        ["--model-config", "broken.json"],
        ["--model-config", "missing.json"],
        ["--model-config", "ok.json", "--model", "Llama-3.1-8B"],
        ["--model", "Llama-3.1-8B", "--kv-dtype", "int4"],
        ["--model", "DeepSeek-V3"],  # 671 GB of weights on one H200
        ["--model-config", "ok.json", "--weight-dtype", "fp4"],
    ],
)
def test_costmodel_config_errors_are_one_line_exit_2(tmp_path, monkeypatch, capsys, extra):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.json").write_text('{"hidden_size": 8}')
    (tmp_path / "ok.json").write_text((CONFIGS / "Llama-3.1-8B.json").read_text())
    assert status(["costmodel", "--gpu", "H200", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err


def test_route_takes_a_model_config(tmp_path, capsys):
    workload = tmp_path / "w.jsonl"
    workload.write_text('{"tokens":[1,2,3]}\n{"tokens":[1,2,4]}\n{"tokens":[5,6]}\n')
    args = ["route", "--workload", str(workload), "--workers", "2", "--router", "round-robin", "--eviction", "lru"]
    args += ["--rate", "inf"]
    config = str(CONFIGS / "Qwen3-30B-A3B.json")
    assert main([*args, "--gpu", "H200", "--model-config", config, "--kv-dtype", "fp8", "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)
    assert status([*args, "--budget", "8", "--kv-dtype", "fp8"]) == 2
    assert "\n" not in capsys.readouterr().err.strip()
