"""GPU cost model of docs/cluster.md §GPU cost model: a_miss, a_cached, decode time and the budget B
from hardware facts.

The facts live in data files, each with its public source: ``kvtheory/data/gpus.csv`` (one row per GPU) and
the models' Hugging Face ``config.json`` files in ``kvtheory/data/model_configs/``, read by
:mod:`kvtheory.cluster.model_config`. Users can pass their own GPU or model CSV (its rows are added, and
replace packaged rows of the same name) or any config.json. Everything here is a plain function over two
frozen dataclasses.

Per worker of ``tp`` GPUs (tensor parallel, weights and KV heads split evenly; KV heads replicated
when tp exceeds them), with MFU ``mfu`` and memory-bandwidth utilisation ``mbu``:

- prefill FLOPs per token = 2 * active_params + 4 * layers * attention_heads * head_dim * context
  (the attention term is zero unless a mean attention ``context`` is given; for MLA head_dim is the
  query/key head dim qk_nope + qk_rope);
  a_miss = prefill FLOPs per token / (tp * peak * mfu), where peak is the GPU's dense fp8 peak for fp8
  weights (when the table gives one) and its dense bf16 peak otherwise;
- a_cached = KV bytes per token per GPU / (hbm_bandwidth * mbu): a cached token costs no matmul, but its
  K and V are read once by the attention of the prefill;
- decode seconds per output token at context c = (active weight bytes / tp + c * KV bytes per token
  per GPU) / (hbm_bandwidth * mbu): one sequence per step reads the weights (for a mixture of experts,
  only the routed experts) and the KV cache of its context;
- decode_compute = 2 * active_params / (tp * peak * mfu): the compute time of one decoded
  token. A decode iteration of n sequences takes max(n * decode_compute, its memory time)
  (:func:`decode_iteration_seconds`); one sequence is memory-bound on every packaged GPU and model;
- KV bytes per token = 2 * layers * kv_heads * head_dim * kv_dtype_bytes (K and V, all layers; GQA, MHA);
  for MLA layers * (kv_lora_rank + qk_rope_head_dim) * kv_dtype_bytes (the latent and the rope key);
- weight bytes = total_params * dtype_bytes (every expert of a mixture of experts is resident);
- B = floor((hbm_bytes * mem_fraction - weight bytes / tp) / KV bytes per token per GPU): an
  InputError (saying by how much) when the weights do not fit.

Spec-sheet "GB" are read as 10^9 bytes; the usable memory nvidia-smi reports is a few percent larger,
so budgets here are slightly conservative.
"""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass, fields
from importlib import resources
from pathlib import Path

from kvtheory.errors import InputError

DEFAULT_MEM_FRACTION = 0.9
DEFAULT_MFU = 0.5
DEFAULT_MBU = 1.0


@dataclass(frozen=True)
class GPU:
    """One accelerator: dense bf16 peak (FLOP/s), memory (bytes), memory bandwidth (bytes/s) and the dense
    fp8 peak (FLOP/s; 0 when the GPU has no fp8 tensor cores or the table gives none)."""

    name: str
    peak_bf16_flops: float
    hbm_bytes: float
    hbm_bandwidth: float
    source: str = ""
    notes: str = ""
    peak_fp8_flops: float = 0.0

    def peak_flops(self, dtype: str) -> float:
        """The dense peak for weights of ``dtype``: the fp8 peak for fp8 (if known), else the bf16 one."""
        return self.peak_fp8_flops if dtype == "fp8" and self.peak_fp8_flops > 0 else self.peak_bf16_flops


