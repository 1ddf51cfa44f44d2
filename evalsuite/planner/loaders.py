"""Turn a :class:`~evalsuite.planner.ladder.Plan` into a loaded model.

One function per family of strategies; bitsandbytes and DeepSpeed are imported only when their strategy
runs, so this module imports on a CPU machine without them. The GPU cap is enforced before loading;
when a load still runs out of memory the planner steps one rung down and says so in the plan's notes.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import socket
from pathlib import Path
from typing import Any

from evalsuite.devices import free_accelerator_memory, is_out_of_memory
from evalsuite.errors import EvalsuiteError
from evalsuite.models.options import LoadingOptions
from evalsuite.models.registry import ModelSpec
from evalsuite.planner import ladder as L
from evalsuite.planner.capacity import Capacity, detect_capacity, enforce_gpu_cap
from evalsuite.planner.ladder import Plan, PlanRequest, step_down
from evalsuite.planner.planning import (
    DEFAULT_BATCH,
    DEFAULT_NEW_TOKENS,
    DEFAULT_PROMPT_LEN,
    build_request,
    plan_request,
)
from evalsuite.planner.source import resolve_source


def _torch_dtype(name: str):
    import torch

    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[name]


def gpu_dtype(loading: LoadingOptions, spec: ModelSpec | None = None) -> str:
    """What the GPU strategies load the weights in: the user's --dtype (float32 too: asked for, it is what
    runs), the registry's, then bf16 where the GPU has it (float16 where it would be emulated)."""
    import torch

    wanted = loading.dtype or (spec.dtype if spec is not None else None)
    old_gpu = torch.cuda.is_available() and not torch.cuda.is_bf16_supported()  # V100 and older
    if wanted in ("float16", "float32"):
        return wanted
    return "float16" if old_gpu else "bfloat16"


def load_planned(model_path_or_id: str, spec: ModelSpec | None, loading: LoadingOptions, *,
                 batch_size: int | None = None, max_new_tokens: int | None = None, seq_len: int | None = None,
                 prompt_len: int = DEFAULT_PROMPT_LEN, capacity: Capacity | None = None) -> tuple[Any, Plan]:
    """Plan and load ``model_path_or_id``; returns ``(model, plan)`` with the plan ready for the run record.

    ``loading`` gives the user's placement, device, dtype and trust; ``max_new_tokens`` sizes the KV cache
    budget past the prompt (default 512) and ``batch_size`` the batch (default 8).
    """
    import torch

    cpu_only = loading.device == "cpu" or not torch.cuda.is_available()
    if capacity is None:
        capacity = detect_capacity(loading.gpu_memory, loading.cpu_memory, loading.offload_dir)
        if cpu_only:
            capacity = Capacity(cpu=capacity.cpu, disk=capacity.disk, offload_dir=capacity.offload_dir)
    source = resolve_source(model_path_or_id, spec)
    if loading.trust_remote_code:
        source = dataclasses.replace(source, trust_remote_code=True)
    new_tokens = max_new_tokens or DEFAULT_NEW_TOKENS
    request = build_request(source, capacity, batch_size or DEFAULT_BATCH,
                            seq_len or prompt_len + new_tokens, prompt_len, gpu_dtype(loading, spec))
    plan = plan_request(request, loading.strategy)
    cap = None if cpu_only else enforce_gpu_cap(capacity.gpu_cap)
    if cap is not None:
        plan.notes.extend(cap.notes)
    try:
        model, plan = _load_stepping_down(source, plan, request)
    except BaseException:
        if cap is not None:
            cap.release()  # the next model of the command must not inherit this one's cap
        raise  # what the failed load left is freed once its traceback is gone (the run's model loop)
    plan.gpu_cap = cap  # released with the model (LoadedModel.release)
    return model, plan


def _load_stepping_down(source: Any, plan: Plan, request: PlanRequest) -> tuple[Any, Plan]:
    """Load ``plan``; on out of memory, step one rung down and load again (a forced strategy stops instead)."""
    while True:
        try:
            return _load(source.model_id, plan, request, source.trust_remote_code, source.revision), plan
        except Exception as exc:  # noqa: BLE001 - only out-of-memory is handled, the rest re-raised
            if not is_out_of_memory(exc):
                raise
            why = f"ran out of GPU memory while loading ({str(exc).splitlines()[0][:160]})"
        # outside the handler: its traceback (and the half-loaded weights its frames hold) is gone now
        free_accelerator_memory()
        if plan.forced:
            raise EvalsuiteError(f"{plan.model}: forced strategy {plan.strategy} {why}; "
                                 f"drop --strategy to let the planner step down")
        plan = step_down(plan, request, why)


