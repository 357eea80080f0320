# SPDX-License-Identifier: BSD-3-Clause
"""How the tables and figures name the records of h200.json: a (model,
routing) pair as "Mixtral-8x7B, uniform", "DeepSeek-V3, prefill trace"."""

MODEL_NAMES = {"mixtral-8x7b": "Mixtral-8x7B", "qwen2-57b": "Qwen2-57B",
               "deepseek-v3": "DeepSeek-V3", "gpt-oss-20b": "GPT-OSS-20B"}
MODEL_ORDER = ["mixtral-8x7b", "qwen2-57b", "deepseek-v3", "gpt-oss-20b"]


def routing_name(routing):
    if routing.startswith("trace:"):  # trace:deepseek-v3-prefill4096-sampled -> prefill trace
        kind = next((k for k in ("prefill", "decode") if k in routing), "")
        return f"{kind} trace".strip()
    return routing.replace("zipf", "Zipf ")


def title(key):
    """The name of the (model, routing) pair key."""
    return f"{MODEL_NAMES.get(key[0], key[0])}, {routing_name(key[1])}"