@dataclass(frozen=True)
class ModelSpec:
    """One LLM: parameter counts, attention shape and the bytes of one weight (``dtype_bytes``) and one KV
    element (``kv_dtype_bytes``; 0: the same as the weights). ``attention`` is gqa, mha or mla; an MLA model
    caches ``kv_lora_rank + qk_rope_head_dim`` elements per layer; ``experts`` (0: dense) and
    ``experts_per_token`` describe a mixture of experts (its counts are already in the parameters)."""

    name: str
    total_params: int
    active_params: int
    layers: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    dtype_bytes: int
    source: str = ""
    notes: str = ""
    attention: str = "gqa"
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    kv_dtype_bytes: int = 0
    experts: int = 0
    experts_per_token: int = 0
    weight_dtype: str = ""
    kv_dtype: str = ""

    @property
    def kv_element_bytes(self) -> int:
        """Bytes of one cached K or V element (the weights' when not set)."""
        return self.kv_dtype_bytes or self.dtype_bytes

    @property
    def weight_bytes(self) -> int:
        """Bytes of all resident weights (every expert of a mixture of experts)."""
        return self.total_params * self.dtype_bytes

    @property
    def kv_bytes_per_token(self) -> int:
        """GQA / MHA: 2 * layers * kv_heads * head_dim * kv bytes, the K and V of one token in every layer;
        MLA: layers * (kv_lora_rank + qk_rope_head_dim) * kv bytes, the latent and the shared rope key."""
        if self.attention == "mla":
            return self.layers * (self.kv_lora_rank + self.qk_rope_head_dim) * self.kv_element_bytes
        return 2 * self.layers * self.kv_heads * self.head_dim * self.kv_element_bytes

    def kv_bytes_per_token_per_gpu(self, tp: int) -> int:
        """KV bytes one GPU of a tp-way tensor-parallel worker holds per token (heads replicated if tp > heads;
        MLA's latent is shared by every head, so each GPU holds all of it)."""
        if self.attention == "mla":
            return self.kv_bytes_per_token
        return 2 * self.layers * math.ceil(self.kv_heads / tp) * self.head_dim * self.kv_element_bytes


_GPU_COLUMNS = {"name": str, "peak_bf16_flops": float, "hbm_bytes": float, "hbm_bandwidth": float}
#: columns a table may leave out, or leave empty in a row (then the field keeps its default)
_OPTIONAL_COLUMNS = {"peak_fp8_flops": float}
_MODEL_COLUMNS = {
    "name": str,
    "total_params": int,
    "active_params": int,
    "layers": int,
    "attention_heads": int,
    "kv_heads": int,
    "head_dim": int,
    "dtype_bytes": int,
}


def _number(text: str, kind, where: str, column: str):
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise InputError(f"{where}: column {column!r} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}: column {column!r} must be positive, got {text!r}")
    if kind is int:
        if value != int(value):
            raise InputError(f"{where}: column {column!r} must be an integer, got {text!r}")
        return int(value)
    return value


def _read_rows(text: str, origin: str, columns: dict, cls) -> dict[str, object]:
    reader = csv.DictReader(line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    header = reader.fieldnames or []
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(f"{origin}: missing column(s) {', '.join(missing)}; needs {', '.join(columns)}, source")
    allowed = {f.name for f in fields(cls)}
    rows: dict[str, object] = {}
    for number, row in enumerate(reader, start=2):
        where = f"{origin}:{number}"
        name = (row.get("name") or "").strip()
        if not name:
            raise InputError(f"{where}: empty name")
        values = {"name": name}
        for column, kind in columns.items():
            if column != "name":
                values[column] = _number((row.get(column) or "").strip(), kind, where, column)
        for column, kind in _OPTIONAL_COLUMNS.items():
            if column in allowed and (row.get(column) or "").strip():
                values[column] = _number(row[column].strip(), kind, where, column)
        for column in ("source", "notes"):
            if column in allowed and row.get(column):
                values[column] = row[column].strip()
        item = cls(**values)
        if isinstance(item, ModelSpec) and item.active_params > item.total_params:
            raise InputError(f"{where}: active_params exceeds total_params")
        rows[name.lower()] = item
    if not rows:
        raise InputError(f"{origin}: no rows")
    return rows


def _load(filename: str, extra: str | Path | None, columns: dict, cls) -> dict[str, object]:
    text = resources.files("kvtheory").joinpath("data", filename).read_text()
    table = _read_rows(text, f"kvtheory/data/{filename}", columns, cls)
    if extra is not None:
        path = Path(extra)
        try:
            user = path.read_text()
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror})") from None
        table.update(_read_rows(user, str(path), columns, cls))
    return table