def _load(model_id: str, plan: Plan, request: PlanRequest, trust_remote_code: bool,
          revision: str | None = None) -> Any:
    loader = {
        L.GPU: _load_transformers, L.MULTI_GPU: _load_transformers, L.CPU_OFFLOAD: _load_transformers,
        L.CPU: _load_transformers, L.INT8: _load_bitsandbytes, L.NF4: _load_bitsandbytes,
        L.ZERO_INFERENCE: _load_zero_inference, L.DS_INFERENCE: _load_ds_inference,
    }[plan.strategy]
    # --revision reaches every strategy's from_pretrained (they all take transformers' hub arguments)
    model = loader(model_id, plan, request, trust_remote_code, **({"revision": revision} if revision else {}))
    model.eval()
    return model


def transformers_kwargs(plan: Plan, request: PlanRequest) -> dict[str, Any]:
    """from_pretrained keyword arguments for the plain-transformers strategies (gpu, multi-gpu, offload, cpu)."""
    kwargs: dict[str, Any] = {"dtype": _torch_dtype(plan.dtype if plan.dtype in ("bfloat16", "float16", "float32")
                                                    else request.gpu_dtype)}
    if plan.strategy == L.GPU:
        kwargs["device_map"] = {"": plan.main_gpu}
    elif plan.strategy in (L.MULTI_GPU, L.CPU_OFFLOAD):
        device_map: dict[str, Any] | str | None = plan.device_map
        if device_map is None:  # forced although it does not fit: let accelerate place what it can
            max_memory: dict[Any, Any] = {i: g for i, g in enumerate(plan.capacity.gpus)}
            if plan.strategy == L.CPU_OFFLOAD:
                max_memory["cpu"] = plan.capacity.cpu
            kwargs["max_memory"] = max_memory
            device_map = "auto"
        kwargs["device_map"] = device_map
        if isinstance(device_map, dict) and "disk" in device_map.values() or plan.capacity.offload_dir:
            if not plan.capacity.offload_dir:
                raise EvalsuiteError("the plan offloads to disk but no --offload-dir was given")
            Path(plan.capacity.offload_dir).mkdir(parents=True, exist_ok=True)
            kwargs["offload_folder"] = plan.capacity.offload_dir
    elif plan.strategy == L.CPU:
        kwargs["device_map"] = plan.device_map or {"": "cpu"}
        if "disk" in kwargs["device_map"].values():
            if not plan.capacity.offload_dir:
                raise EvalsuiteError("the plan offloads to disk but no --offload-dir was given")
            Path(plan.capacity.offload_dir).mkdir(parents=True, exist_ok=True)
            kwargs["offload_folder"] = plan.capacity.offload_dir
    return kwargs


def _load_transformers(model_id: str, plan: Plan, request: PlanRequest, trust_remote_code: bool,
                       **hub: Any) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(model_id, trust_remote_code=trust_remote_code,
                                                **transformers_kwargs(plan, request), **hub)


def _load_bitsandbytes(model_id: str, plan: Plan, request: PlanRequest, trust_remote_code: bool,
                       **hub: Any) -> Any:
    if importlib.util.find_spec("bitsandbytes") is None:
        raise EvalsuiteError(f"strategy {plan.strategy} needs bitsandbytes: pip install 'evalsuite[quant]'")
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    compute = _torch_dtype(request.gpu_dtype)
    if plan.strategy == L.INT8:
        quantization = BitsAndBytesConfig(load_in_8bit=True)
    else:
        quantization = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                          bnb_4bit_compute_dtype=compute)
    return AutoModelForCausalLM.from_pretrained(model_id, quantization_config=quantization, dtype=compute,
                                                device_map={"": plan.main_gpu},
                                                trust_remote_code=trust_remote_code, **hub)


# -- DeepSpeed ------------------------------------------------------------------------------------------

def prepare_deepspeed_environment() -> list[str]:
    """Fix what breaks DeepSpeed before it is imported; returns notes for the plan.

    * ``TORCH_CUDA_ARCH_LIST`` entries with a suffix (``9.0a``, ``9.0+PTX``) crash DeepSpeed's JIT op
      build (ValueError parsing ``0a``); the suffix-free list for the visible GPUs works.
    * A single process still needs the torch.distributed rendezvous variables.
    """
    import torch

    notes = []
    arch = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if torch.cuda.is_available():
        wanted = sorted({"{}.{}".format(*torch.cuda.get_device_capability(i))
                         for i in range(torch.cuda.device_count())})
        fixed = ";".join(wanted)
        if arch != fixed:
            os.environ["TORCH_CUDA_ARCH_LIST"] = fixed
            notes.append(f"TORCH_CUDA_ARCH_LIST set to {fixed!r} for DeepSpeed's JIT build (was {arch!r})")
    defaults = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    if "MASTER_PORT" not in os.environ:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(sock.getsockname()[1])
    return notes


