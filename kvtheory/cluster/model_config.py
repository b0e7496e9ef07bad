"""A Hugging Face ``config.json`` read into the :class:`~kvtheory.cluster.costmodel.ModelSpec` of the GPU cost
model (docs/cluster.md §Models from config.json).

Fields read (the config's own names): ``hidden_size`` h, ``num_hidden_layers`` L, ``num_attention_heads`` H,
``num_key_value_heads`` H_kv (default H), ``head_dim`` d (default h / H), ``intermediate_size`` I,
``vocab_size`` V, ``tie_word_embeddings`` (default false), ``attention_bias``; for a mixture of experts
``num_local_experts`` / ``num_experts`` / ``n_routed_experts`` E, ``num_experts_per_tok`` k,
``moe_intermediate_size`` I_e (default I), ``n_shared_experts`` / ``shared_expert_intermediate_size``,
``first_k_dense_replace``, ``moe_layer_freq``, ``decoder_sparse_step``, ``mlp_only_layers``, ``topk_method``;
for multi-head latent attention (MLA) ``kv_lora_rank`` r_kv, ``q_lora_rank`` r_q, ``qk_nope_head_dim``
d_nope, ``qk_rope_head_dim`` d_rope, ``v_head_dim`` d_v; the dtypes ``torch_dtype`` (or ``dtype``) and
``quantization_config.quant_method``. Keys starting with ``_`` are kvtheory's: ``_name``, ``_source``,
``_notes``. A multimodal config's language model is read from its ``text_config``; a field given as null
takes its default.

KV bytes per token (K and V of every layer, b_kv bytes per element):

- GQA and MHA (MHA: H_kv = H): 2 * L * H_kv * d * b_kv;
- MLA: L * (r_kv + d_rope) * b_kv: the cache holds the compressed latent and the shared rope key only.

Parameters (every linear map a matrix without bias unless said; RMSNorm weights one vector):

- embedding V*h, lm_head V*h unless tied, final norm h; per layer two norms 2h;
- GQA/MHA attention: h*H*d (q) + 2*h*H_kv*d (k, v) + H*d*h (o); q/k/v biases H*d + 2*H_kv*d when
  ``attention_bias`` or the model type is qwen2 / qwen2_moe (which always have them), o bias h when
  ``attention_bias``; Qwen3's per-head q and k norms 2*d;
- MLA attention: queries h*H*(d_nope + d_rope) without q_lora_rank, else h*r_q + r_q (its norm) +
  r_q*H*(d_nope + d_rope); h*(r_kv + d_rope) (kv_a_proj_with_mqa) + r_kv (its norm) + r_kv*H*(d_nope + d_v)
  (kv_b_proj) + H*d_v*h (o);
- dense MLP (SwiGLU: gate, up, down) 3*h*I;
- MoE layer: E*3*h*I_e (routed experts) + h*E (router) + shared experts (DeepSeek: n_shared*3*h*I_e;
  Qwen2-MoE: 3*h*I_s + h for its gate) + E for DeepSeek-V3's routing bias (``topk_method`` noaux_tc);
- layer i is MoE iff i >= first_k_dense_replace and i % moe_layer_freq == 0 (DeepSeek), or
  (i + 1) % decoder_sparse_step == 0 and i not in mlp_only_layers (Qwen); every layer for Mixtral.

Active parameters (per token, for FLOPs and the decode's weight reads) = total - (E - k)*3*h*I_e per MoE
layer: every shared part plus k routed experts. The input embedding counts in both, as Meta, Mistral and
Qwen count (DeepSeek's published "activated" figures leave it out: 37B for DeepSeek-V3 is 36.6B + 0.9B).
DeepSeek-V3's multi-token-prediction layer (``num_nextn_predict_layers``) is not counted, as in its
published 671B.

Dtypes: the weights are ``quantization_config.quant_method`` fp8 if so, else ``torch_dtype``; the KV cache is
``torch_dtype`` (what vLLM and SGLang allocate by default). Both can be overridden (bf16, fp16, fp32, fp8).
"""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources
from pathlib import Path

from kvtheory.errors import InputError

#: bytes of one element, by every name accepted (canonical names first)
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1}
_ALIASES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "float8": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
}

CONFIG_DIR = "model_configs"


def dtype_name(text: object, what: str = "dtype") -> str:
    """The canonical name (bf16, fp16, fp32, fp8) of a dtype name; InputError for any other."""
    key = str(text).strip().lower().removeprefix("torch.")
    key = _ALIASES.get(key, key)
    if key not in DTYPE_BYTES:
        raise InputError(f"unknown {what} {str(text)[:40]!r}; known: {', '.join(DTYPE_BYTES)}")
    return key