def load_gpus(extra: str | Path | None = None) -> dict[str, GPU]:
    """The packaged GPU table (keys lower-cased), plus the rows of the user's CSV ``extra`` if given."""
    return _load("gpus.csv", extra, _GPU_COLUMNS, GPU)  # type: ignore[return-value]


def load_models(extra: str | Path | None = None) -> dict[str, ModelSpec]:
    """The packaged models (keys lower-cased): one per config.json of ``kvtheory/data/model_configs``, plus
    the rows of the user's CSV ``extra`` if given (columns: docs/cluster.md §Adding a GPU or a model)."""
    from kvtheory.cluster.model_config import packaged_models

    table = packaged_models()
    if extra is not None:
        path = Path(extra)
        try:
            user = path.read_text()
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror})") from None
        table.update(_read_rows(user, str(path), _MODEL_COLUMNS, ModelSpec))
    return table  # type: ignore[return-value]


def _lookup(table: dict, name: str, what: str):
    try:
        return table[name.strip().lower()]
    except KeyError:
        known = ", ".join(item.name for item in table.values())
        raise InputError(f"unknown {what} {name!r}; known: {known} (or pass your own CSV)") from None


def gpu(name: str, extra: str | Path | None = None) -> GPU:
    """The GPU called ``name`` (case-insensitive)."""
    return _lookup(load_gpus(extra), name, "GPU")


def model(name: str, extra: str | Path | None = None) -> ModelSpec:
    """The model called ``name`` (case-insensitive)."""
    return _lookup(load_models(extra), name, "model")


@dataclass(frozen=True)
class CostModel:
    """Derived per-worker costs of ``model`` on ``tp`` x ``gpu`` (seconds, bytes, tokens)."""

    gpu: str
    model: str
    tp: int
    mem_fraction: float
    mfu: float
    mbu: float
    context: int
    a_miss: float
    a_cached: float
    decode_base: float
    decode_per_context_token: float
    decode_compute: float
    kv_bytes_per_token: int
    kv_bytes_per_token_per_gpu: int
    weight_bytes: int
    budget: int

    def decode_per_output_token(self, context: int | None = None) -> float:
        """Seconds of one decode step at ``context`` tokens (default: the model's reference context)."""
        c = self.context if context is None else context
        return self.decode_base + self.decode_per_context_token * c

    def to_dict(self) -> dict:
        record = asdict(self)
        record["decode_per_output_token"] = self.decode_per_output_token()
        return record


def _check_fraction(value: float, what: str) -> None:
    if not (isinstance(value, (int, float)) and 0.0 < value <= 1.0):
        raise InputError(f"{what} must lie in (0, 1], got {value}")