def _import_deepspeed(plan: Plan):
    plan.notes.extend(prepare_deepspeed_environment())
    try:
        import deepspeed
    except ImportError:
        raise EvalsuiteError(f"strategy {plan.strategy} needs DeepSpeed: pip install 'evalsuite[deepspeed]'") from None
    import torch.distributed

    if not torch.distributed.is_initialized():
        deepspeed.init_distributed(dist_backend="nccl", verbose=False)
    return deepspeed


def zero_inference_config(plan: Plan, hidden_size: int) -> dict[str, Any]:
    """ZeRO stage 3 with parameter offload to pinned CPU RAM, or NVMe under --offload-dir."""
    if plan.offload_to == "nvme":
        offload = {"device": "nvme", "nvme_path": plan.capacity.offload_dir, "pin_memory": True,
                   "buffer_count": 5, "buffer_size": max(int(1e8), 2 * plan.shape.block_params)}
    else:
        offload = {"device": "cpu", "pin_memory": True}
    half = plan.dtype
    return {
        "fp16": {"enabled": half == "float16"},
        "bf16": {"enabled": half == "bfloat16"},
        "zero_optimization": {
            "stage": 3, "offload_param": offload, "overlap_comm": True,
            "stage3_prefetch_bucket_size": int(0.9 * hidden_size * hidden_size),
            "stage3_param_persistence_threshold": 10 * hidden_size,
            # DeepSpeed's "memory efficient" linear (on by default) replaces torch.nn.functional.linear for the
            # whole process, for good, with matmul-then-add: a training-memory trick that changes every linear's
            # rounding (float32 greedy tokens then differ from the same model whole on the GPU) and would reach
            # every later model of the command.
            "memory_efficient_linear": False,
        },
        "train_micro_batch_size_per_gpu": 1, "steps_per_print": 10**9, "wall_clock_breakdown": False,
    }


def _load_zero_inference(model_id: str, plan: Plan, request: PlanRequest, trust_remote_code: bool,
                         **hub: Any) -> Any:
    deepspeed = _import_deepspeed(plan)
    from transformers import AutoModelForCausalLM
    from transformers.integrations.deepspeed import HfDeepSpeedConfig

    if plan.offload_to == "nvme":
        if not plan.capacity.offload_dir:
            raise EvalsuiteError("ZeRO-Inference to NVMe needs --offload-dir")
        Path(plan.capacity.offload_dir).mkdir(parents=True, exist_ok=True)
    import torch.nn.functional

    config = zero_inference_config(plan, plan.shape.hidden_size)
    linear = torch.nn.functional.linear
    keep_alive = HfDeepSpeedConfig(config)  # must exist while from_pretrained runs: it switches on zero.Init
    try:
        model = AutoModelForCausalLM.from_pretrained(model_id, dtype=_torch_dtype(plan.dtype),
                                                     trust_remote_code=trust_remote_code, **hub)
        engine = deepspeed.initialize(model=model, config_params=config)[0]
    finally:  # whatever DeepSpeed's version does with the setting above, the process keeps torch's own linear
        torch.nn.functional.linear = linear
    engine.module.eval()
    engine.module._evalsuite_ds_config = keep_alive
    return engine.module


DS_INFERENCE_MAX_BATCH = 4  # kernel injection failed at batch 8 (CUBLAS_STATUS_EXECUTION_FAILED) on the reference GPU


def _load_ds_inference(model_id: str, plan: Plan, request: PlanRequest, trust_remote_code: bool,
                       **hub: Any) -> Any:
    deepspeed = _import_deepspeed(plan)
    import torch
    from transformers import AutoModelForCausalLM

    plan.batch_limit = DS_INFERENCE_MAX_BATCH
    plan.notes.append(f"DeepSpeed-Inference: batches above {DS_INFERENCE_MAX_BATCH} crashed its kernels on an H100 "
                      f"(CUBLAS_STATUS_EXECUTION_FAILED, then illegal memory access); generating in batches of at "
                      f"most {DS_INFERENCE_MAX_BATCH}")
    # Loaded in host RAM: kernel injection builds fused copies of every layer's weights while the originals
    # still exist, which on the GPU needs twice the model (it ran out of memory under a 16 GiB cap on an
    # reference GPU); from the host, DeepSpeed moves the injected model onto the GPU once.
    model = AutoModelForCausalLM.from_pretrained(model_id, dtype=torch.float16,
                                                 trust_remote_code=trust_remote_code, **hub)
    engine = deepspeed.init_inference(model, tensor_parallel={"tp_size": 1},  # one GPU per process (ladder.py)
                                      dtype=torch.float16, replace_with_kernel_inject=True,
                                      max_out_tokens=plan.budget.seq_len)
    return engine.module


__all__ = ["gpu_dtype", "load_planned", "prepare_deepspeed_environment",
           "transformers_kwargs", "zero_inference_config"]