def _positive(config: dict, key: str, origin: str, default: int | None = None, *, zero: bool = False) -> int:
    value = config.get(key)
    if value is None:  # absent, or null as some configs write it
        value = default
    if value is None:
        raise InputError(f"{origin}: config lacks {key!r}")
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        kind = "a non-negative" if zero else "a positive"
        raise InputError(f"{origin}: {key!r} must be {kind} integer, got {value!r}")
    return value


def _first(config: dict, keys: tuple[str, ...]) -> str | None:
    return next((key for key in keys if config.get(key) is not None), None)


def _moe_layers(config: dict, layers: int, origin: str) -> int:
    """How many of the ``layers`` layers are mixtures of experts."""
    first_dense = _positive(config, "first_k_dense_replace", origin, 0, zero=True)
    freq = _positive(config, "moe_layer_freq", origin, 1)
    step = _positive(config, "decoder_sparse_step", origin, 1)
    dense_only = config.get("mlp_only_layers") or []
    if not isinstance(dense_only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in dense_only):
        raise InputError(f"{origin}: 'mlp_only_layers' must be a list of layer indices")
    return sum(
        1
        for i in range(layers)
        if i >= first_dense and i % freq == 0 and (i + 1) % step == 0 and i not in set(dense_only)
    )


def parameter_counts(config: dict, origin: str = "config") -> dict:
    """The shape of the model of ``config`` (a parsed config.json) and its total and active parameters,
    by the formulas of this module's docstring; InputError naming the field for anything missing or bad."""
    if not isinstance(config, dict):
        raise InputError(f"{origin}: a config.json must hold a JSON object, got {type(config).__name__}")
    if "hidden_size" not in config and isinstance(config.get("text_config"), dict):
        config = config["text_config"]  # a multimodal model's language model
    h = _positive(config, "hidden_size", origin)
    layers = _positive(config, "num_hidden_layers", origin)
    heads = _positive(config, "num_attention_heads", origin)
    vocab = _positive(config, "vocab_size", origin)
    model_type = str(config.get("model_type", ""))
    tied = config.get("tie_word_embeddings", False)
    if not isinstance(tied, bool):
        raise InputError(f"{origin}: 'tie_word_embeddings' must be true or false, got {tied!r}")
    bias = config.get("attention_bias", False)
    if not isinstance(bias, bool):
        raise InputError(f"{origin}: 'attention_bias' must be true or false, got {bias!r}")

    mla = config.get("kv_lora_rank") is not None
    if mla:
        kv_lora = _positive(config, "kv_lora_rank", origin)
        rope = _positive(config, "qk_rope_head_dim", origin)
        nope = _positive(config, "qk_nope_head_dim", origin)
        v_dim = _positive(config, "v_head_dim", origin)
        q_lora = config.get("q_lora_rank")
        if q_lora is None:
            queries = h * heads * (nope + rope)
        else:
            q_lora = _positive(config, "q_lora_rank", origin)
            queries = h * q_lora + q_lora + q_lora * heads * (nope + rope)
        attention = queries + h * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v_dim) + heads * v_dim * h
        kv_heads, head_dim, kind = heads, nope + rope, "mla"
    else:
        kv_lora = rope = 0
        kv_heads = _positive(config, "num_key_value_heads", origin, heads)
        if heads % kv_heads:
            raise InputError(
                f"{origin}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}"
            )
        if config.get("head_dim") is None and h % heads:
            raise InputError(
                f"{origin}: config lacks 'head_dim' and hidden_size {h} is not a multiple of {heads} heads"
            )
        head_dim = _positive(config, "head_dim", origin, h // heads)
        attention = h * heads * head_dim + 2 * h * kv_heads * head_dim + heads * head_dim * h
        if bias or model_type in ("qwen2", "qwen2_moe"):
            attention += heads * head_dim + 2 * kv_heads * head_dim
        if bias:
            attention += h
        if model_type in ("qwen3", "qwen3_moe"):
            attention += 2 * head_dim
        kind = "mha" if kv_heads == heads else "gqa"

    experts_key = _first(config, ("num_local_experts", "num_experts", "n_routed_experts"))
    experts = _positive(config, experts_key, origin) if experts_key else 0
    moe_layers = _moe_layers(config, layers, origin) if experts else 0
    dense_layers = layers - moe_layers
    intermediate = _positive(config, "intermediate_size", origin) if dense_layers or not experts else 0
    total_mlp = active_mlp = dense_layers * 3 * h * intermediate
    per_token = 0
    if experts:
        per_token = _positive(config, "num_experts_per_tok", origin)
        if per_token > experts:
            raise InputError(f"{origin}: num_experts_per_tok {per_token} exceeds the {experts} experts")
        expert_size = _positive(config, "moe_intermediate_size", origin, config.get("intermediate_size"))
        one_expert = 3 * h * expert_size
        shared = _positive(config, "n_shared_experts", origin, 0, zero=True) * one_expert
        if config.get("shared_expert_intermediate_size"):
            shared += 3 * h * _positive(config, "shared_expert_intermediate_size", origin) + h
        router = h * experts + (experts if config.get("topk_method") == "noaux_tc" else 0)
        total_mlp += moe_layers * (experts * one_expert + shared + router)
        active_mlp += moe_layers * (per_token * one_expert + shared + router)

    embeddings = vocab * h * (1 if tied else 2) + h  # embedding, lm_head unless tied, final norm
    per_layer = attention + 2 * h
    return {
        "attention": kind,
        "hidden_size": h,
        "layers": layers,
        "attention_heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "kv_lora_rank": kv_lora,
        "qk_rope_head_dim": rope,
        "experts": experts,
        "experts_per_token": per_token,
        "moe_layers": moe_layers,
        "vocab_size": vocab,
        "total_params": embeddings + layers * per_layer + total_mlp,
        "active_params": embeddings + layers * per_layer + active_mlp,
    }


def config_dtypes(config: dict, origin: str = "config") -> tuple[str, str]:
    """(weight dtype, KV dtype) of a config: fp8 weights when ``quantization_config`` says so, else
    ``torch_dtype`` (or ``dtype``, default bf16); the KV cache in ``torch_dtype``."""
    base = config.get("torch_dtype") or config.get("dtype") or "bf16"
    kv = dtype_name(base, f"torch_dtype in {origin}")
    weights = kv
    quant = config.get("quantization_config")
    if quant is not None:
        method = quant.get("quant_method") if isinstance(quant, dict) else None
        if method != "fp8":
            raise InputError(f"{origin}: unsupported quantization_config (quant_method {method!r}; fp8 is known)")
        weights = "fp8"
    return weights, kv


def spec_from_config(
    config: dict,
    origin: str,
    *,
    name: str | None = None,
    weight_dtype: str | None = None,
    kv_dtype: str | None = None,
):
    """The :class:`ModelSpec` of a parsed config.json; dtypes from the config unless given."""
    from kvtheory.cluster.costmodel import ModelSpec

    shape = parameter_counts(config, origin)
    weights, kv = config_dtypes(config, origin)
    weights = dtype_name(weight_dtype, "weight dtype") if weight_dtype else weights
    kv = dtype_name(kv_dtype, "KV dtype") if kv_dtype else kv
    label = name or config.get("_name") or Path(origin).stem
    return ModelSpec(
        name=str(label),
        total_params=shape["total_params"],
        active_params=shape["active_params"],
        layers=shape["layers"],
        attention_heads=shape["attention_heads"],
        kv_heads=shape["kv_heads"],
        head_dim=shape["head_dim"],
        dtype_bytes=DTYPE_BYTES[weights],
        source=str(config.get("_source", origin)),
        notes=str(config.get("_notes", "")),
        attention=shape["attention"],
        kv_lora_rank=shape["kv_lora_rank"],
        qk_rope_head_dim=shape["qk_rope_head_dim"],
        kv_dtype_bytes=DTYPE_BYTES[kv],
        experts=shape["experts"],
        experts_per_token=shape["experts_per_token"],
        weight_dtype=weights,
        kv_dtype=kv,
    )


def _parse(text: str, origin: str) -> dict:
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{origin}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(config, dict):
        raise InputError(f"{origin}: a config.json must hold a JSON object, got {type(config).__name__}")
    return config


def read_model_config(path: str | Path, *, weight_dtype: str | None = None, kv_dtype: str | None = None):
    """The :class:`ModelSpec` of the config.json at ``path`` (named by its ``_name`` or the file's stem)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    return spec_from_config(_parse(text, str(path)), str(path), weight_dtype=weight_dtype, kv_dtype=kv_dtype)


def packaged_configs() -> dict[str, dict]:
    """The shipped config.json files of ``kvtheory/data/model_configs``, by file name."""
    folder = resources.files("kvtheory").joinpath("data", CONFIG_DIR)
    found = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            found[entry.name] = _parse(entry.read_text(encoding="utf-8"), f"kvtheory/data/{CONFIG_DIR}/{entry.name}")
    return found


def packaged_models() -> dict:
    """The model catalog: the spec of every shipped config.json, keyed by lower-cased name."""
    specs = {}
    for filename, config in packaged_configs().items():
        spec = spec_from_config(config, f"kvtheory/data/{CONFIG_DIR}/{filename}")
        specs[spec.name.lower()] = spec
    return specs


def with_dtypes(spec, *, weight_dtype: str | None = None, kv_dtype: str | None = None):
    """``spec`` with its weight and / or KV dtype replaced (None: kept)."""
    changes = {}
    if weight_dtype:
        name = dtype_name(weight_dtype, "weight dtype")
        changes.update(weight_dtype=name, dtype_bytes=DTYPE_BYTES[name])
    if kv_dtype:
        name = dtype_name(kv_dtype, "KV dtype")
        changes.update(kv_dtype=name, kv_dtype_bytes=DTYPE_BYTES[name])
    return replace(spec, **changes) if changes else spec