def cost_model(
    gpu_spec: GPU,
    model_spec: ModelSpec,
    *,
    mem_fraction: float = DEFAULT_MEM_FRACTION,
    mfu: float = DEFAULT_MFU,
    mbu: float = DEFAULT_MBU,
    tp: int = 1,
    context: int = 0,
) -> CostModel:
    """The cost model of one worker; InputError when the weights do not fit (saying by how much).

    >>> m = cost_model(gpu("L40"), model("Llama-3.1-8B"))
    >>> m.kv_bytes_per_token, m.budget
    (131072, 207057)
    """
    _check_fraction(mem_fraction, "mem-fraction")
    _check_fraction(mfu, "mfu")
    _check_fraction(mbu, "mbu")
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise InputError(f"tp must be a positive integer, got {tp}")
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise InputError(f"context must be a non-negative integer, got {context}")
    m, g = model_spec, gpu_spec
    kv_gpu = m.kv_bytes_per_token_per_gpu(tp)
    free = g.hbm_bytes * mem_fraction - m.weight_bytes / tp
    budget = math.floor(free / kv_gpu) if free > 0 else 0
    if budget < 1:
        need = m.weight_bytes / tp / 1e9
        have = g.hbm_bytes * mem_fraction / 1e9
        fits = [t for t in (2, 4, 8, 16) if t > tp and g.hbm_bytes * mem_fraction - m.weight_bytes / t >= kv_gpu]
        hint = f"; try --tp {fits[0]}" if fits else ""
        raise InputError(
            f"{m.name} does not fit on {tp} x {g.name} at mem-fraction {mem_fraction:g}: its weights need "
            f"{need:.2f} GB per GPU but {have:.2f} GB is available, {need - have + kv_gpu / 1e9:.2f} GB short "
            f"(counting one token of KV cache){hint}"
        )
    flops = 2.0 * m.active_params + 4.0 * m.layers * m.attention_heads * m.head_dim * context
    peak = g.peak_flops(m.weight_dtype or ("fp8" if m.dtype_bytes == 1 else "bf16"))
    bandwidth = g.hbm_bandwidth * mbu
    return CostModel(
        gpu=g.name,
        model=m.name,
        tp=tp,
        mem_fraction=float(mem_fraction),
        mfu=float(mfu),
        mbu=float(mbu),
        context=context,
        a_miss=flops / (tp * peak * mfu),
        a_cached=kv_gpu / bandwidth,
        decode_base=m.active_params * m.dtype_bytes / tp / bandwidth,
        decode_per_context_token=kv_gpu / bandwidth,
        decode_compute=2.0 * m.active_params / (tp * peak * mfu),
        kv_bytes_per_token=m.kv_bytes_per_token,
        kv_bytes_per_token_per_gpu=kv_gpu,
        weight_bytes=m.weight_bytes,
        budget=int(budget),
    )


def cost_model_by_name(
    gpu_name: str,
    model_name: str,
    *,
    gpus_file: str | Path | None = None,
    models_file: str | Path | None = None,
    **options,
) -> CostModel:
    """:func:`cost_model` with the GPU and the model looked up by name (user CSVs optional)."""
    return cost_model(gpu(gpu_name, gpus_file), model(model_name, models_file), **options)


def decode_iteration_seconds(
    decode_base: float, decode_per_context: float, decode_compute: float, sequences: int, contexts: int, steps: int
) -> float:
    """Seconds of ``steps`` consecutive decode iterations of the same ``sequences`` sequences whose
    contexts sum to ``contexts`` tokens at the first step (each step adds one token to each context).

    Iteration s (s = 0 .. steps - 1) is the roofline maximum of its compute time and its memory time:

        max(n * decode_compute, decode_base + decode_per_context * (C + n * s)),

    n = ``sequences``, C = ``contexts``: the n tokens' FLOPs at peak x MFU against reading the weights once
    and every sequence's KV over HBM. The memory time grows with s, so the compute-bound iterations (if
    any) come first; the rest sum in closed form. With one sequence and a memory-bound first step this is
    exactly ``steps * decode_base + decode_per_context * (steps * C + steps * (steps - 1) // 2)``, the
    output time O_ij of docs/cluster.md, to the bit.
    """
    if steps <= 0:
        return 0.0
    n = sequences
    compute = n * decode_compute

    def compute_bound(s: int) -> bool:
        return compute > decode_base + decode_per_context * (contexts + n * s)

    bound = 0  # the compute-bound iterations: a prefix of the steps
    if compute_bound(0):
        if decode_per_context == 0:
            bound = steps
        else:  # the estimate, corrected against rounding by the exact test
            excess = (compute - decode_base - decode_per_context * contexts) / (decode_per_context * n)
            bound = min(steps, max(1, math.ceil(excess)))
            while bound > 1 and not compute_bound(bound - 1):
                bound -= 1
            while bound < steps and compute_bound(bound):
                bound += 1
    rest = steps - bound
    start = contexts + n * bound
    memory = rest * decode_base + decode_per_context * (rest * start + n * rest * (rest - 1) // 2)
    return bound * compute + memory
